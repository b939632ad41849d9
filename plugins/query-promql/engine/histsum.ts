/**
 * Compensated sums and means of native histograms, as Prometheus' `sum`/`avg` aggregations and
 * `sum_over_time`/`avg_over_time` compute them: every field (count, sum, zero bucket, each
 * bucket) is a Kahan-Neumaier sum, so `1 + 1e100 + 1 - 1e100` gives 2. A mean is the compensated
 * sum divided by the count while that sum stays finite; once it would overflow, the mean is
 * updated incrementally instead. Counter-reset hints combine as in Prometheus, and a reset meeting
 * a not_reset among the inputs is reported as a collision.
 */
import type { FloatHistogram } from '../../../kernel/models.js';
import {
  CUSTOM_SCHEMA,
  combineHints,
  fromWork,
  reduce,
  remapCustom,
  sameBounds,
  toWork,
  widenZero,
  type Work,
} from './histogram.js';

function emptyLike(w: Work): Work {
  return {
    schema: w.schema,
    zeroThreshold: w.zeroThreshold,
    zeroCount: 0,
    count: 0,
    sum: 0,
    pos: new Map(),
    neg: new Map(),
    customValues: w.customValues,
    hint: w.hint,
  };
}

function copyWork(w: Work): Work {
  return { ...w, pos: new Map(w.pos), neg: new Map(w.neg) };
}

function scaleWork(w: Work, f: number): void {
  w.count *= f;
  w.sum *= f;
  w.zeroCount *= f;
  for (const [k, v] of w.pos) w.pos.set(k, v * f);
  for (const [k, v] of w.neg) w.neg.set(k, v * f);
}

function divWork(w: Work, d: number): void {
  w.count /= d;
  w.sum /= d;
  w.zeroCount /= d;
  for (const [k, v] of w.pos) w.pos.set(k, v / d);
  for (const [k, v] of w.neg) w.neg.set(k, v / d);
}

function overflows(w: Work): boolean {
  const inf = (x: number) => x === Infinity || x === -Infinity;
  if (inf(w.count) || inf(w.sum) || inf(w.zeroCount)) return true;
  for (const v of w.pos.values()) if (inf(v)) return true;
  for (const v of w.neg.values()) if (inf(v)) return true;
  return false;
}

/** Brings w to a coarser schema / wider zero bucket (no-op when already there). */
function align(w: Work, schema: number, thr: number): void {
  if (w.schema > schema) {
    w.pos = reduce(w.pos, w.schema - schema);
    w.neg = reduce(w.neg, w.schema - schema);
    w.schema = schema;
  }
  widenZero(w, thr);
}

let nc = 0;
/** Neumaier step on one field; the new compensation is left in `nc`. */
function inc(sum: number, c: number, x: number): number {
  const t = sum + x;
  if (t === Infinity || t === -Infinity) nc = 0;
  else if (Math.abs(sum) >= Math.abs(x)) nc = c + (sum - t + x);
  else nc = c + (x - t + sum);
  return t;
}

function incMap(acc: Map<number, number>, comp: Map<number, number>, other: Map<number, number>): void {
  for (const [k, x] of other) {
    const t = inc(acc.get(k) ?? 0, comp.get(k) ?? 0, x);
    acc.set(k, t);
    comp.set(k, nc);
  }
}

