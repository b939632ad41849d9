/**
 * Packed integer chunks (ENC_PACKED), written by compaction when every timestamp and value of a
 * chunk is a safe integer (counters, integer gauges: most series of a scrape).
 *
 * Each of the two streams (timestamps, values) is a run of integers packed at one fixed bit
 * width ("frame of reference": x = d - base, 0 ≤ x < 2^w) plus a short list of exceptions that
 * do not fit (a counter reset, a missed scrape, the rare change of a gauge). Fixed widths decode
 * without a branch per sample, several times faster than Gorilla's variable-length codes, and
 * the width and base are chosen per chunk for the fewest bytes, which for regular scrapes is
 * also smaller: a constant gauge costs 0 bits per value, a 1 ms scrape jitter 1 bit per timestamp.
 *
 * Timestamps are either deltas (t[i] - t[i-1]) or, when smaller, residuals from a grid
 * (t[i] - t0 - i·step): a jittered regular scrape has residuals within the jitter, where its
 * deltas (and Gorilla's delta-of-deltas) span twice that. Values are deltas.
 *
 * Values that are decimals with at most MAX_SCALE digits after the point (1234.56, 0.25) are
 * stored as integers n with v = n / 10^k, only when that division gives back every value
 * bit-exactly (checked when encoding; IEEE division is correctly rounded, so decoding repeats it).
 *
 *   u8 flags (1 = grid timestamps, 2 = scaled values) | [u8 k] | svar t0 | [svar step] |
 *   stream(ts) | svar v0 | stream(vs) | bits
 *   stream = svar base | u8 width | uvar nExceptions | (uvar gap, svar d) * nExceptions
 *   bits   = the timestamps' x[1..n-1] then the values' x[1..n-1], `width` bits each,
 *            least significant bit first in little-endian 32-bit words
 *
 * An exception's slot in the bits holds 0 and is replaced by its d. Widths are at most 31.
 */

const MAX_WIDTH = 31;

// ---- encoder ---------------------------------------------------------------------------------

interface StreamPlan {
  base: number;
  width: number;
  bits: number;
}

const zz = (v: number): number => (v < 0 ? -2 * v - 1 : 2 * v);
const uvarLen = (a: number): number =>
  a < 0x80 ? 1 : a < 0x4000 ? 2 : a < 0x200000 ? 3 : a < 0x10000000 ? 4 : a < 2 ** 35 ? 5 : a < 2 ** 42 ? 6 : a < 2 ** 49 ? 7 : 8;

/** Scratch of planStream: the bits an element costs as an exception; bits by value width. */
let excBits = new Float64Array(512);
const costAbove = new Float64Array(34);

const SAMPLE = 64;
const sampled = new Float64Array(SAMPLE);

/**
 * Up to SAMPLE elements of `d[0, m)`, evenly spaced, in ascending order (a reused scratch):
 * enough to pick candidate bases, and sorting whole chunks took 40% of the encoding.
 */
function sortedSample(d: Float64Array, m: number): Float64Array {
  const k = Math.min(m, SAMPLE);
  for (let i = 0; i < k; i++) sampled[i] = d[Math.floor((i * m) / k)]!;
  return sampled.subarray(0, k).sort();
}

/**
 * The base and width with the fewest bits for `d[0, m)` (exceptions cost their varints: a
 * one-byte gap and the value), trying as bases the minimum and, from a sample, a low
 * percentile (an outlier below) and the most frequent value.
 */
