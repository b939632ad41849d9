/**
 * Extended range selectors (`anchored`, `smoothed`; Prometheus' promql-extended-range-selectors).
 *
 * The matrix selector already reads one lookback before the window (and, for `smoothed`, one
 * after it), so these functions only look one sample beyond the current window's indices: the
 * sliding-window evaluation over typed arrays stays as it is.
 *
 * - `anchored`: the last sample at or before the window start (within the lookback) is the left
 *   boundary value; the last sample in the window is the right one. No extrapolation.
 * - `smoothed`: boundary values are linearly interpolated between the samples around each
 *   boundary (counter-aware for rate/increase).
 */
import type { FloatHistogram } from '../../../kernel/models.js';
import type { Evaluator } from './engine.js';
import { histAddSub, histIsReset, histScale, CUSTOM_SCHEMA } from './histogram.js';

/** Functions each modifier may be used with (Prometheus' AnchoredSafeFunctions / SmoothedSafeFunctions). */
export const ANCHORED_FUNCS = ['changes', 'delta', 'increase', 'rate', 'resets'];
export const SMOOTHED_FUNCS = ['delta', 'increase', 'rate'];

export interface ExtWin {
  ft: Float64Array;
  fv: Float64Array;
  flo: number;
  fhi: number;
  ht: Float64Array;
  hh: FloatHistogram[];
  hlo: number;
  hhi: number;
  T: number;
  range: number;
  name: string;
  ext?: 'anchored' | 'smoothed';
  lookback: number;
}

export interface ExtCtx {
  ev: Evaluator;
  pos: { start: number };
}

type Out = number | FloatHistogram | undefined;

/** Index range [lo, hi) of the samples Prometheus' extended selector sees for this window. */
function view(ts: Float64Array, lo: number, hi: number, w: ExtWin): [number, number] {
  const rangeStart = w.T - w.range;
  if (lo > 0 && ts[lo - 1]! > rangeStart - w.lookback) lo--;
  if (w.ext === 'smoothed' && hi < ts.length && ts[hi]! <= w.T + w.lookback) hi++;
  return [lo, hi];
}

/** changes/resets over an anchored window: the anchor sample (float or histogram, whichever is later) is prepended. */
export function anchoredPoints(w: ExtWin): { t: number; v: number; h?: FloatHistogram; st?: number }[] | undefined {
  if (w.flo === w.fhi && w.hlo === w.hhi) return undefined;
  const minT = w.T - w.range - w.lookback;
  const fa = w.flo > 0 && w.ft[w.flo - 1]! > minT ? w.ft[w.flo - 1]! : -Infinity;
  const ha = w.hlo > 0 && w.ht[w.hlo - 1]! > minT ? w.ht[w.hlo - 1]! : -Infinity;
  const out: { t: number; v: number; h?: FloatHistogram }[] = [];
  if (fa > -Infinity && fa >= ha) out.push({ t: fa, v: w.fv[w.flo - 1]! });
  else if (ha > -Infinity) out.push({ t: ha, v: 0, h: w.hh[w.hlo - 1]! });
  let i = w.flo;
  let j = w.hlo;
  while (i < w.fhi || j < w.hhi) {
    if (j >= w.hhi || (i < w.fhi && w.ft[i]! <= w.ht[j]!)) {
      out.push({ t: w.ft[i]!, v: w.fv[i]! });
      i++;
    } else {
      out.push({ t: w.ht[j]!, v: 0, h: w.hh[j]! });
      j++;
    }
  }
  return out;
}

function interpolate(t1: number, y1: number, t2: number, y2: number, t: number, isCounter: boolean): number {
  if (isCounter && y2 < y1) y1 = 0;
  return y1 + ((y2 - y1) * (t - t1)) / (t2 - t1);
}

/** First index in [lo, end) whose timestamp satisfies pred, or end (Go's sort.Search). */
function search(ts: Float64Array, lo: number, end: number, pred: (t: number) => boolean): number {
  let i = lo;
  let j = end;
  while (i < j) {
    const h = (i + j) >>> 1;
    if (!pred(ts[h]!)) i = h + 1;
    else j = h;
  }
  return i;
}

/** rate/increase/delta with `anchored` or `smoothed`. */
export function extendedRate(w: ExtWin, c: ExtCtx, isCounter: boolean, isRate: boolean): Out {
  const [flo, fhi] = view(w.ft, w.flo, w.fhi, w);
  const [hlo, hhi] = view(w.ht, w.hlo, w.hhi, w);
  if (fhi > flo && hhi > hlo) {
    c.ev.warn(`encountered a mix of histograms and floats for metric name ${JSON.stringify(w.name)}`, c.pos);
    return undefined;
  }
  if (hhi > hlo) return extendedHistogramRate(w, c, hlo, hhi, isCounter, isRate);
  if (fhi === flo) return undefined;
  const f = w.ft;
  const v = w.fv;
  const rangeStart = w.T - w.range;
  const rangeEnd = w.T;
  const smoothed = w.ext === 'smoothed';
  let last = fhi - 1;
  let first = Math.max(flo, search(f, flo, last, (t) => t > rangeStart) - 1);
  if (smoothed) last = search(f, flo, last, (t) => t >= rangeEnd);
  if (f[last]! <= rangeStart) return undefined;
  if (smoothed && f[first]! > rangeEnd) return undefined;
  const left = smoothed && f[first]! < rangeStart ? interpolate(f[first]!, v[first]!, f[first + 1]!, v[first + 1]!, rangeStart, isCounter) : v[first]!;
  const right = smoothed && last > flo && f[last]! > rangeEnd ? interpolate(f[last - 1]!, v[last - 1]!, f[last]!, v[last]!, rangeEnd, isCounter) : v[last]!;
  let result = right - left;
  if (isCounter) {
    // Resets at the boundaries are already handled by the interpolation.
    if (f[first]! <= rangeStart) first++;
    if (f[last]! >= rangeEnd) last--;
    let prev = left;
    for (let i = first; i <= last; i++) {
      if (v[i]! < prev) result += prev;
      prev = v[i]!;
    }
    if (right < prev) result += prev;
  }
  if (isRate) result /= w.range / 1000;
  return result;
}

