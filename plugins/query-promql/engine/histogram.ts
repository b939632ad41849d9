/**
 * Native histogram arithmetic on kernel FloatHistogram values. Buckets are expanded to
 * index→count maps, combined at the coarser schema, and re-encoded as spans.
 */
import type { BucketSpan, FloatHistogram } from '../../../kernel/models.js';

export const CUSTOM_SCHEMA = -53;

export type Hint = FloatHistogram['counterResetHint'];

/**
 * The counter-reset hint of a sum (Prometheus' adjustCounterReset): equal hints stay, a gauge
 * makes a gauge, "unknown" wins over reset/not_reset, and reset meeting not_reset is a
 * collision (result "unknown").
 */
export function combineHints(a: Hint, b: Hint): { hint: Hint; collision: boolean } {
  if (a === b) return { hint: a, collision: false };
  if (a === 'gauge' || b === 'gauge') return { hint: 'gauge', collision: false };
  if (a === 'unknown' || b === 'unknown') return { hint: 'unknown', collision: false };
  return { hint: 'unknown', collision: true };
}

export interface Work {
  schema: number;
  zeroThreshold: number;
  zeroCount: number;
  count: number;
  sum: number;
  pos: Map<number, number>;
  neg: Map<number, number>;
  customValues?: number[];
  hint: FloatHistogram['counterResetHint'];
}

export function expand(spans: BucketSpan[], buckets: number[]): Map<number, number> {
  const m = new Map<number, number>();
  let idx = 0;
  let b = 0;
  for (const s of spans) {
    idx += s.offset;
    for (let i = 0; i < s.length; i++) {
      const c = buckets[b++] ?? 0;
      m.set(idx, (m.get(idx) ?? 0) + c);
      idx++;
    }
  }
  return m;
}

export function encode(m: Map<number, number>): { spans: BucketSpan[]; buckets: number[] } {
  const idxs = [...m.keys()].filter((k) => m.get(k) !== 0).sort((a, b) => a - b);
  const spans: BucketSpan[] = [];
  const buckets: number[] = [];
  let prev = 0;
  let first = true;
  for (const i of idxs) {
    if (!first && i === prev + 1) {
      spans[spans.length - 1]!.length++;
    } else {
      spans.push({ offset: first ? i : i - prev - 1, length: 1 });
    }
    buckets.push(m.get(i)!);
    prev = i;
    first = false;
  }
  return { spans, buckets };
}

export function toWork(h: FloatHistogram): Work {
  return {
    schema: h.schema,
    zeroThreshold: h.zeroThreshold,
    zeroCount: h.zeroCount,
    count: h.count,
    sum: h.sum,
    pos: expand(h.positiveSpans, h.positiveBuckets),
    neg: expand(h.negativeSpans, h.negativeBuckets),
    customValues: h.customValues,
    hint: h.counterResetHint,
  };
}

export function fromWork(w: Work): FloatHistogram {
  const p = encode(w.pos);
  const n = encode(w.neg);
  const h: FloatHistogram = {
    counterResetHint: w.hint,
    schema: w.schema,
    zeroThreshold: w.zeroThreshold,
    zeroCount: w.zeroCount,
    count: w.count,
    sum: w.sum,
    positiveSpans: p.spans,
    positiveBuckets: p.buckets,
    negativeSpans: n.spans,
    negativeBuckets: n.buckets,
  };
  if (w.customValues) h.customValues = w.customValues;
  return h;
}

/** Lower bound of exponential bucket `idx` at `schema` (upper bound of idx-1). */
export function bucketUpper(schema: number, idx: number, custom?: number[]): number {
  if (schema === CUSTOM_SCHEMA) return idx < (custom?.length ?? 0) ? custom![idx]! : Infinity;
  return Math.pow(2, idx * Math.pow(2, -schema));
}
export function bucketLower(schema: number, idx: number, custom?: number[]): number {
  if (schema === CUSTOM_SCHEMA) return idx === 0 ? -Infinity : custom![idx - 1]!;
  return Math.pow(2, (idx - 1) * Math.pow(2, -schema));
}

export function reduce(m: Map<number, number>, delta: number): Map<number, number> {
  if (delta <= 0) return m;
  const out = new Map<number, number>();
  for (const [i, c] of m) {
    const t = ((i - 1) >> delta) + 1;
    out.set(t, (out.get(t) ?? 0) + c);
  }
  return out;
}

export function widenZero(w: Work, thr: number): void {
  if (thr <= w.zeroThreshold) return;
  w.zeroThreshold = thr;
  for (const side of [w.pos, w.neg]) {
    for (const [i, c] of side) {
      if (bucketUpper(w.schema, i) <= thr) {
        w.zeroCount += c;
        side.delete(i);
      }
    }
  }
}

export interface HistOpResult {
  h: FloatHistogram | null;
  /** Custom bucket bounds differed and were reconciled (info). */
  reconciled?: boolean;
  /** Exponential and custom schemas mixed (warning; h is null). */
  incompatible?: boolean;
  /** One side's hint was reset, the other's not_reset. */
  collision?: boolean;
}

