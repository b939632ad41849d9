/**
 * Runtime values of field expressions and their comparison rules. A missing attribute is nil:
 * every comparison with nil is false except `= nil` / `!= nil`. int, float and duration compare
 * numerically with each other (Tempo's numeric types); strings compare lexically; regexes are
 * RE2 and anchored (kernel/matchers.ts).
 */
import { compileAnchoredRegex } from '../../kernel/matchers.js';
import type { AttributeValue } from '../../kernel/models.js';
import type { ComparisonOp, SpanKindName, SpanStatus } from './ast.js';

export type Scalar =
  | { t: 'string'; v: string }
  | { t: 'int' | 'float' | 'duration'; v: number }
  | { t: 'bool'; v: boolean }
  | { t: 'status'; v: SpanStatus }
  | { t: 'kind'; v: SpanKindName };

/** A field's value; `undefined` is nil (absent). */
export type Value = Scalar | { t: 'array'; v: Scalar[] } | undefined;

export function fromAttribute(a: AttributeValue | undefined): Value {
  if (a === undefined || a === null) return undefined;
  switch (typeof a) {
    case 'string':
      return { t: 'string', v: a };
    case 'number':
      return { t: Number.isInteger(a) ? 'int' : 'float', v: a };
    case 'boolean':
      return { t: 'bool', v: a };
    default:
      if (Array.isArray(a)) {
        const v: Scalar[] = [];
        for (const x of a) {
          const e = fromAttribute(x);
          if (e && e.t !== 'array') v.push(e);
        }
        return { t: 'array', v };
      }
      return undefined; // kvlist values are not comparable in TraceQL
  }
}

const isNumeric = (x: Scalar | { t: 'array' }): x is { t: 'int' | 'float' | 'duration'; v: number } =>
  x.t === 'int' || x.t === 'float' || x.t === 'duration';

/** Three-way compare of two scalar values; undefined when their types do not compare. */
function order(a: Scalar, b: Scalar): number | undefined {
  if (isNumeric(a) && isNumeric(b)) return a.v < b.v ? -1 : a.v > b.v ? 1 : a.v === b.v ? 0 : undefined;
  if (a.t === 'string' && b.t === 'string') return a.v < b.v ? -1 : a.v > b.v ? 1 : 0;
  if (a.t === 'bool' && b.t === 'bool') return a.v === b.v ? 0 : undefined;
  // status and kind also compare with their names written as strings.
  if ((a.t === 'status' || a.t === 'kind') && (b.t === a.t || b.t === 'string')) return a.v === b.v ? 0 : undefined;
  if ((b.t === 'status' || b.t === 'kind') && a.t === 'string') return a.v === b.v ? 0 : undefined;
  return undefined;
}

function scalarCompare(op: ComparisonOp, a: Scalar, b: Scalar): boolean {
  if (op === '=~' || op === '!~') {
    if (a.t !== 'string' || b.t !== 'string') return false;
    const m = compileAnchoredRegex(b.v).matches(a.v);
    return op === '=~' ? m : !m;
  }
  const o = order(a, b);
  // Values of different types never compare, not even with != (as Tempo's typed storage columns).
  if (o === undefined) return false;
  switch (op) {
    case '=':
      return o === 0;
    case '!=':
      return o !== 0;
    case '<':
      return o < 0;
    case '<=':
      return o <= 0;
    case '>':
      return o > 0;
    case '>=':
      return o >= 0;
  }
}

/**
 * Applies a comparison. Arrays (OTLP array attributes) match when any element does for the
 * positive operators and when no element matches the positive form for `!=` / `!~`.
 */
export function compare(op: ComparisonOp, a: Value, b: Value): boolean {
  if (b === undefined || a === undefined) {
    if (op === '=') return a === undefined && b === undefined;
    if (op === '!=') return (a === undefined) !== (b === undefined);
    return false;
  }
  if (b.t === 'array') return false;
  if (a.t === 'array') {
    if (op === '!=') return !a.v.some((x) => scalarCompare('=', x, b));
    if (op === '!~') return a.v.length > 0 && !a.v.some((x) => scalarCompare('=~', x, b));
    return a.v.some((x) => scalarCompare(op, x, b));
  }
  return scalarCompare(op, a, b);
}

export function arithmetic(op: string, a: Value, b: Value): Value {
  if (a === undefined || b === undefined || !isNumeric(a) || !isNumeric(b)) return undefined;
  let v: number;
  switch (op) {
    case '+':
      v = a.v + b.v;
      break;
    case '-':
      v = a.v - b.v;
      break;
    case '*':
      v = a.v * b.v;
      break;
    case '/':
      if (b.v === 0) return undefined;
      v = a.v / b.v;
      break;
    case '%':
      if (b.v === 0) return undefined;
      v = a.v % b.v;
      break;
    case '^':
      v = a.v ** b.v;
      break;
    default:
      return undefined;
  }
  const t = a.t === 'duration' || b.t === 'duration' ? 'duration' : a.t === 'int' && b.t === 'int' && Number.isInteger(v) ? 'int' : 'float';
  return { t, v };
}

export function truthy(v: Value): boolean {
  return v !== undefined && v.t === 'bool' && v.v;
}

/** A key for grouping (`by()`), distinct per type and value. */
export function valueKey(v: Value): string {
  if (v === undefined) return 'nil';
  if (v.t === 'array') return 'a[' + v.v.map(valueKey).join(',') + ']';
  return `${v.t}:${String(v.v)}`;
}

/** The value as Tempo's autocomplete shows it (tag values). */
export function valueText(v: NonNullable<Value>): string {
  if (v.t === 'array') return JSON.stringify(v.v.map((x) => (x ? x.v : null)));
  if (v.t === 'duration') return formatDuration(v.v);
  return String(v.v);
}

/** Go-style duration text (`1.5s`, `250ms`), as Tempo prints durations. */
export function formatDuration(ns: number): string {
  if (ns === 0) return '0s';
  const abs = Math.abs(ns);
  const units: [number, string][] = [
    [3600e9, 'h'],
    [60e9, 'm'],
    [1e9, 's'],
    [1e6, 'ms'],
    [1e3, 'µs'],
    [1, 'ns'],
  ];
  for (const [mult, u] of units) if (abs >= mult) return `${+(ns / mult).toFixed(3)}${u}`;
  return `${ns}ns`;
}
