/**
 * Gorilla-style compressed chunks for float samples, as Prometheus' XOR chunks: the first
 * timestamp and value raw, then delta-of-delta timestamps in 1/14/17/20/64-bit buckets and
 * values XORed with their predecessor (leading/trailing-zero windows). Values are handled as
 * raw 64-bit patterns, so NaN payloads (staleness markers) survive bit-exact.
 */
const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer); // little-endian: u32[0] low word, u32[1] high word

const ctz32 = (x: number): number => 31 - Math.clz32(x & -x);

export class ChunkEncoder {
  buf: Uint8Array;
  bit = 0;
  count = 0;
  mint = 0;
  maxt = 0;
  private prevDelta = 0;
  private prevHi = 0;
  private prevLo = 0;
  private leading = -1;
  private trailing = 0;

  /**
   * 128 bytes: a head chunk of counters or gauges ends at 150–300 bytes, so it grows once instead
   * of three times from 32 (each growth a copy and a garbage buffer; remote write in process
   * went from ~390–440 to ~350–390 ns per sample), at the cost of up to 96 bytes for chunks of
   * near-constant series.
   */
  constructor(initialBytes = 128) {
    this.buf = new Uint8Array(initialBytes);
  }

  private grow(bits: number): void {
    const need = (this.bit + bits + 7) >>> 3;
    if (need <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < need) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf);
    this.buf = next;
  }

  /** Writes the low `n` (≤ 32) bits of `v`, most significant first. */
  private w(v: number, n: number): void {
    const buf = this.buf;
    let bit = this.bit;
    while (n > 0) {
      const free = 8 - (bit & 7);
      const take = n < free ? n : free;
      n -= take;
      buf[bit >>> 3]! |= ((v >>> n) & ((1 << take) - 1)) << (free - take);
      bit += take;
    }
    this.bit = bit;
  }

  append(t: number, v: number): void {
    // Worst case of one append: a 4 + 64-bit timestamp and a 2 + 5 + 6 + 64-bit value (145 bits).
    this.grow(4 + 64 + 2 + 5 + 6 + 64);
    f64[0] = v;
    const hi = u32[1]!;
    const lo = u32[0]!;
    if (this.count === 0) {
      f64[0] = t;
      this.w(u32[1]!, 32);
      this.w(u32[0]!, 32);
      this.w(hi, 32);
      this.w(lo, 32);
      this.mint = t;
    } else {
      const delta = t - this.maxt;
      const dod = delta - this.prevDelta;
      this.prevDelta = delta;
      if (dod === 0) this.w(0, 1);
      else if (dod >= -8192 && dod < 8192) {
        this.w(0b10, 2);
        this.w(dod & 0x3fff, 14);
      } else if (dod >= -65536 && dod < 65536) {
        this.w(0b110, 3);
        this.w(dod & 0x1ffff, 17);
      } else if (dod >= -524288 && dod < 524288) {
        this.w(0b1110, 4);
        this.w(dod & 0xfffff, 20);
      } else {
        this.w(0b1111, 4);
        f64[0] = dod;
        this.w(u32[1]!, 32);
        this.w(u32[0]!, 32);
      }
      const xh = (hi ^ this.prevHi) >>> 0;
      const xl = (lo ^ this.prevLo) >>> 0;
      if (xh === 0 && xl === 0) this.w(0, 1);
      else {
        let leading = xh !== 0 ? Math.clz32(xh) : 32 + Math.clz32(xl);
        const trailing = xl !== 0 ? ctz32(xl) : 32 + ctz32(xh);
        if (leading > 31) leading = 31;
        if (this.leading >= 0 && leading >= this.leading && trailing >= this.trailing) {
          this.w(0b10, 2);
          this.writeSig(xh, xl, this.trailing, 64 - this.leading - this.trailing);
        } else {
          const sig = 64 - leading - trailing;
          this.w(0b11, 2);
          this.w(leading, 5);
          this.w(sig & 63, 6);
          this.writeSig(xh, xl, trailing, sig);
          this.leading = leading;
          this.trailing = trailing;
        }
      }
    }
    this.prevHi = hi;
    this.prevLo = lo;
    this.maxt = t;
    this.count++;
  }

  private writeSig(h: number, l: number, shift: number, sig: number): void {
    if (shift >= 32) {
      l = h >>> (shift - 32);
      h = 0;
    } else if (shift > 0) {
      l = ((l >>> shift) | (h << (32 - shift))) >>> 0;
      h = h >>> shift;
    }
    if (sig > 32) {
      this.w(h, sig - 32);
      this.w(l, 32);
    } else this.w(l, sig);
  }

  /** The encoded bytes, trimmed (a copy). */
  bytes(): Uint8Array {
    return this.buf.slice(0, (this.bit + 7) >>> 3);
  }
}