/** Bucket index → count at the common custom bounds: each bucket goes to the smallest common bound >= its own. */
export function remapCustom(m: Map<number, number>, vals: number[], common: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const [i, c] of m) {
    const ub = i < vals.length ? vals[i]! : Infinity;
    let j = common.findIndex((x) => x >= ub);
    if (j < 0) j = common.length;
    out.set(j, (out.get(j) ?? 0) + c);
  }
  return out;
}

export function sameBounds(a: number[] | undefined, b: number[] | undefined): boolean {
  const va = a ?? [];
  const vb = b ?? [];
  return va.length === vb.length && va.every((x, i) => x === vb[i]);
}

/** a + sign*b. */
export function histAddSub(a: FloatHistogram, b: FloatHistogram, sign: 1 | -1): HistOpResult {
  const ca = a.schema === CUSTOM_SCHEMA;
  const cb = b.schema === CUSTOM_SCHEMA;
  if (ca !== cb) return { h: null, incompatible: true };
  const wa = toWork(a);
  const wb = toWork(b);
  let reconciled = false;
  if (ca) {
    const va = a.customValues ?? [];
    const vb = b.customValues ?? [];
    if (!sameBounds(va, vb)) {
      // Reconcile to the common bounds.
      const common = va.filter((x) => vb.includes(x));
      wa.pos = remapCustom(wa.pos, va, common);
      wb.pos = remapCustom(wb.pos, vb, common);
      wa.customValues = common;
      reconciled = true;
    }
  } else {
    const schema = Math.min(wa.schema, wb.schema);
    wa.pos = reduce(wa.pos, wa.schema - schema);
    wa.neg = reduce(wa.neg, wa.schema - schema);
    wb.pos = reduce(wb.pos, wb.schema - schema);
    wb.neg = reduce(wb.neg, wb.schema - schema);
    wa.schema = wb.schema = schema;
    const thr = Math.max(wa.zeroThreshold, wb.zeroThreshold);
    widenZero(wa, thr);
    widenZero(wb, thr);
  }
  for (const [i, c] of wb.pos) wa.pos.set(i, (wa.pos.get(i) ?? 0) + sign * c);
  for (const [i, c] of wb.neg) wa.neg.set(i, (wa.neg.get(i) ?? 0) + sign * c);
  wa.zeroCount += sign * wb.zeroCount;
  wa.count += sign * wb.count;
  wa.sum += sign * wb.sum;
  const hc = combineHints(a.counterResetHint, b.counterResetHint);
  wa.hint = hc.hint;
  const h = fromWork(wa);
  return { h, reconciled, collision: hc.collision };
}

/** h * f; a negative factor makes a gauge (Prometheus' FloatHistogram.Mul). */
export function histScale(h: FloatHistogram, f: number): FloatHistogram {
  return {
    ...h,
    counterResetHint: f < 0 ? 'gauge' : h.counterResetHint,
    zeroCount: h.zeroCount * f,
    count: h.count * f,
    sum: h.sum * f,
    positiveBuckets: h.positiveBuckets.map((x) => x * f),
    negativeBuckets: h.negativeBuckets.map((x) => x * f),
    positiveSpans: h.positiveSpans.map((s) => ({ ...s })),
    negativeSpans: h.negativeSpans.map((s) => ({ ...s })),
  };
}

/** h / d: division by zero drops every bucket; a negative divisor makes a gauge (FloatHistogram.Div). */
export function histDiv(h: FloatHistogram, d: number): FloatHistogram {
  if (d === 0) {
    return { ...h, zeroCount: h.zeroCount / d, count: h.count / d, sum: h.sum / d, positiveSpans: [], positiveBuckets: [], negativeSpans: [], negativeBuckets: [] };
  }
  return {
    ...h,
    counterResetHint: d < 0 ? 'gauge' : h.counterResetHint,
    zeroCount: h.zeroCount / d,
    count: h.count / d,
    sum: h.sum / d,
    positiveBuckets: h.positiveBuckets.map((x) => x / d),
    negativeBuckets: h.negativeBuckets.map((x) => x / d),
    positiveSpans: h.positiveSpans.map((s) => ({ ...s })),
    negativeSpans: h.negativeSpans.map((s) => ({ ...s })),
  };
}

export function histNeg(h: FloatHistogram): FloatHistogram {
  return histScale(h, -1);
}

export function histEqual(a: FloatHistogram, b: FloatHistogram): boolean {
  if (a.schema !== b.schema || a.count !== b.count || a.sum !== b.sum || a.zeroCount !== b.zeroCount) return false;
  if (a.zeroThreshold !== b.zeroThreshold) return false;
  if (a.schema === CUSTOM_SCHEMA && !sameBounds(a.customValues, b.customValues)) return false;
  const eq = (x: Map<number, number>, y: Map<number, number>) => {
    for (const [k, v] of x) if (v !== 0 && y.get(k) !== v) return false;
    for (const [k, v] of y) if (v !== 0 && x.get(k) !== v) return false;
    return true;
  };
  return eq(expand(a.positiveSpans, a.positiveBuckets), expand(b.positiveSpans, b.positiveBuckets)) &&
    eq(expand(a.negativeSpans, a.negativeBuckets), expand(b.negativeSpans, b.negativeBuckets));
}