function planStream(d: Float64Array, m: number): StreamPlan {
  if (m === 0) return { base: 0, width: 0, bits: 0 };
  const sorted = sortedSample(d, m);
  const k = sorted.length;
  if (excBits.length < m) excBits = new Float64Array(m * 2);
  for (let i = 0; i < m; i++) excBits[i] = 8 * (1 + uvarLen(zz(d[i]!)));
  let mode = sorted[0]!;
  let best = 0;
  for (let i = 0, run = 0; i < k; i++) {
    run = i > 0 && sorted[i] === sorted[i - 1] ? run + 1 : 1;
    if (run > best) {
      best = run;
      mode = sorted[i]!;
    }
  }
  let c0 = d[0]!;
  for (let i = 1; i < m; i++) if (d[i]! < c0) c0 = d[i]!;
  const c1 = sorted[Math.min(k - 1, 1)]!;
  let plan: StreamPlan = { base: 0, width: 0, bits: Infinity };
  for (let c = 0; c < 3; c++) {
    const base = c === 0 ? c0 : c === 1 ? c1 : mode;
    if ((c === 1 && base === c0) || (c === 2 && (base === c0 || base === c1))) continue;
    costAbove.fill(0);
    // Elements below the base or 32+ bits wide are exceptions at every width.
    let exc = 0;
    for (let i = 0; i < m; i++) {
      const y = d[i]! - base;
      if (y < 0 || y >= 2 ** 31) exc += excBits[i]!;
      else costAbove[32 - Math.clz32(y)]! += excBits[i]!;
    }
    // cost(w) = m·w + the exceptions (everything wider than w) + the base.
    const baseBits = 8 * uvarLen(zz(base));
    for (let w = 31; w >= 0; w--) {
      exc += costAbove[w + 1]!;
      const bits = m * w + exc + baseBits;
      if (bits < plan.bits) plan = { base, width: w, bits };
    }
  }
  return plan;
}

class Bytes {
  buf = new Uint8Array(64);
  pos = 0;
  u8(v: number): void {
    if (this.pos + 1 > this.buf.length) this.grow(1);
    this.buf[this.pos++] = v;
  }
  uvar(v: number): void {
    if (this.pos + 8 > this.buf.length) this.grow(8);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
  }
  svar(v: number): void {
    this.uvar(zz(v));
  }
  grow(n: number): void {
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    next.set(this.buf);
    this.buf = next;
  }
}

/** Writes base, width and exceptions of a stream; returns the packed x (exceptions as 0). */
function writeStream(out: Bytes, d: Float64Array, m: number, plan: StreamPlan, xs: Uint32Array): void {
  out.svar(plan.base);
  out.u8(plan.width);
  const lim = 2 ** plan.width;
  let n = 0;
  for (let i = 0; i < m; i++) {
    const y = d[i]! - plan.base;
    if (y < 0 || y >= lim) n++;
  }
  out.uvar(n);
  let last = -1;
  for (let i = 0; i < m; i++) {
    const y = d[i]! - plan.base;
    if (y < 0 || y >= lim) {
      out.uvar(i - last - 1);
      out.svar(d[i]!);
      last = i;
      xs[i] = 0;
    } else xs[i] = y;
  }
}

function packBits(words: Uint32Array, bitAt: number, xs: Uint32Array, m: number, w: number): number {
  if (w === 0) return bitAt;
  for (let i = 0; i < m; i++, bitAt += w) {
    const k = bitAt >>> 5;
    const o = bitAt & 31;
    const x = xs[i]!;
    words[k] = (words[k]! | (x << o)) >>> 0;
    if (o + w > 32) words[k + 1] = (words[k + 1]! | (x >>> (32 - o))) >>> 0;
  }
  return bitAt;
}

/** True when every timestamp in [from, to) is an integer that delta arithmetic keeps exact. */
export function safeIntTimes(ts: Float64Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const t = ts[i]!;
    if (!Number.isInteger(t) || Math.abs(t) > 2 ** 50) return false;
  }
  return true;
}

const MAX_SCALE = 9;
const POW10 = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];

/** Whether `v` is n / 10^k for a safe integer n, bit-exactly. */
function scalesTo(v: number, k: number): boolean {
  const n = Math.round(v * POW10[k]!);
  return Math.abs(n) <= 2 ** 50 && n / POW10[k]! === v && !Object.is(v, -0);
}

/**
 * The smallest k ≤ MAX_SCALE such that every value in [from, to) is a safe integer divided by
 * 10^k (0: integers), or -1 (NaN, ±Inf, -0, too many digits, too large): then the chunk is
 * a Gorilla chunk.
 */
export function decimalScale(vs: Float64Array, from: number, to: number): number {
  let k = 0;
  for (let i = from; i < to; i++) {
    const v = vs[i]!;
    while (!scalesTo(v, k)) if (++k > MAX_SCALE || v !== v) return -1;
  }
  // A value that needed fewer digits must also survive the larger scale.
  for (let i = from; i < to; i++) if (!scalesTo(vs[i]!, k)) return -1;
  return k;
}