/**
 * The decoders first copy a chunk into big-endian 32-bit words (plus two zero words of
 * padding), so reading any 32-bit window is two loads and a shift. They keep their bit position
 * in a local: closures or module-level state in the inner loop cost more than the decoding.
 */
let wordScratch = new Uint32Array(256);

function toWords(buf: Uint8Array, from: number, to: number): Uint32Array {
  const len = to - from;
  const nw = (len + 3) >>> 2;
  if (wordScratch.length < nw + 2) wordScratch = new Uint32Array(Math.max(nw + 2, wordScratch.length * 2));
  const w = wordScratch;
  const full = len >>> 2;
  for (let i = 0, p = from; i < full; i++, p += 4) w[i] = ((buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!) >>> 0;
  let last = 0;
  for (let p = from + full * 4, k = 0; k < 4; p++, k++) last = ((last << 8) | (p < to ? buf[p]! : 0)) >>> 0;
  w[full] = last;
  w[full + 1] = 0;
  w[full + 2] = 0;
  return w;
}

/**
 * The 32 bits starting at bit `pos` (past the end: zeros), as a signed int32: every int32 is a
 * small integer to V8, while a uint32 above 2^31 returned from a call that is not inlined is a
 * heap number (an allocation per call). Callers only store these bits in 32-bit arrays or
 * shift and mask them, which reads the same bits either way.
 */
function window32(w: Uint32Array, pos: number): number {
  const k = pos >>> 5;
  const o = pos & 31;
  return o === 0 ? w[k]! | 0 : (w[k]! << o) | (w[k + 1]! >>> (32 - o));
}

/** The bit at `pos`. */
function bitAt(w: Uint32Array, pos: number): number {
  return (w[pos >>> 5]! >>> (31 - (pos & 31))) & 1;
}

/** The `n` (1..32) bits at `pos`: unsigned for n < 32, the int32 of the bits for n = 32. */
function bitsAt(w: Uint32Array, pos: number, n: number): number {
  const x = window32(w, pos);
  return n === 32 ? x : x >>> (32 - n);
}

/** A 32-bit view of a value array, cached for the last array (readers reuse a scratch array). */
let lastVs: Float64Array | null = null;
let lastVw: Uint32Array = new Uint32Array(0);
function wordsOf(vs: Float64Array): Uint32Array {
  if (vs !== lastVs) {
    lastVs = vs;
    lastVw = new Uint32Array(vs.buffer, vs.byteOffset, vs.length * 2);
  }
  return lastVw;
}

/**
 * Decodes `count` samples of a chunk into `ts`/`vs` from index `at`, keeping those within
 * [mint, maxt]. Returns the index after the last sample written. The chunk's bytes are
 * `buf[from, to)` (chunks of a segment held in memory are read in place, without a view each).
 */
export function decodeChunk(
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
  // Values are written as raw words (little-endian, as u32/f64 above), skipping a conversion.
  const vw = wordsOf(vs);
  const w = toWords(buf, from, to);
  u32[1] = bitsAt(w, 0, 32);
  u32[0] = bitsAt(w, 32, 32);
  let t = f64[0]!;
  let hi = bitsAt(w, 64, 32);
  let lo = bitsAt(w, 96, 32);
  let pos = 128;
  let delta = 0;
  let leading = 0;
  let trailing = 0;
  for (let i = 0; i < count; i++) {
    if (i > 0) {
      // Timestamp: control prefix 0 / 10 / 110 / 1110 / 1111 (at most 4 bits, peeked at once).
      let dod: number;
      const ctl = bitAt(w, pos) === 0 ? 0 : window32(w, pos);
      if (ctl >>> 31 === 0) {
        dod = 0;
        pos += 1;
      } else if (((ctl >>> 30) & 1) === 0) {
        dod = bitsAt(w, pos + 2, 14);
        if (dod >= 8192) dod -= 16384;
        pos += 16;
      } else if (((ctl >>> 29) & 1) === 0) {
        dod = bitsAt(w, pos + 3, 17);
        if (dod >= 65536) dod -= 131072;
        pos += 20;
      } else if (((ctl >>> 28) & 1) === 0) {
        dod = bitsAt(w, pos + 4, 20);
        if (dod >= 524288) dod -= 1048576;
        pos += 24;
      } else {
        u32[1] = bitsAt(w, pos + 4, 32);
        u32[0] = bitsAt(w, pos + 36, 32);
        dod = f64[0]!;
        pos += 68;
      }
      delta += dod;
      t += delta;
      // Value: 0 (same) / 10 (reuse the leading/trailing window) / 11 + 5-bit leading + 6-bit length.
      const vctl = bitAt(w, pos) === 0 ? 0 : window32(w, pos);
      if (vctl >>> 31 === 0) pos += 1;
      else {
        if (((vctl >>> 30) & 1) === 1) {
          leading = (vctl >>> 25) & 31;
          let sig = (vctl >>> 19) & 63;
          if (sig === 0) sig = 64;
          trailing = 64 - leading - sig;
          pos += 13;
        } else pos += 2;
        const sig = 64 - leading - trailing;
        let xh = 0;
        let xl: number;
        if (sig > 32) {
          xh = bitsAt(w, pos, sig - 32);
          xl = bitsAt(w, pos + sig - 32, 32);
        } else xl = bitsAt(w, pos, sig);
        pos += sig;
        if (trailing >= 32) {
          xh = xl << (trailing - 32);
          xl = 0;
        } else if (trailing > 0) {
          xh = (xh << trailing) | (xl >>> (32 - trailing));
          xl = xl << trailing;
        }
        hi ^= xh;
        lo ^= xl;
      }
    }
    if (t < mint) continue;
    if (t > maxt) break;
    ts[at] = t;
    vw[2 * at] = lo;
    vw[2 * at + 1] = hi;
    at++;
  }
  return at;
}

/** Encoding tags of a chunk (kept in the segment index). */
export const ENC_XOR = 0;
export const ENC_INT = 1;
/** Packed integer chunks (packed-chunk.ts), written by compaction since segment format 3. */
export const ENC_PACKED = 2;

/**
 * Integer chunks (counters, integer gauges): timestamps as in XOR chunks, values as
 * delta-of-delta; small buckets first because scrape jitter and counter increments are small.
 * Written by compaction in segment format 2 (format 3 writes packed chunks instead, see
 * packed-chunk.ts); still decoded for format 2 files, and written by tests that make them.
 */
export function encodeIntChunk(ts: Float64Array, vs: Float64Array, from: number, to: number): Uint8Array {
  const w = new ChunkEncoder((to - from) * 2 + 32);
  const bits = w as unknown as { w(v: number, n: number): void; grow(n: number): void };
  let prevT = 0;
  let prevD = 0;
  let prevV = 0;
  let prevVD = 0;
  for (let i = from; i < to; i++) {
    bits.grow(64 * 3);
    const t = ts[i]!;
    const v = vs[i]!;
    if (i === from) {
      f64[0] = t;
      bits.w(u32[1]!, 32);
      bits.w(u32[0]!, 32);
      f64[0] = v;
      bits.w(u32[1]!, 32);
      bits.w(u32[0]!, 32);
    } else {
      const d = t - prevT;
      writeDod(bits, d - prevD, T_WIDTHS);
      prevD = d;
      const vd = v - prevV;
      writeDod(bits, vd - prevVD, V_WIDTHS);
      prevVD = vd;
    }
    prevT = t;
    prevV = v;
  }
  return w.bytes();
}

const T_WIDTHS = [4, 14, 20] as const;
const V_WIDTHS = [5, 12, 23] as const;

function writeDod(bits: { w(v: number, n: number): void }, dod: number, widths: readonly number[]): void {
  if (dod === 0) return bits.w(0, 1);
  for (let k = 0; k < widths.length; k++) {
    const n = widths[k]!;
    const half = 2 ** (n - 1);
    if (dod >= -half && dod < half) {
      bits.w((0b10 << k) | ((1 << k) - 1) << 1 >>> 0, k + 2);
      bits.w(dod < 0 ? dod + 2 ** n : dod, n);
      return;
    }
  }
  bits.w(0b1111, 4);
  f64[0] = dod;
  bits.w(u32[1]!, 32);
  bits.w(u32[0]!, 32);
}

/**
 * Bits used by a delta-of-delta of integer chunks (buckets 1 / 2+w0 / 3+w1 / 4+w2 / 4+64)
 * given the 32-bit window at its start.
 */
function intDodBits(ctl: number, w0: number, w1: number, w2: number): number {
  if (ctl >>> 31 === 0) return 1;
  if (((ctl >>> 30) & 1) === 0) return 2 + w0;
  if (((ctl >>> 29) & 1) === 0) return 3 + w1;
  if (((ctl >>> 28) & 1) === 0) return 4 + w2;
  return 68;
}

/** The delta-of-delta itself (see intDodBits). */
function intDod(w: Uint32Array, pos: number, ctl: number, len: number): number {
  if (len === 1) return 0;
  if (len === 68) {
    u32[1] = bitsAt(w, pos + 4, 32);
    u32[0] = bitsAt(w, pos + 36, 32);
    return f64[0]!;
  }
  const k = ((ctl >>> 30) & 1) === 0 ? 2 : ((ctl >>> 29) & 1) === 0 ? 3 : 4;
  const n = len - k;
  const x = bitsAt(w, pos + k, n);
  return x >= 1 << (n - 1) ? x - (1 << n) : x;
}

export function decodeIntChunk(
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
  const w = toWords(buf, from, to);
  u32[1] = bitsAt(w, 0, 32);
  u32[0] = bitsAt(w, 32, 32);
  let t = f64[0]!;
  u32[1] = bitsAt(w, 64, 32);
  u32[0] = bitsAt(w, 96, 32);
  let v = f64[0]!;
  let pos = 128;
  let d = 0;
  let vd = 0;
  for (let i = 0; i < count; i++) {
    if (i > 0) {
      const tc = bitAt(w, pos) === 0 ? 0 : window32(w, pos);
      const tl = intDodBits(tc, 4, 14, 20);
      d += intDod(w, pos, tc, tl);
      t += d;
      pos += tl;
      const vc = bitAt(w, pos) === 0 ? 0 : window32(w, pos);
      const vl = intDodBits(vc, 5, 12, 23);
      vd += intDod(w, pos, vc, vl);
      v += vd;
      pos += vl;
    }
    if (t < mint) continue;
    if (t > maxt) break;
    ts[at] = t;
    vs[at] = v;
    at++;
  }
  return at;
}