/** All buckets as [lower, upper, count, lowerInclusive, upperInclusive] in ascending order. */
export function allBuckets(h: FloatHistogram): { lo: number; hi: number; count: number; boundary: number }[] {
  const out: { lo: number; hi: number; count: number; boundary: number }[] = [];
  if (h.schema === CUSTOM_SCHEMA) {
    const m = expand(h.positiveSpans, h.positiveBuckets);
    for (const i of [...m.keys()].sort((a, b) => a - b)) {
      out.push({ lo: bucketLower(h.schema, i, h.customValues), hi: bucketUpper(h.schema, i, h.customValues), count: m.get(i)!, boundary: i === 0 ? 3 : 0 });
    }
    return out;
  }
  const neg = expand(h.negativeSpans, h.negativeBuckets);
  for (const i of [...neg.keys()].sort((a, b) => b - a)) {
    out.push({ lo: -bucketUpper(h.schema, i), hi: -bucketLower(h.schema, i), count: neg.get(i)!, boundary: 1 });
  }
  if (h.zeroCount !== 0 || h.zeroThreshold !== 0) {
    out.push({ lo: -h.zeroThreshold, hi: h.zeroThreshold, count: h.zeroCount, boundary: 3 });
  }
  const pos = expand(h.positiveSpans, h.positiveBuckets);
  for (const i of [...pos.keys()].sort((a, b) => a - b)) {
    out.push({ lo: bucketLower(h.schema, i), hi: bucketUpper(h.schema, i), count: pos.get(i)!, boundary: 0 });
  }
  return out;
}

/** Counter-reset detection between consecutive histograms (Prometheus' DetectReset, simplified). */
export function histIsReset(prev: FloatHistogram, cur: FloatHistogram): boolean {
  if (cur.counterResetHint === 'reset') return true;
  if (cur.counterResetHint === 'not_reset') return false;
  if (cur.count < prev.count) return true;
  if (cur.schema === CUSTOM_SCHEMA) {
    // A switch to custom buckets is a reset; changed bounds compare at their common bounds.
    if (prev.schema !== CUSTOM_SCHEMA) return true;
    if (!sameBounds(prev.customValues, cur.customValues)) {
      const vp = prev.customValues ?? [];
      const vc = cur.customValues ?? [];
      const common = vp.filter((x) => vc.includes(x));
      const p = remapCustom(expand(prev.positiveSpans, prev.positiveBuckets), vp, common);
      const c = remapCustom(expand(cur.positiveSpans, cur.positiveBuckets), vc, common);
      for (const [i, v] of p) if ((c.get(i) ?? 0) < v) return true;
      return false;
    }
  }
  if (cur.schema > prev.schema) return true;
  if (cur.zeroThreshold < prev.zeroThreshold) return true;
  if (cur.zeroCount < prev.zeroCount) return true;
  const cmp = (a: Map<number, number>, b: Map<number, number>) => {
    for (const [i, c] of a) if ((b.get(i) ?? 0) < c) return true;
    return false;
  };
  if (cur.schema === prev.schema) {
    return cmp(expand(prev.positiveSpans, prev.positiveBuckets), expand(cur.positiveSpans, cur.positiveBuckets)) ||
      cmp(expand(prev.negativeSpans, prev.negativeBuckets), expand(cur.negativeSpans, cur.negativeBuckets));
  }
  const d = prev.schema - cur.schema;
  return cmp(reduce(expand(prev.positiveSpans, prev.positiveBuckets), d), expand(cur.positiveSpans, cur.positiveBuckets)) ||
    cmp(reduce(expand(prev.negativeSpans, prev.negativeBuckets), d), expand(cur.negativeSpans, cur.negativeBuckets));
}

/** Go's %v for a float64 as Prometheus prints it in histogram strings. */
function goFloat(x: number): string {
  if (x === Infinity) return '+Inf';
  if (x === -Infinity) return '-Inf';
  if (x !== x) return 'NaN';
  return String(x);
}

/** Prometheus' FloatHistogram.String(): `{count:N, sum:S, [lo,hi):c, ...}` (non-empty buckets only). */
export function histString(h: FloatHistogram): string {
  let out = `{count:${goFloat(h.count)}, sum:${goFloat(h.sum)}`;
  for (const b of allBuckets(h)) {
    if (b.count === 0) continue;
    const open = b.boundary === 1 || b.boundary === 3 ? '[' : '(';
    const close = b.boundary === 0 || b.boundary === 3 ? ']' : ')';
    out += `, ${open}${goFloat(b.lo)},${goFloat(b.hi)}${close}:${goFloat(b.count)}`;
  }
  return out + '}';
}
