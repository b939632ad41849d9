/** histogram_* functions over classic (`le`) buckets and native histograms. */
import type { FloatHistogram, Labels } from '../../../kernel/models.js';
import type { Call } from '../parser/ast.js';
import type { Evaluator, Steps } from './engine.js';
import { allBuckets, CUSTOM_SCHEMA } from './histogram.js';
import { dropMetricName, keyOf, sortLabels, METRIC_NAME } from './labels.js';
import { almostEqual, formatFloat } from './mathutil.js';
import { ABSENT, FLOAT, HIST, newSeries, type StepSeries, type Value, type VectorValue } from './values.js';

export async function evalHistogramFunction(ev: Evaluator, call: Call, steps: Steps): Promise<Value> {
  const f = call.func;
  const n = steps.ts.length;
  if (f === 'histogram_quantile') {
    const q = await ev.evalScalarArg(call.args[0]!, steps);
    const v = await ev.evalVector(call.args[1]!, steps);
    return histogramQuantile(ev, q, call.args[0]!.pos, v, n, call.args[1]!.pos);
  }
  if (f === 'histogram_quantiles') return histogramQuantiles(ev, call, steps);
  if (f === 'histogram_fraction') {
    const lo = await ev.evalScalarArg(call.args[0]!, steps);
    const hi = await ev.evalScalarArg(call.args[1]!, steps);
    const v = await ev.evalVector(call.args[2]!, steps);
    return mapHists(ev, v, (h, i, s) => {
      if (hasNanObservations(h)) {
        ev.info(
          `input to histogram_fraction has NaN observations, which are excluded from all fractions for metric name ${JSON.stringify(s.labels[METRIC_NAME] ?? '')}`,
          call.args[2]!.pos,
        );
      }
      return histogramFraction(lo[i]!, hi[i]!, h);
    });
  }
  const v = await ev.evalVector(call.args[0]!, steps);
  switch (f) {
    case 'histogram_count':
      return mapHists(ev, v, (h) => h.count);
    case 'histogram_sum':
      return mapHists(ev, v, (h) => h.sum);
    case 'histogram_avg':
      return mapHists(ev, v, (h) => h.sum / h.count);
    case 'histogram_stddev':
      return mapHists(ev, v, (h) => Math.sqrt(histVariance(h)));
    case 'histogram_stdvar':
      return mapHists(ev, v, (h) => histVariance(h));
  }
  return { kind: 'vector', series: [] };
}

function mapHists(ev: Evaluator, v: VectorValue, fn: (h: FloatHistogram, i: number, s: StepSeries) => number): VectorValue {
  const out: StepSeries[] = [];
  for (const s of v.series) {
    let any = false;
    for (let i = 0; i < s.has.length; i++) {
      if (s.has[i] === HIST) {
        s.vals[i] = fn(s.hists![i]!, i, s);
        s.has[i] = FLOAT;
        any = true;
      } else s.has[i] = ABSENT;
    }
    s.hists = null;
    if (!any) continue;
    ev.dropName(s);
    out.push(s);
  }
  const r: VectorValue = { kind: 'vector', series: out };
  if (!ev.delayed) ev.checkDuplicates(r);
  return r;
}

function histVariance(h: FloatHistogram): number {
  if (h.count === 0) return NaN;
  const mean = h.sum / h.count;
  let acc = 0;
  for (const b of allBuckets(h)) {
    if (b.count === 0) continue;
    let val: number;
    if (h.schema === CUSTOM_SCHEMA) {
      val = b.lo === -Infinity ? b.hi : b.hi === Infinity ? b.lo : (b.lo + b.hi) / 2;
    } else if (b.lo === -b.hi) val = 0;
    else if (b.lo > 0) val = Math.sqrt(b.lo * b.hi);
    else val = -Math.sqrt(b.lo * b.hi);
    const d = val - mean;
    acc += b.count * d * d;
  }
  return acc / h.count;
}

