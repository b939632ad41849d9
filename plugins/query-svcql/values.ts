/**
 * Value semantics shared by `where`, `in`, `sort`, `by`, `dedup` and the aggregates: numbers and
 * decimal-literal strings are numeric; two numeric sides compare as numbers, anything else by
 * its JS `String()` form in UTF-16 code units. `_timestamp` is a bigint (exact nanoseconds).
 */
import type { Cell } from './table.js';

export type Value = string | number | boolean | bigint | null;

const DECIMAL = /^-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/** The numeric value of v, or undefined when v is not numeric. */
export function toNumber(v: Value): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') return v.length > 0 && v.length < 400 && DECIMAL.test(v) ? Number(v) : undefined;
  if (typeof v === 'bigint') return Number(v);
  return undefined;
}

export function stringForm(v: Exclude<Value, null>): string {
  return typeof v === 'string' ? v : String(v);
}

/** Exact comparison when a bigint timestamp meets an integer. */
function compareBig(a: bigint, b: Value): number | undefined {
  let bb: bigint | undefined;
  if (typeof b === 'bigint') bb = b;
  else if (typeof b === 'number' && Number.isInteger(b)) bb = BigInt(b);
  else if (typeof b === 'string' && /^-?[0-9]+$/.test(b)) bb = BigInt(b);
  if (bb === undefined) return undefined;
  return a < bb ? -1 : a > bb ? 1 : 0;
}

/** Three-way comparison of two non-null values (numeric when both are numeric). */
export function compareValues(a: Exclude<Value, null>, b: Exclude<Value, null>): number {
  if (typeof a === 'bigint') {
    const c = compareBig(a, b);
    if (c !== undefined) return c;
  } else if (typeof b === 'bigint') {
    const c = compareBig(b, a);
    if (c !== undefined) return -c;
  }
  const x = toNumber(a);
  if (x !== undefined) {
    const y = toNumber(b);
    if (y !== undefined) return x < y ? -1 : x > y ? 1 : 0;
  }
  const sa = stringForm(a);
  const sb = stringForm(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/** Ascending order with missing (null) last. */
export function compareNullsLast(a: Value, b: Value): number {
  if (a === null) return b === null ? 0 : 1;
  if (b === null) return -1;
  return compareValues(a, b);
}

/** A string identifying v's equality class (grouping, distinct counts, dedup). */
export function valueKey(v: Value): string {
  if (v === null) return '\u0000';
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? 'n' + Number(v) : 'n' + v.toString();
  const n = toNumber(v);
  if (n !== undefined) return 'n' + n;
  return 's' + stringForm(v);
}

/** A value as a result cell: bigints as decimal strings, non-finite numbers as null. */
export function toCell(v: Value): Cell {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' && !Number.isFinite(v)) return null;
  return v;
}
