/**
 * Argument checks shared by the log and event operations (GRAPHQL.md "Errors and limits").
 * Each throws an {@link InputError}; the field guard adds the component.
 */
import { InputError } from './errors.js';

export const MAX_QUERY_CHARS = 8192;
export const MIN_LIMIT = 1;
export const MAX_LIMIT = 1000;

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;

/**
 * Parses an ISO 8601 timestamp with an offset into Unix nanoseconds, exactly (fractions up to
 * nanoseconds are kept, which a JS Date would round to milliseconds).
 */
export function parseTime(value: unknown, argName: string): bigint {
  if (typeof value !== 'string') throw new InputError(`${argName}: expected an ISO 8601 time, got ${JSON.stringify(value)}`);
  const m = ISO.exec(value);
  if (!m) throw new InputError(`${argName}: invalid time "${value}", expected ISO 8601 with offset, e.g. 2025-11-22T10:00:00Z`);
  const [, y, mo, d, h, mi, s, frac, z, sign, oh, om] = m;
  const year = Number(y), month = Number(mo), day = Number(d), hour = Number(h), minute = Number(mi), second = Number(s);
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(ms);
  const valid =
    check.getUTCFullYear() === year &&
    check.getUTCMonth() === month - 1 &&
    check.getUTCDate() === day &&
    hour < 24 &&
    minute < 60 &&
    second < 60 &&
    (z !== undefined || (Number(oh) < 24 && Number(om) < 60));
  if (!valid) throw new InputError(`${argName}: invalid time "${value}"`);
  const offsetMin = z !== undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  const fracNs = frac ? BigInt(frac.padEnd(9, '0')) : 0n;
  return (BigInt(ms) - BigInt(offsetMin) * 60_000n) * 1_000_000n + fracNs;
}

export interface TimeRange {
  startNs: bigint;
  endNs: bigint;
}

/** [startTs, endTs); endTs must be after startTs. */
export function parseRange(startTs: unknown, endTs: unknown): TimeRange {
  const startNs = parseTime(startTs, 'startTs');
  const endNs = parseTime(endTs, 'endTs');
  if (endNs <= startNs) throw new InputError('endTs must be after startTs');
  return { startNs, endNs };
}

/** `limit` within 1..1000; `undefined`/null gives the default. */
export function checkLimit(value: unknown, dflt: number): number;
export function checkLimit(value: unknown, dflt: undefined): number | undefined;
export function checkLimit(value: unknown, dflt: number | undefined): number | undefined {
  if (value === undefined || value === null) return dflt;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < MIN_LIMIT || value > MAX_LIMIT) {
    throw new InputError(`limit must be between ${MIN_LIMIT} and ${MAX_LIMIT}`);
  }
  return value;
}

/** SvcQL and event queries are capped before parsing. */
export function checkQueryText(value: unknown): string {
  const text = typeof value === 'string' ? value : '';
  if (text.length > MAX_QUERY_CHARS) {
    throw new InputError(`query is ${text.length} characters long, maximum ${MAX_QUERY_CHARS}`, 'QUERY_TOO_LONG');
  }
  return text;
}

/** A cursor argument: null/undefined/'' mean "from the start". */
export function cursorArg(value: unknown): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw new InputError('invalid cursor');
  return value;
}