/**
 * Encodes samples [from, to) (sorted, unique timestamps that are safe integers, see
 * safeIntTimes; values that are integers scaled by 10^-scale, see decimalScale).
 */
export function encodePackedChunk(ts: Float64Array, raw: Float64Array, from: number, to: number, scale = 0): Uint8Array {
  let vs = raw;
  if (scale > 0) {
    vs = new Float64Array(raw.length);
    for (let i = from; i < to; i++) vs[i] = Math.round(raw[i]! * POW10[scale]!);
  }
  const n = to - from;
  const m = Math.max(0, n - 1);
  const t0 = ts[from]!;
  const dt = new Float64Array(m);
  for (let i = 0; i < m; i++) dt[i] = ts[from + i + 1]! - ts[from + i]!;
  const deltaPlan = planStream(dt, m);
  // Grid: the median delta (of a sample) as the step.
  const step = m > 0 ? sortedSample(dt, m)[Math.min(m, SAMPLE) >> 1]! : 0;
  const rt = new Float64Array(m);
  for (let i = 0; i < m; i++) rt[i] = ts[from + i + 1]! - t0 - (i + 1) * step;
  const gridPlan = planStream(rt, m);
  const grid = m > 0 && gridPlan.bits + 8 * uvarLen(zz(step)) < deltaPlan.bits;
  const dv = new Float64Array(m);
  for (let i = 0; i < m; i++) dv[i] = vs[from + i + 1]! - vs[from + i]!;
  const vPlan = planStream(dv, m);

  const out = new Bytes();
  out.u8((grid ? 1 : 0) | (scale > 0 ? 2 : 0));
  if (scale > 0) out.u8(scale);
  out.svar(t0);
  if (grid) out.svar(step);
  const xt = new Uint32Array(m);
  const xv = new Uint32Array(m);
  const tPlan = grid ? gridPlan : deltaPlan;
  writeStream(out, grid ? rt : dt, m, tPlan, xt);
  out.svar(vs[from]!);
  writeStream(out, dv, m, vPlan, xv);
  const totalBits = m * (tPlan.width + vPlan.width);
  const words = new Uint32Array(((totalBits + 31) >>> 5) + 1);
  packBits(words, packBits(words, 0, xt, m, tPlan.width), xv, m, vPlan.width);
  const nBytes = (totalBits + 7) >>> 3;
  const res = new Uint8Array(out.pos + nBytes);
  res.set(out.buf.subarray(0, out.pos));
  for (let i = 0, p = out.pos; i < nBytes; i++, p++) res[p] = (words[i >>> 2]! >>> ((i & 3) * 8)) & 0xff;
  return res;
}

// ---- decoder ---------------------------------------------------------------------------------

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
let words = new Uint32Array(1024);

/**
 * The 32-bit words holding `buf[from, to)` and the bit position of `from` in them. On
 * little-endian machines that is a view over the chunk's whole underlying buffer (one per
 * buffer: chunks read from a segment file share the buffer of their read), so nothing is
 * copied; otherwise (or when the last bytes are not in a whole word) a copy.
 */
const view = { of: null as ArrayBufferLike | null, words: new Uint32Array(0) as Uint32Array<ArrayBufferLike>, bit: 0 };
function wordsOf(buf: Uint8Array, from: number, to: number): Uint32Array {
  if (LITTLE_ENDIAN) {
    if (buf.buffer !== view.of) {
      view.of = buf.buffer;
      view.words = new Uint32Array(buf.buffer, 0, buf.buffer.byteLength >>> 2);
    }
    // The decoders read only words holding the chunk's bits (and mask the rest), so the view
    // must cover the word of the last byte; a buffer's tail not in a whole word is copied.
    if (buf.byteOffset + to <= view.words.length * 4) {
      view.bit = (buf.byteOffset + from) * 8;
      return view.words;
    }
  }
  view.bit = 0;
  return loadWords(buf, from, to);
}

/**
 * Copies `buf[from, to)` into the word scratch (little-endian words), with one spare word.
 * Assembled from bytes: a subarray per chunk (to copy with set) costs more than this loop.
 */
