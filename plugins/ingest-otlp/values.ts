/**
 * OTLP common values (AnyValue, KeyValue, 64-bit integers as protobufjs decodes them) turned
 * into the plain values of kernel/models.ts.
 */
import type { AttributeValue, Attributes } from '../../kernel/models.js';

/** A protobufjs 64-bit integer: a Long object, or a number when small. */
export interface LongLike {
  low: number;
  high: number;
  unsigned?: boolean;
}
export type Int64 = LongLike | number | string | null | undefined;

export interface AnyValueMsg {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: Int64;
  doubleValue?: number | null;
  arrayValue?: { values?: AnyValueMsg[] | null } | null;
  kvlistValue?: { values?: KeyValueMsg[] | null } | null;
  bytesValue?: Uint8Array | null;
  /** protobufjs' oneof virtual field: the name of the set member. */
  value?: string;
}
export interface KeyValueMsg {
  key?: string | null;
  value?: AnyValueMsg | null;
}

/** Exact unsigned conversion (nanosecond timestamps exceed 2^53). */
export function toBigInt(v: Int64): bigint {
  if (v === null || v === undefined) return 0n;
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  if (typeof v === 'string') return BigInt(v);
  const lo = BigInt(v.low >>> 0);
  const hi = BigInt(v.high >>> 0);
  const u = (hi << 32n) | lo;
  return v.unsigned ? u : BigInt.asIntN(64, u);
}

/** Int64 as a JS number (signed; loses precision beyond 2^53 like every JSON consumer). */
export function toNumber(v: Int64): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'string') return Number(v);
  return v.unsigned ? (v.high >>> 0) * 4294967296 + (v.low >>> 0) : v.high * 4294967296 + (v.low >>> 0);
}

/** Nanoseconds since the epoch as Unix milliseconds. */
export function nanosToMs(v: Int64): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'object') return Math.floor(toNumber(v) / 1e6);
  return Math.floor(Number(v) / 1e6);
}

export function isZero(v: Int64): boolean {
  if (v === null || v === undefined) return true;
  if (typeof v === 'object') return v.low === 0 && v.high === 0;
  return Number(v) === 0;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
/** Lowercase hex; a JS loop beats Buffer#toString for 8- and 16-byte ids. */
export function hex(b: Uint8Array | null | undefined): string {
  if (!b || b.length === 0) return '';
  let s = '';
  for (let i = 0; i < b.length; i++) s += HEX[b[i]!];
  return s;
}

export function anyValue(v: AnyValueMsg | null | undefined): AttributeValue {
  if (!v) return null;
  // protobufjs puts field defaults on the prototype; the oneof's virtual `value` names the member set.
  const which = ownMember(v) ?? (typeof v.value === 'string' ? v.value : undefined);
  switch (which) {
    case 'stringValue':
      return v.stringValue ?? '';
    case 'boolValue':
      return v.boolValue ?? false;
    case 'intValue':
      return toNumber(v.intValue);
    case 'doubleValue':
      return v.doubleValue ?? 0;
    case 'arrayValue':
      return (v.arrayValue?.values ?? []).map(anyValue);
    case 'kvlistValue':
      return attributes(v.kvlistValue?.values);
    case 'bytesValue':
      return v.bytesValue ? Buffer.from(v.bytesValue).toString('base64') : '';
    default:
      return null;
  }
}

const MEMBERS = ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] as const;
function ownMember(v: AnyValueMsg): string | undefined {
  for (const m of MEMBERS) if (Object.prototype.hasOwnProperty.call(v, m) && v[m] !== null && v[m] !== undefined) return m;
  return undefined;
}

export function attributes(kvs: readonly KeyValueMsg[] | null | undefined): Attributes {
  const out: Record<string, AttributeValue> = {};
  if (!kvs) return out;
  for (const kv of kvs) if (kv.key) out[kv.key] = anyValue(kv.value);
  return out;
}

/** An attribute value as label/message text: scalars as-is, structures as JSON. */
export function valueText(v: AttributeValue | undefined): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}