const MIXED_SCHEMAS = (name: string) =>
  `vector contains a mix of histograms with exponential and custom buckets schemas for metric name ${JSON.stringify(name)}`;

/** h1 + (h2 - h1) * fraction at time t; null when the schemas cannot be combined. */
export function interpolateHist(
  h1: FloatHistogram,
  t1: number,
  h2: FloatHistogram,
  t2: number,
  t: number,
  isCounter: boolean,
  onReconcile: () => void,
): FloatHistogram | null {
  if (t === t1) return h1;
  if (t === t2) return h2;
  const fraction = (t - t1) / (t2 - t1);
  if (isCounter && histIsReset(h1, h2)) return histScale(h2, fraction);
  const d = histAddSub(h2, h1, -1);
  if (d.incompatible || !d.h) return null;
  if (d.reconciled) onReconcile();
  const r = histAddSub(histScale(d.h, fraction), h1, 1);
  if (r.incompatible || !r.h) return null;
  if (r.reconciled) onReconcile();
  return { ...r.h, counterResetHint: h2.counterResetHint };
}

function extendedHistogramRate(w: ExtWin, c: ExtCtx, lo: number, hi: number, isCounter: boolean, isRate: boolean): Out {
  const t = w.ht;
  const h = w.hh;
  const rangeStart = w.T - w.range;
  const rangeEnd = w.T;
  const smoothed = w.ext === 'smoothed';
  const ev = c.ev;
  let last = hi - 1;
  const first = Math.max(lo, search(t, lo, last, (x) => x > rangeStart) - 1);
  if (smoothed) last = search(t, lo, last, (x) => x >= rangeEnd);
  if (t[last]! <= rangeStart) return undefined;
  if (smoothed && t[first]! > rangeEnd) return undefined;
  const custom = h[first]!.schema === CUSTOM_SCHEMA;
  let gaugeWarned = false;
  for (let i = first; i <= last; i++) {
    if ((h[i]!.schema === CUSTOM_SCHEMA) !== custom) {
      ev.warn(MIXED_SCHEMAS(w.name), c.pos);
      return undefined;
    }
    if (isCounter && !gaugeWarned && h[i]!.counterResetHint === 'gauge') {
      ev.warn(`this native histogram metric is not a counter: ${JSON.stringify(w.name)}`, c.pos);
      gaugeWarned = true;
    }
  }
  const subInfo = () => ev.info('mismatched custom buckets were reconciled during subtraction', c.pos);
  const left = smoothed && t[first]! < rangeStart ? interpolateHist(h[first]!, t[first]!, h[first + 1]!, t[first + 1]!, rangeStart, isCounter, subInfo) : h[first]!;
  if (!left) {
    ev.warn(MIXED_SCHEMAS(w.name), c.pos);
    return undefined;
  }
  const right = smoothed && last > lo && t[last]! > rangeEnd ? interpolateHist(h[last - 1]!, t[last - 1]!, h[last]!, t[last]!, rangeEnd, isCounter, subInfo) : h[last]!;
  if (!right) {
    ev.warn(MIXED_SCHEMAS(w.name), c.pos);
    return undefined;
  }
  if (!isCounter && (left.counterResetHint !== 'gauge' || right.counterResetHint !== 'gauge')) {
    ev.warn(`this native histogram metric is not a gauge: ${JSON.stringify(w.name)}`, c.pos);
  }
  const d = histAddSub(right, left, -1);
  if (d.incompatible || !d.h) {
    ev.warn(MIXED_SCHEMAS(w.name), c.pos);
    return undefined;
  }
  if (d.reconciled) subInfo();
  let res = d.h;
  if (isCounter) {
    // Corrections between the boundary samples; `right` stands for h[last], which is excluded.
    let from = first + 1;
    let prev = left;
    if (smoothed && t[first]! < rangeStart && histIsReset(h[first]!, h[first + 1]!)) {
      // The left interpolation already spanned this reset.
      prev = h[first + 1]!;
      from++;
    }
    const to = last - 1;
    if (from <= to + 1) {
      let corr: FloatHistogram | null = null;
      const add = (x: FloatHistogram): boolean => {
        if (!corr) {
          corr = x;
          return true;
        }
        const r = histAddSub(corr, x, 1);
        if (r.incompatible || !r.h) {
          ev.warn(MIXED_SCHEMAS(w.name), c.pos);
          return false;
        }
        if (r.reconciled) ev.info('mismatched custom buckets were reconciled during addition', c.pos);
        corr = r.h;
        return true;
      };
      for (let i = from; i <= to; i++) {
        if (histIsReset(prev, h[i]!) && !add(prev)) return undefined;
        prev = h[i]!;
      }
      if (histIsReset(prev, right) && !add(prev)) return undefined;
      if (corr) {
        const r = histAddSub(res, corr, 1);
        if (r.incompatible || !r.h) {
          ev.warn(MIXED_SCHEMAS(w.name), c.pos);
          return undefined;
        }
        if (r.reconciled) ev.info('mismatched custom buckets were reconciled during addition', c.pos);
        res = r.h;
      }
    }
  }
  if (isRate) res = histScale(res, 1000 / w.range);
  return { ...res, counterResetHint: 'gauge' };
}