/** Native histogram quantile (Prometheus' HistogramQuantile, exponential interpolation). */
export function nativeQuantile(q: number, h: FloatHistogram): number {
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  if (h.count === 0 || q !== q) return NaN;
  const buckets = allBuckets(h).filter((b) => b.count !== 0 || b.boundary === 3);
  let rank = q * h.count;
  let count = 0;
  let idx = -1;
  for (let i = 0; i < buckets.length; i++) {
    count += buckets[i]!.count;
    if (count >= rank) {
      idx = i;
      break;
    }
  }
  if (idx < 0) {
    // The rank lies among NaN observations (counted, but in no bucket).
    if (hasNanObservations(h)) return NaN;
    const last = buckets[buckets.length - 1];
    return last ? last.hi : NaN;
  }
  const b = buckets[idx]!;
  if (count === rank) {
    // The rank ends exactly at this bucket's upper edge: Prometheus answers with the lower edge of
    // the next populated bucket (the same value unless empty buckets lie between).
    for (let j = idx + 1; j < buckets.length; j++) {
      const nb = buckets[j]!;
      if (nb.count <= 0) continue;
      if (h.schema !== CUSTOM_SCHEMA && nb.boundary === 3 && !h.negativeBuckets.some((x) => x > 0)) return 0;
      return nb.lo;
    }
  }
  count -= b.count;
  rank -= count;
  const frac = b.count === 0 ? 0 : rank / b.count;
  if (h.schema === CUSTOM_SCHEMA) {
    if (b.lo === -Infinity) return b.hi <= 0 ? b.hi : b.hi * frac;
    if (b.hi === Infinity) return b.lo;
    return b.lo + (b.hi - b.lo) * frac;
  }
  if (b.lo === -b.hi || b.boundary === 3) {
    // Zero bucket: linear interpolation, shifted to one side when the other side is empty.
    let lo = b.lo;
    let hi = b.hi;
    const hasNeg = h.negativeBuckets.some((x) => x > 0);
    const hasPos = h.positiveBuckets.some((x) => x > 0);
    if (!hasNeg && hasPos) lo = 0;
    else if (hasNeg && !hasPos) hi = 0;
    return lo + (hi - lo) * frac;
  }
  if (b.lo < 0) {
    // Negative bucket: interpolate from the upper (less negative) edge.
    const lo = -b.hi;
    const hi = -b.lo;
    const f2 = 1 - frac;
    return -Math.exp(Math.log(lo) + (Math.log(hi) - Math.log(lo)) * f2);
  }
  return Math.exp(Math.log(b.lo) + (Math.log(b.hi) - Math.log(b.lo)) * frac);
}

export function histogramFraction(lower: number, upper: number, h: FloatHistogram): number {
  if (h.count === 0 || lower !== lower || upper !== upper) return NaN;
  if (lower >= upper) return 0;
  let rank = 0;
  const custom = h.schema === CUSTOM_SCHEMA;
  // The zero bucket holds only non-negative (non-positive) observations when the histogram has
  // no negative (positive) buckets.
  const hasPos = h.positiveBuckets.some((x) => x !== 0);
  const hasNeg = h.negativeBuckets.some((x) => x !== 0);
  const interp = (b: { lo: number; hi: number; count: number; boundary: number }, v: number): number => {
    let lo = b.lo;
    let hi = b.hi;
    const zero = !custom && b.boundary === 3;
    if (zero) {
      if (hasPos && !hasNeg) lo = 0;
      else if (hasNeg && !hasPos) hi = 0;
    }
    if (v <= lo) return 0;
    if (v >= hi) return b.count;
    if (custom || zero) {
      if (lo === -Infinity || hi === Infinity) return 0;
      return (b.count * (v - lo)) / (hi - lo);
    }
    // Exponential buckets interpolate in log space (on magnitudes for negative buckets).
    if (hi <= 0) return (b.count * Math.log(lo / v)) / Math.log(lo / hi);
    return (b.count * (Math.log(v) - Math.log(lo))) / (Math.log(hi) - Math.log(lo));
  };
  for (const b of allBuckets(h)) {
    rank += interp(b, upper) - interp(b, lower);
  }
  return rank / h.count;
}