function loadWords(buf: Uint8Array, from: number, to: number): Uint32Array {
  const nw = ((to - from + 3) >>> 2) + 1;
  if (nw > words.length) words = new Uint32Array(Math.max(nw, words.length * 2));
  const w = words;
  const full = from + ((to - from) & ~3);
  let k = 0;
  let p = from;
  for (; p < full; p += 4) w[k++] = buf[p]! | (buf[p + 1]! << 8) | (buf[p + 2]! << 16) | (buf[p + 3]! << 24);
  let last = 0;
  for (let s = 0; p < to; p++, s += 8) last |= buf[p]! << s;
  w[k] = last;
  return w;
}

/** Read position of the varint readers below (decoding is synchronous and not re-entrant). */
const cur = { p: 0 };

function ruvar(b: Uint8Array): number {
  let p = cur.p;
  let x = b[p++]!;
  if (x < 0x80) {
    cur.p = p;
    return x;
  }
  let v = x & 0x7f;
  let mul = 0x80;
  do {
    x = b[p++] ?? 0;
    v += (x & 0x7f) * mul;
    mul *= 0x80;
  } while (x >= 0x80 && mul < 2 ** 63);
  cur.p = p;
  return v;
}

function rsvar(b: Uint8Array): number {
  const u = ruvar(b);
  return u % 2 === 1 ? -(u + 1) / 2 : u / 2;
}

/** A stream's exceptions: positions (strictly increasing, < m) and values. */
class Exceptions {
  n = 0;
  pos = new Int32Array(64);
  val = new Float64Array(64);

  read(b: Uint8Array, m: number): void {
    // At most one per slot: a corrupt count must not allocate or loop without bound.
    const n = Math.min(ruvar(b), m);
    if (n > this.pos.length) {
      this.pos = new Int32Array(n);
      this.val = new Float64Array(n);
    }
    let i = -1;
    let k = 0;
    for (let j = 0; j < n; j++) {
      i += ruvar(b) + 1;
      const d = rsvar(b);
      if (i >= m) continue; // corrupt: ignored rather than written out of place
      this.pos[k] = i;
      this.val[k++] = d;
    }
    this.n = k;
  }
}
const tExc = new Exceptions();
const vExc = new Exceptions();

/**
 * Decodes one stream into `out[at .. at+m)` in a single pass: each sample is
 * `acc(i) + base + x[i]`, or `acc(i) + d` for an exception, where for a delta stream acc(i) is
 * the previous output (from `start`) and for a grid stream `start + (i+1)·step`.
 *
 * The bits are read a word at a time: the values wholly inside the current word are taken by
 * shifting it (the inner loops), a value straddling two words is assembled once per word.
 */
function decodeStream(
  W: Uint32Array,
  bit: number,
  w: number,
  m: number,
  base: number,
  start: number,
  step: number,
  grid: boolean,
  exc: Exceptions,
  out: Float64Array,
  at: number,
): void {
  let acc = start;
  let i = 0;
  let e = 0;
  // Exceptions at or past m are not reached (a stream decoded only in part).
  let stop = exc.n > 0 && exc.pos[0]! < m ? exc.pos[0]! : m;
  if (w === 0) {
    for (;;) {
      if (grid) for (; i < stop; i++) out[at + i] = (acc += step) + base;
      else for (; i < stop; i++) out[at + i] = acc += base;
      if (i >= m) return;
      out[at + i++] = grid ? (acc += step) + exc.val[e]! : (acc += exc.val[e]!);
      stop = ++e < exc.n && exc.pos[e]! < m ? exc.pos[e]! : m;
    }
  }
  const mask = (1 << w) - 1;
  // `cur` holds the current word's bits not yet consumed, `o` how many were.
  let k = bit >>> 5;
  let o = bit & 31;
  // Kept as an int32 (`| 0`): a full uint32 word would make the optimizer deoptimize.
  let cur = (W[k]! >>> o) | 0;
  // Grid: the base folded into the accumulator (exact: everything here is a safe integer).
  if (grid) acc += base;
  while (i < m) {
    let end = i + (((32 - o) / w) | 0);
    if (end > stop) end = stop;
    o += (end - i) * w;
    if (grid) {
      for (; i < end; i++) {
        out[at + i] = (acc += step) + (cur & mask);
        cur >>>= w;
      }
    } else {
      for (; i < end; i++) {
        out[at + i] = acc += base + (cur & mask);
        cur >>>= w;
      }
    }
    if (i >= m) break;
    if (i === stop) {
      // An exception: its slot (w bits, possibly straddling) is skipped, its d used.
      out[at + i++] = grid ? (acc += step) - base + exc.val[e]! : (acc += exc.val[e]!);
      stop = ++e < exc.n && exc.pos[e]! < m ? exc.pos[e]! : m;
      o += w;
      if (o >= 32) {
        o -= 32;
        cur = (W[++k]! >>> o) | 0;
      } else cur >>>= w;
      continue;
    }
    if (o >= 32) {
      o -= 32;
      cur = (W[++k]! >>> o) | 0;
      continue;
    }
    // The value straddles this word and the next (here 0 < o < 32).
    const next = W[++k]!;
    const x = (cur | (next << (32 - o))) & mask;
    out[at + i++] = grid ? (acc += step) + x : (acc += base + x);
    o += w - 32;
    cur = (next >>> o) | 0;
  }
}