/** acc += other with compensation in comp (both reconciled to a common layout first). */
function kahanAdd(acc: Work, comp: Work, other: Work): { reconciled: boolean } {
  let reconciled = false;
  if (acc.schema === CUSTOM_SCHEMA) {
    if (!sameBounds(acc.customValues, other.customValues)) {
      const va = acc.customValues ?? [];
      const vb = other.customValues ?? [];
      const common = va.filter((x) => vb.includes(x));
      acc.pos = remapCustom(acc.pos, va, common);
      comp.pos = remapCustom(comp.pos, va, common);
      other.pos = remapCustom(other.pos, vb, common);
      acc.customValues = comp.customValues = other.customValues = common;
      reconciled = true;
    }
  } else {
    const schema = Math.min(acc.schema, other.schema);
    const thr = Math.max(acc.zeroThreshold, other.zeroThreshold);
    align(acc, schema, thr);
    align(comp, schema, thr);
    align(other, schema, thr);
  }
  acc.count = inc(acc.count, comp.count, other.count);
  comp.count = nc;
  acc.sum = inc(acc.sum, comp.sum, other.sum);
  comp.sum = nc;
  acc.zeroCount = inc(acc.zeroCount, comp.zeroCount, other.zeroCount);
  comp.zeroCount = nc;
  incMap(acc.pos, comp.pos, other.pos);
  incMap(acc.neg, comp.neg, other.neg);
  acc.hint = combineHints(acc.hint, other.hint).hint;
  return { reconciled };
}

/** acc + comp, plainly (the final step of a compensated sum); the hint stays acc's. */
function addComp(acc: Work, comp: Work): void {
  acc.count += comp.count;
  acc.sum += comp.sum;
  acc.zeroCount += comp.zeroCount;
  for (const [k, v] of comp.pos) acc.pos.set(k, (acc.pos.get(k) ?? 0) + v);
  for (const [k, v] of comp.neg) acc.neg.set(k, (acc.neg.get(k) ?? 0) + v);
}

export interface HistFoldResult {
  h?: FloatHistogram;
  /** Exponential and custom-bucket histograms were mixed: no result. */
  incompatible: boolean;
  /** Custom bounds differed and were reconciled to their intersection. */
  reconciled: boolean;
  /** Both a reset and a not_reset hint were among the inputs. */
  collision: boolean;
}

/** The compensated sum (mean = false) or mean (mean = true) of histograms, in input order. */
export function foldHistograms(hs: readonly FloatHistogram[], mean: boolean): HistFoldResult {
  const res: HistFoldResult = { incompatible: false, reconciled: false, collision: false };
  if (hs.length === 0) return res;
  let resetSeen = false;
  let notResetSeen = false;
  const track = (h: FloatHistogram) => {
    if (h.counterResetHint === 'reset') resetSeen = true;
    else if (h.counterResetHint === 'not_reset') notResetSeen = true;
  };
  const first = hs[0]!;
  const custom = first.schema === CUSTOM_SCHEMA;
  track(first);
  let acc = toWork(first);
  let comp: Work | null = null;
  let incremental = false;
  let count = 1;
  for (let i = 1; i < hs.length; i++) {
    const h = hs[i]!;
    track(h);
    if ((h.schema === CUSTOM_SCHEMA) !== custom) {
      res.incompatible = true;
      return res;
    }
    count = i + 1;
    if (!incremental) {
      // Direct sum while it stays finite (a mean then divides once at the end).
      const trySum = mean ? copyWork(acc) : acc;
      const tryComp: Work = comp ? (mean ? copyWork(comp) : comp) : emptyLike(acc);
      if (kahanAdd(trySum, tryComp, toWork(h)).reconciled) res.reconciled = true;
      if (!mean || !overflows(trySum)) {
        acc = trySum;
        comp = tryComp;
        continue;
      }
      incremental = true;
      divWork(acc, count - 1);
      if (comp) divWork(comp, count - 1);
    }
    // Incremental mean: mean = mean*(n-1)/n + h/n, compensated.
    const q = (count - 1) / count;
    if (!comp) comp = emptyLike(acc);
    scaleWork(comp, q);
    scaleWork(acc, q);
    const add = toWork(h);
    divWork(add, count);
    if (kahanAdd(acc, comp, add).reconciled) res.reconciled = true;
  }
  if (mean && !incremental) {
    divWork(acc, count);
    if (comp) divWork(comp, count);
  }
  if (comp) addComp(acc, comp);
  res.collision = resetSeen && notResetSeen;
  res.h = fromWork(acc);
  return res;
}