interface ClassicGroup {
  labels: Labels;
  series: { le: number; s: StepSeries }[];
  native: StepSeries[];
  name: string;
}

/**
 * NaN observations count towards a native histogram's count but fall in no bucket; the sum is
 * then NaN too.
 */
function hasNanObservations(h: FloatHistogram): boolean {
  if (h.sum === h.sum) return false;
  let total = h.zeroCount;
  for (const b of h.positiveBuckets) total += b;
  for (const b of h.negativeBuckets) total += b;
  return h.count > total && h.count - total > 1e-12 * h.count;
}

/** histogram_quantiles(v, "label", q1, q2, ...): one output series per quantile, labelled with it. */
async function histogramQuantiles(ev: Evaluator, call: Call, steps: Steps): Promise<VectorValue> {
  const n = steps.ts.length;
  const v = await ev.evalVector(call.args[0]!, steps);
  const lv = await ev.eval(call.args[1]!, steps);
  const label = lv.kind === 'string' ? lv.value : '';
  const out: StepSeries[] = [];
  for (let a = 2; a < call.args.length; a++) {
    const q = await ev.evalScalarArg(call.args[a]!, steps);
    const r = histogramQuantile(ev, q, call.args[a]!.pos, v, n, call.args[0]!.pos, true);
    // Each output carries its quantile (per step constant in practice: the first step's value).
    for (const s of r.series) {
      s.labels = sortLabels({ ...s.labels, [label]: formatFloat(q[0]!) });
      out.push(s);
    }
  }
  const res: VectorValue = { kind: 'vector', series: out };
  if (!ev.delayed) ev.checkDuplicates(res);
  return res;
}

function histogramQuantile(
  ev: Evaluator,
  q: Float64Array,
  qPos: { start: number },
  v: VectorValue,
  n: number,
  pos: { start: number },
  skipDupCheck = false,
): VectorValue {
  for (const x of new Set(q)) {
    if (!(x >= 0 && x <= 1)) ev.warn(`quantile value should be between 0 and 1, got ${x}`, qPos);
  }
  const groups = new Map<string, ClassicGroup>();
  const out: StepSeries[] = [];
  for (const s of v.series) {
    const name = s.labels[METRIC_NAME] ?? '';
    const isNative = s.has.some((x) => x === HIST);
    const hasFloat = s.has.some((x) => x === FLOAT);
    if (isNative) {
      const o = newSeries(ev.delayed ? s.labels : dropMetricName(s.labels), n, true);
      for (let i = 0; i < n; i++) {
        if (s.has[i] !== HIST) continue;
        const h = s.hists![i]!;
        o.vals[i] = nativeQuantile(q[i]!, h);
        if (hasNanObservations(h)) {
          const what = o.vals[i] !== o.vals[i] ? 'result is NaN' : 'result is skewed higher';
          ev.info(`input to histogram_quantile has NaN observations, ${what} for metric name ${JSON.stringify(name)}`, pos);
        }
        o.has[i] = FLOAT;
      }
      out.push(o);
      if (!hasFloat) continue;
    }
    const leStr = s.labels.le;
    const le = leStr === undefined ? NaN : parseLe(leStr);
    if (le !== le) {
      ev.warn(`bucket label "le" is missing or has a malformed value of ${JSON.stringify(leStr ?? '')} for metric name ${JSON.stringify(name)}`, pos);
      continue;
    }
    const gl: Record<string, string> = {};
    for (const k in s.labels) if (k !== 'le' && k !== METRIC_NAME) gl[k] = s.labels[k]!;
    const labels = sortLabels(gl);
    const key = keyOf(labels);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { labels, series: [], native: [], name }));
    g.series.push({ le, s });
  }
  // Classic quantiles.
  const nativeKeys = new Map<string, StepSeries>();
  for (const o of out) nativeKeys.set(keyOf(dropMetricName(o.labels)), o);
  for (const g of groups.values()) {
    const o = newSeries(g.labels, n, true);
    const nat = nativeKeys.get(keyOf(g.labels));
    for (let i = 0; i < n; i++) {
      const buckets: { ub: number; c: number }[] = [];
      for (const { le, s } of g.series) if (s.has[i] === FLOAT) buckets.push({ ub: le, c: s.vals[i]! });
      if (buckets.length === 0) continue;
      if (nat && nat.has[i] !== ABSENT) {
        ev.warn(`vector contains a mix of classic and native histograms for metric name ${JSON.stringify(g.name)}`, pos);
        nat.has[i] = ABSENT;
        continue;
      }
      const r = bucketQuantile(q[i]!, buckets);
      if (r.forced) {
        ev.info(
          `input to histogram_quantile needed to be fixed for monotonicity (see https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile) for metric name ${JSON.stringify(g.name)}`,
          pos,
        );
      }
      o.vals[i] = r.v;
      o.has[i] = FLOAT;
    }
    if (o.has.some((x) => x !== ABSENT)) out.push(o);
  }
  const res: VectorValue = { kind: 'vector', series: out.filter((s) => s.has.some((x) => x !== ABSENT)) };
  if (!ev.delayed && !skipDupCheck) ev.checkDuplicates(res);
  return res;
}

