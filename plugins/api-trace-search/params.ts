/** Query-string parsing of the trace-search API; every bad value is a 400 in plain text. */
import { badRequest } from '../../kernel/errors.js';

export interface TimeRange {
  startNs: bigint;
  endNs: bigint;
}

const ALL_TIME: TimeRange = { startNs: 0n, endNs: 0x7fffffffffffffffn };

function seconds(q: URLSearchParams, name: string): number | undefined {
  const raw = q.get(name);
  if (raw === null || raw === '') return undefined;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0) throw badRequest(`invalid ${name}: "${raw}" is not Unix seconds`);
  return v;
}

/**
 * start/end in Unix seconds. `end` covers its whole second, so a trace written "now" is found
 * by a search ending now (Tempo's block times are second-granular too).
 */
export function timeRange(q: URLSearchParams, required: boolean): TimeRange {
  const start = seconds(q, 'start');
  const end = seconds(q, 'end');
  if (start === undefined || end === undefined) {
    if (required || start !== undefined || end !== undefined) throw badRequest('invalid start/end: both start and end (Unix seconds) are required');
    return ALL_TIME;
  }
  if (end < start) throw badRequest('invalid start/end: end must not be before start');
  return { startNs: BigInt(Math.floor(start * 1e3)) * 1_000_000n, endNs: (BigInt(Math.floor(end)) + 1n) * 1_000_000_000n };
}

export function positiveInt(q: URLSearchParams, name: string, dflt: number, max: number): number {
  const raw = q.get(name);
  if (raw === null || raw === '') return dflt;
  if (!/^\d+$/.test(raw)) throw badRequest(`invalid ${name}: "${raw}" is not a non-negative integer`);
  const v = Number(raw);
  // Tempo reads 0 as "use the default".
  if (v === 0) return dflt;
  return Math.min(v, max);
}

/** A hex trace id of up to 32 digits, left-padded to 32 (Tempo accepts short ids the same way). */
export function traceIdParam(raw: string): string {
  const id = raw.trim().toLowerCase();
  if (!/^[0-9a-f]{1,32}$/.test(id)) throw badRequest(`invalid trace id "${raw}": expected up to 32 hex digits`);
  return id.padStart(32, '0');
}

/**
 * Tempo's pre-TraceQL search parameters (`tags` in logfmt, `minDuration`, `maxDuration`) as an
 * equivalent TraceQL query; undefined when none is given.
 */
export function legacySearchToTraceQL(q: URLSearchParams): string | undefined {
  const tags = q.get('tags');
  const minD = q.get('minDuration');
  const maxD = q.get('maxDuration');
  if (!tags && !minD && !maxD) return undefined;
  const conds: string[] = [];
  for (const [k, v] of parseLogfmt(tags ?? '')) {
    const key = /^[A-Za-z0-9_.\-/]+$/.test(k) ? k : JSON.stringify(k);
    if (k === 'name' || k === 'status') conds.push(k === 'status' ? `status = ${v === 'error' || v === 'ok' || v === 'unset' ? v : JSON.stringify(v)}` : `name = ${JSON.stringify(v)}`);
    else conds.push(`.${key} = ${JSON.stringify(v)}`);
  }
  const dur = /^\d+(\.\d+)?(ns|us|µs|ms|s|m|h)$/;
  if (minD) {
    if (!dur.test(minD)) throw badRequest(`invalid minDuration "${minD}"`);
    conds.push(`traceDuration >= ${minD}`);
  }
  if (maxD) {
    if (!dur.test(maxD)) throw badRequest(`invalid maxDuration "${maxD}"`);
    conds.push(`traceDuration <= ${maxD}`);
  }
  return `{ ${conds.join(' && ')} }`;
}

function parseLogfmt(s: string): [string, string][] {
  const out: [string, string][] = [];
  let i = 0;
  const read = (): string => {
    if (s[i] === '"') {
      let v = '';
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\' && i + 1 < s.length) i++;
        v += s[i++];
      }
      i++;
      return v;
    }
    const st = i;
    while (i < s.length && s[i] !== ' ' && s[i] !== '=') i++;
    return s.slice(st, i);
  };
  while (i < s.length) {
    while (s[i] === ' ') i++;
    if (i >= s.length) break;
    const k = read();
    if (s[i] !== '=') throw badRequest(`invalid tags: expected key=value (logfmt) near "${k}"`);
    i++;
    out.push([k, read()]);
  }
  return out;
}
