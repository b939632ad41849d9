/**
 * Native histogram trim operators (`h </ x` keeps the observations below x, `h >/ x` those
 * above). Bucket counts are interpolated at the cutoff the way histogram_fraction does:
 * exponentially inside exponential buckets, linearly inside the zero bucket and custom buckets.
 * Count and sum are recomputed from the kept buckets (each bucket's observations placed at the
 * midpoint of its kept part: geometric for exponential buckets); an operation that removes
 * nothing returns the histogram unchanged.
 */
import type { FloatHistogram } from '../../../kernel/models.js';
import { bucketLower, bucketUpper, CUSTOM_SCHEMA } from './histogram.js';

type Interp = 'exp' | 'lin';

interface Kept {
  n: number;
  rep: number;
}
const kept: Kept = { n: 0, rep: 0 };

function representative(a: number, b: number, interp: Interp): number {
  if (a === -Infinity) return b;
  if (b === Infinity) return a;
  if (interp === 'exp') return a < 0 ? -Math.sqrt(a * b) : Math.sqrt(a * b);
  return (a + b) / 2;
}

/** Fraction of [lo, hi] that lies in [a, b] ⊆ [lo, hi]. */
function fraction(lo: number, hi: number, a: number, b: number, interp: Interp): number {
  if (interp === 'exp') {
    if (lo < 0) return Math.log(a / b) / Math.log(lo / hi);
    return Math.log(b / a) / Math.log(hi / lo);
  }
  return (b - a) / (hi - lo);
}

/** How much of bucket [lo, hi] (n observations) survives the trim, and where it sits. */
function keep(lo: number, hi: number, n: number, c: number, below: boolean, interp: Interp): Kept {
  if (below) {
    if (hi <= c) return set(n, representative(lo, hi, interp));
    if (c <= lo) return set(0, 0);
    if (lo === -Infinity) return hi === Infinity ? set(0, 0) : set(n, c);
    return set(n * fraction(lo, hi, lo, c, interp), representative(lo, c, interp));
  }
  if (lo >= c) return set(n, representative(lo, hi, interp));
  if (hi <= c) return set(0, 0);
  if (lo === -Infinity) return set(0, 0);
  if (hi === Infinity) return set(n, c);
  return set(n * fraction(lo, hi, c, hi, interp), representative(c, hi, interp));
}

function set(n: number, rep: number): Kept {
  kept.n = n;
  kept.rep = rep;
  return kept;
}

export function histTrim(h: FloatHistogram, c: number, below: boolean): FloatHistogram {
  if (c !== c) return h;
  let changed = false;
  let count = 0;
  let sum = 0;
  const account = (orig: number, k: Kept): number => {
    if (k.n !== orig) changed = true;
    count += k.n;
    if (k.n !== 0) sum += k.n * k.rep;
    return k.n;
  };
  const pos = h.positiveBuckets.slice();
  const neg = h.negativeBuckets.slice();
  let zeroCount = h.zeroCount;
  if (h.schema === CUSTOM_SCHEMA) {
    const cv = h.customValues ?? [];
    let idx = 0;
    let b = 0;
    for (const sp of h.positiveSpans) {
      idx += sp.offset;
      for (let i = 0; i < sp.length; i++, idx++, b++) {
        const n = pos[b]!;
        let lo = idx === 0 ? -Infinity : cv[idx - 1]!;
        const hi = idx < cv.length ? cv[idx]! : Infinity;
        // The lowest bucket of a histogram whose first bound is positive is assumed to hold
        // non-negative observations, as histogram_fraction does (for `>/` only with a cutoff >= 0).
        if (lo === -Infinity && hi === Infinity && Number.isFinite(c)) {
          // A single (-Inf, +Inf] bucket cannot be split at any finite cutoff.
          pos[b] = account(n, set(0, 0));
          continue;
        }
        if (lo === -Infinity && hi > 0 && (below || c >= 0)) lo = 0;
        pos[b] = account(n, keep(lo, hi, n, c, below, 'lin'));
      }
    }
  } else {
    const hasPos = h.positiveBuckets.some((x) => x !== 0);
    const hasNeg = h.negativeBuckets.some((x) => x !== 0);
    const zt = h.zeroThreshold;
    const zlo = hasPos && !hasNeg ? 0 : -zt;
    const zhi = hasNeg && !hasPos ? 0 : zt;
    zeroCount = account(h.zeroCount, keep(zlo, zhi, h.zeroCount, c, below, 'lin'));
    let idx = 0;
    let b = 0;
    for (const sp of h.positiveSpans) {
      idx += sp.offset;
      for (let i = 0; i < sp.length; i++, idx++, b++) {
        const n = pos[b]!;
        pos[b] = account(n, keep(bucketLower(h.schema, idx), bucketUpper(h.schema, idx), n, c, below, 'exp'));
      }
    }
    idx = 0;
    b = 0;
    for (const sp of h.negativeSpans) {
      idx += sp.offset;
      for (let i = 0; i < sp.length; i++, idx++, b++) {
        const n = neg[b]!;
        neg[b] = account(n, keep(-bucketUpper(h.schema, idx), -bucketLower(h.schema, idx), n, c, below, 'exp'));
      }
    }
  }
  if (!changed) return h;
  return {
    ...h,
    count,
    sum,
    zeroCount,
    positiveBuckets: pos,
    negativeBuckets: neg,
    positiveSpans: h.positiveSpans.map((s) => ({ ...s })),
    negativeSpans: h.negativeSpans.map((s) => ({ ...s })),
  };
}
