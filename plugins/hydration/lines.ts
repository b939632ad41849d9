/**
 * Reading archive objects: gunzip, split into lines, and decode each line into an
 * {@link ArchivedLine}. A line that is not a JSON object with a numeric `timestampMs` (and, when
 * present, a string `message`, an object `labels` of scalars and an object `facets`) is
 * malformed: the worker counts and skips it. Empty lines are ignored.
 */
import { createGunzip } from 'node:zlib';
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import type { ArchivedLine } from '../../backends/archive-fs/layout.js';

/** Lines of a gzip-compressed object (multi-member gzip included), without the line break. */
export async function* gunzipLines(src: Readable): AsyncGenerator<string> {
  const gz = createGunzip();
  src.on('error', (e) => gz.destroy(e));
  src.pipe(gz);
  const dec = new StringDecoder('utf8');
  let rest = '';
  try {
    for await (const chunk of gz as AsyncIterable<Buffer>) {
      const text = rest + dec.write(chunk);
      let start = 0;
      for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
        yield stripCr(text.slice(start, nl));
        start = nl + 1;
      }
      rest = text.slice(start);
    }
    rest += dec.end();
    if (rest.length > 0) yield stripCr(rest);
  } finally {
    src.unpipe(gz);
    src.destroy();
    gz.destroy();
  }
}

const stripCr = (s: string) => (s.endsWith('\r') ? s.slice(0, -1) : s);

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Decodes one line; `undefined` = malformed. */
export function parseArchivedLine(text: string): ArchivedLine | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(v)) return undefined;
  const ts = v.timestampMs;
  if (typeof ts !== 'number' || !Number.isFinite(ts) || ts < 0) return undefined;
  const message = v.message ?? '';
  if (typeof message !== 'string') return undefined;
  const labels: Record<string, string> = {};
  if (v.labels !== undefined && v.labels !== null) {
    if (!isPlainObject(v.labels)) return undefined;
    for (const [k, x] of Object.entries(v.labels)) {
      if (typeof x === 'string') labels[k] = x;
      else if (typeof x === 'number' || typeof x === 'boolean') labels[k] = String(x);
      else if (x !== null) return undefined;
    }
  }
  const facets: Record<string, string | number | boolean> = {};
  if (v.facets !== undefined && v.facets !== null) {
    if (!isPlainObject(v.facets)) return undefined;
    for (const [k, x] of Object.entries(v.facets)) {
      // Only scalar facets exist in the record model; nested values are not facets.
      if (typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean') facets[k] = x;
    }
  }
  return { timestampMs: ts, message, labels, facets };
}

/** Exact nanoseconds of a (possibly fractional) millisecond timestamp. */
export function msToNs(ms: number): bigint {
  const whole = Math.floor(ms);
  return BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6));
}