/**
 * Decodes a packed chunk of `count` samples into `ts`/`vs` from index `at`, keeping those
 * within [mint, maxt]. Returns the index after the last sample written.
 */
export function decodePackedChunk(
  buf: Uint8Array,
  count: number,
  ts: Float64Array,
  vs: Float64Array,
  at: number,
  mint = -Infinity,
  maxt = Infinity,
  from = 0,
  to = buf.length,
): number {
  if (count <= 0) return at;
  const m = count - 1;
  cur.p = from;
  const flags = buf[cur.p++]!;
  const grid = (flags & 1) !== 0;
  const scale = (flags & 2) !== 0 ? Math.min(buf[cur.p++]!, MAX_SCALE) : 0;
  const t0 = rsvar(buf);
  const step = grid ? rsvar(buf) : 0;
  const tBase = rsvar(buf);
  const tw = buf[cur.p++]! & 31;
  tExc.read(buf, m);
  const v0 = rsvar(buf);
  const vBase = rsvar(buf);
  const vw = buf[cur.p++]! & 31;
  vExc.read(buf, m);
  const W = wordsOf(buf, cur.p, to);
  const bit = view.bit;
  // Grid timestamps without exceptions are at least t0 + i·step + tBase, so samples from
  // index `lim` on are past maxt and need not be decoded (a short window ending in the chunk).
  let n = count;
  if (grid && tExc.n === 0 && step > 0 && maxt < t0 + m * step + tBase) {
    const lim = Math.floor((maxt - t0 - tBase) / step) + 1;
    n = lim < 1 ? 1 : lim < count ? lim : count;
  }
  ts[at] = t0;
  decodeStream(W, bit, tw, n - 1, tBase, t0, step, grid, tExc, ts, at + 1);
  vs[at] = v0;
  if (vw === 0 && vBase === 0 && vExc.n === 0) vs.fill(v0, at + 1, at + n);
  else decodeStream(W, bit + m * tw, vw, n - 1, vBase, v0, 0, false, vExc, vs, at + 1);
  if (scale > 0) {
    const p = POW10[scale]!;
    for (let i = at, end = at + n; i < end; i++) vs[i] = vs[i]! / p;
  }
  return trim(ts, vs, at, at + n, mint, maxt);
}

/** Keeps the samples of [at, end) within [mint, maxt], moved to `at`; returns the new end. */
function trim(ts: Float64Array, vs: Float64Array, at: number, end: number, mint: number, maxt: number): number {
  if (ts[at]! >= mint && ts[end - 1]! <= maxt) return end;
  let lo = at;
  while (lo < end && ts[lo]! < mint) lo++;
  let hi = end;
  while (hi > lo && ts[hi - 1]! > maxt) hi--;
  if (lo > at && hi > lo) {
    ts.copyWithin(at, lo, hi);
    vs.copyWithin(at, lo, hi);
  }
  return at + Math.max(0, hi - lo);
}
