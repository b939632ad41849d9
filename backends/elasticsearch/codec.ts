/**
 * Encodings of records into Elasticsearch documents and back. Sample values travel as raw
 * little-endian float64 bytes (base64) because JSON cannot carry NaN payloads (the staleness
 * marker), -0 or infinities; nanosecond timestamps travel as decimal strings because they exceed
 * 2^53 and JavaScript's JSON would round them.
 */
import { createHash } from 'node:crypto';
import { pack, unpack } from 'msgpackr';
import type { FloatHistogram, Labels, Sample, Span } from '../../kernel/models.js';

export function f64ToBase64(a: Float64Array): string {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');
}

export function base64ToF64(s: string): Float64Array {
  const b = Buffer.from(s, 'base64');
  // Copy into an aligned buffer: Buffer slices may start at any offset.
  const out = new Float64Array(b.byteLength / 8);
  new Uint8Array(out.buffer).set(b);
  return out;
}

/** Canonical, parseable key of a label set: JSON of the sorted [name, value] pairs. */
export function labelsDocKey(labels: Labels): string {
  const names = Object.keys(labels).sort();
  return JSON.stringify(names.map((n) => [n, labels[n]]));
}

export function parseLabelsDocKey(lk: string): Labels {
  const out: Record<string, string> = {};
  for (const [n, v] of JSON.parse(lk) as [string, string][]) out[n] = v;
  return out;
}

/** Short stable id of a series (128 bits of SHA-1 over its canonical key). */
export function seriesId(lk: string): string {
  return createHash('sha1').update(lk).digest('base64url').slice(0, 22);
}

export function hashId(...parts: string[]): string {
  return createHash('sha1').update(parts.join('\u0000')).digest('base64url');
}

/** The payload of one chunk document: samples of one series appended together, within one day. */
export interface ChunkPayload {
  t: string;
  v: string;
  st?: string;
  h?: string;
}

export function encodeChunk(samples: readonly Sample[]): ChunkPayload {
  const n = samples.length;
  const t = new Float64Array(n);
  const v = new Float64Array(n);
  let st: Float64Array | undefined;
  let h: (FloatHistogram | null)[] | undefined;
  for (let i = 0; i < n; i++) {
    const s = samples[i]!;
    t[i] = s.t;
    v[i] = s.v;
    if (s.st !== undefined) {
      st ??= new Float64Array(n).fill(NaN);
      st[i] = s.st;
    }
    if (s.h) {
      h ??= new Array<FloatHistogram | null>(n).fill(null);
      h[i] = s.h;
    }
  }
  const out: ChunkPayload = { t: f64ToBase64(t), v: f64ToBase64(v) };
  if (st) out.st = f64ToBase64(st);
  // msgpack keeps float64 exactly (NaN, Infinity) where JSON would not.
  if (h) out.h = pack(h).toString('base64');
  return out;
}

export interface DecodedChunk {
  t: Float64Array;
  v: Float64Array;
  st?: Float64Array;
  h?: (FloatHistogram | null)[];
}

export function decodeChunk(p: ChunkPayload): DecodedChunk {
  const out: DecodedChunk = { t: base64ToF64(p.t), v: base64ToF64(p.v) };
  if (p.st) out.st = base64ToF64(p.st);
  if (p.h) out.h = unpack(Buffer.from(p.h, 'base64')) as (FloatHistogram | null)[];
  return out;
}

// ---- spans ---------------------------------------------------------------------------------

/** A span as stored: bigint nanoseconds as decimal strings. */
export type StoredSpan = Omit<Span, 'startTimeUnixNano' | 'endTimeUnixNano' | 'events'> & {
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  events: (Omit<Span['events'][number], 'timeUnixNano'> & { timeUnixNano: string })[];
};

export function encodeSpan(s: Span): StoredSpan {
  return {
    ...s,
    startTimeUnixNano: s.startTimeUnixNano.toString(),
    endTimeUnixNano: s.endTimeUnixNano.toString(),
    events: s.events.map((e) => ({ ...e, timeUnixNano: e.timeUnixNano.toString() })),
  };
}

export function decodeSpan(s: StoredSpan): Span {
  return {
    ...s,
    startTimeUnixNano: BigInt(s.startTimeUnixNano),
    endTimeUnixNano: BigInt(s.endTimeUnixNano),
    events: s.events.map((e) => ({ ...e, timeUnixNano: BigInt(e.timeUnixNano) })),
  };
}
