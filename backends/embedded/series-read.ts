/**
 * Reading one series back: decode chunks, overlay side samples, then overlay newer sources
 * (segments by generation, then the head). A later source wins a timestamp tie, which is how
 * out-of-order duplicates keep the last value.
 */
import type { FloatHistogram, Sample } from '../../kernel/models.js';
import { decodeChunk, decodeIntChunk, ENC_INT, ENC_PACKED } from './chunk.js';
import type { ChunkData } from './metric-segment.js';
import { decodePackedChunk } from './packed-chunk.js';

/** The decoder of a chunk's encoding (ENC_XOR when absent). */
const decoderOf = (enc: number | undefined) => (enc === ENC_PACKED ? decodePackedChunk : enc === ENC_INT ? decodeIntChunk : decodeChunk);

/** Decodes one chunk (its bytes: `data[off, off + len)`) into ts/vs from `at`; see decodeChunk. */
function decodeInto(c: ChunkData, ts: Float64Array, vs: Float64Array, at: number, mint: number, maxt: number): number {
  const from = c.off ?? 0;
  return decoderOf(c.enc)(c.data, c.count, ts, vs, at, mint, maxt, from, c.len === undefined ? c.data.length : from + c.len);
}

export interface Part {
  n: number;
  t: Float64Array;
  v: Float64Array;
  h?: (FloatHistogram | undefined)[];
  st?: Float64Array;
}

const EMPTY: Part = { n: 0, t: new Float64Array(0), v: new Float64Array(0) };