function parseLe(s: string): number {
  const t = s.trim();
  if (/^[+]?inf$/i.test(t)) return Infinity;
  if (/^-inf$/i.test(t)) return -Infinity;
  if (/^nan$/i.test(t)) return NaN;
  if (t === '' || !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^0x[0-9a-f]+$/i.test(t)) return NaN;
  return Number(t);
}

function bucketQuantile(q: number, buckets: { ub: number; c: number }[]): { v: number; forced: boolean } {
  if (q !== q) return { v: NaN, forced: false };
  if (q < 0) return { v: -Infinity, forced: false };
  if (q > 1) return { v: Infinity, forced: false };
  buckets.sort((a, b) => a.ub - b.ub);
  if (buckets[buckets.length - 1]!.ub !== Infinity) return { v: NaN, forced: false };
  // Coalesce equal bounds.
  const bs: { ub: number; c: number }[] = [];
  for (const b of buckets) {
    const last = bs[bs.length - 1];
    if (last && last.ub === b.ub) last.c += b.c;
    else bs.push({ ...b });
  }
  let forced = false;
  let prev = bs[0]!.c;
  for (let i = 1; i < bs.length; i++) {
    const cur = bs[i]!.c;
    if (cur === prev) continue;
    if (almostEqual(prev, cur, 1e-12)) {
      bs[i]!.c = prev;
      continue;
    }
    if (cur < prev) {
      bs[i]!.c = prev;
      forced = true;
      continue;
    }
    prev = cur;
  }
  if (bs.length < 2) return { v: NaN, forced };
  const obs = bs[bs.length - 1]!.c;
  if (obs === 0) return { v: NaN, forced };
  let rank = q * obs;
  let b = 0;
  while (b < bs.length - 1 && !(bs[b]!.c >= rank)) b++;
  if (b === bs.length - 1) return { v: bs[bs.length - 2]!.ub, forced };
  if (b === 0 && bs[0]!.ub <= 0) return { v: bs[0]!.ub, forced };
  let start = 0;
  const end = bs[b]!.ub;
  let count = bs[b]!.c;
  if (b > 0) {
    start = bs[b - 1]!.ub;
    count -= bs[b - 1]!.c;
    rank -= bs[b - 1]!.c;
  }
  return { v: start + (end - start) * (rank / count), forced };
}