/** Index of the first sample with t >= x in a sorted side list. */
export function lowerBound(side: readonly Sample[], x: number): number {
  let lo = 0;
  let hi = side.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (side[mid]!.t < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Inserts keeping order; an equal timestamp is replaced (last write wins). */
export function insertSide(side: Sample[], s: Sample): void {
  const n = side.length;
  if (n === 0 || side[n - 1]!.t < s.t) {
    side.push(s);
    return;
  }
  const i = lowerBound(side, s.t);
  if (side[i]?.t === s.t) side[i] = s;
  else side.splice(i, 0, s);
}

export function readPart(chunks: readonly ChunkData[], side: readonly Sample[] | null, mint: number, maxt: number): Part {
  let total = 0;
  for (const c of chunks) total += c.count;
  let n = 0;
  let t: Float64Array = EMPTY.t;
  let v: Float64Array = EMPTY.v;
  if (total > 0) {
    t = new Float64Array(total);
    v = new Float64Array(total);
    for (const c of chunks) n = decodeInto(c, t, v, n, mint, maxt);
  }
  if (!side || side.length === 0) return { n, t, v };
  const lo = lowerBound(side, mint);
  let hi = lo;
  while (hi < side.length && side[hi]!.t <= maxt) hi++;
  if (hi === lo) return { n, t, v };
  let anyH = false;
  let anySt = false;
  for (let i = lo; i < hi; i++) {
    if (side[i]!.h) anyH = true;
    if (side[i]!.st !== undefined) anySt = true;
  }
  const cap = n + hi - lo;
  const ot = new Float64Array(cap);
  const ov = new Float64Array(cap);
  const oh = anyH ? new Array<FloatHistogram | undefined>(cap) : undefined;
  const ost = anySt ? new Float64Array(cap).fill(NaN) : undefined;
  let i = 0;
  let j = lo;
  let k = 0;
  while (i < n || j < hi) {
    const s = j < hi ? side[j]! : undefined;
    if (s === undefined || (i < n && t[i]! < s.t)) {
      ot[k] = t[i]!;
      ov[k] = v[i]!;
      i++;
    } else {
      if (i < n && t[i] === s.t) i++; // the side sample is newer
      ot[k] = s.t;
      ov[k] = s.v;
      if (oh) oh[k] = s.h;
      if (ost && s.st !== undefined) ost[k] = s.st;
      j++;
    }
    k++;
  }
  const out: Part = { n: k, t: ot, v: ov };
  if (oh) out.h = oh;
  if (ost) out.st = ost;
  return out;
}

/**
 * Decodes float chunks that are in time order and disjoint (the common case: no side samples,
 * sources that do not overlap) straight into the result, without the per-source arrays and the
 * merge of readPart + combineParts. The result is sized by the chunks' sample counts (exact
 * when the window covers them whole; otherwise a prefix of it is returned).
 */
export function decodeChunksExact(chunks: readonly ChunkData[], mint: number, maxt: number): Part {
  let total = 0;
  for (const c of chunks) total += c.count;
  if (total === 0) return EMPTY;
  // A long result gets arrays of its own (callers take the first `n` samples).
  if (total > BLOCK_SERIES_MAX) return readPart(chunks, null, mint, maxt);
  if (blockAt + total > blockT.length) newBlocks();
  // Decode straight into the shared blocks (both at the same index, which the decoders
  // expect) and hand out exactly the samples inside the window: a short window of a long
  // chunk takes only what it returns.
  const at = blockAt;
  let end = at;
  for (const c of chunks) end = decodeInto(c, blockT, blockV, end, mint, maxt);
  const n = end - at;
  if (n === 0) return EMPTY;
  blockAt = end;
  return { n, t: blockT.subarray(at, end), v: blockV.subarray(at, end) };
}

/**
 * Results are views into shared blocks of 512 KiB (timestamps and values in two parallel
 * blocks): one allocation per block instead of a typed array with its own backing store per
 * series (which cost more than a tenth of a day-long select, most of it in the garbage
 * collector). A block stays alive as long as any series read from it, which bounds what one
 * held series can pin to the block. Blocks are not zeroed: the decoders overwrite every
 * element handed out.
 */
const BLOCK_DOUBLES = 1 << 16;
const BLOCK_SERIES_MAX = BLOCK_DOUBLES >> 2;
let blockT = new Float64Array(0);
let blockV = new Float64Array(0);
let blockAt = 0;

function newBlocks(): void {
  const b = Buffer.allocUnsafeSlow(16 * BLOCK_DOUBLES);
  blockT = new Float64Array(b.buffer, b.byteOffset, BLOCK_DOUBLES);
  blockV = new Float64Array(b.buffer, b.byteOffset + 8 * BLOCK_DOUBLES, BLOCK_DOUBLES);
  blockAt = 0;
}

/** True when a sorted side list has a sample in [mint, maxt]. */
export function sideHasIn(side: readonly Sample[] | null, mint: number, maxt: number): boolean {
  if (side === null || side.length === 0) return false;
  const i = lowerBound(side, mint);
  return i < side.length && side[i]!.t <= maxt;
}

/** Combines parts given oldest first; on equal timestamps the later part wins. */
export function combineParts(parts: Part[]): Part {
  const ps = parts.filter((p) => p.n > 0);
  if (ps.length === 0) return EMPTY;
  if (ps.length === 1) return ps[0]!;
  let disjoint = true;
  for (let i = 1; i < ps.length; i++) if (ps[i]!.t[0]! <= ps[i - 1]!.t[ps[i - 1]!.n - 1]!) disjoint = false;
  let total = 0;
  let anyH = false;
  let anySt = false;
  for (const p of ps) {
    total += p.n;
    if (p.h) anyH = true;
    if (p.st) anySt = true;
  }
  const ot = new Float64Array(total);
  const ov = new Float64Array(total);
  const oh = anyH ? new Array<FloatHistogram | undefined>(total) : undefined;
  const ost = anySt ? new Float64Array(total).fill(NaN) : undefined;
  if (disjoint) {
    let k = 0;
    for (const p of ps) {
      ot.set(p.t.subarray(0, p.n), k);
      ov.set(p.v.subarray(0, p.n), k);
      if (oh && p.h) for (let i = 0; i < p.n; i++) oh[k + i] = p.h[i];
      if (ost && p.st) ost.set(p.st.subarray(0, p.n), k);
      k += p.n;
    }
    const out: Part = { n: k, t: ot, v: ov };
    if (oh) out.h = oh;
    if (ost) out.st = ost;
    return out;
  }
  // General case: order by (t, newer part first), keep the first of each timestamp.
  const refs: Array<[number, number, number]> = [];
  ps.forEach((p, pi) => {
    for (let i = 0; i < p.n; i++) refs.push([p.t[i]!, pi, i]);
  });
  refs.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let k = 0;
  let prev = NaN;
  for (const [tt, pi, i] of refs) {
    if (tt === prev) continue;
    prev = tt;
    const p = ps[pi]!;
    ot[k] = tt;
    ov[k] = p.v[i]!;
    if (oh) oh[k] = p.h?.[i];
    if (ost) ost[k] = p.st ? p.st[i]! : NaN;
    k++;
  }
  const out: Part = { n: k, t: ot, v: ov };
  if (oh) out.h = oh;
  if (ost) out.st = ost;
  return out;
}
