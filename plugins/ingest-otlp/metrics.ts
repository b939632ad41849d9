/**
 * OTLP metrics to Prometheus series, the way Prometheus' OTLP receiver maps them:
 * - names via naming.ts (unit suffixes, `_total` for monotonic cumulative sums, `_ratio`);
 * - data point attributes to sanitised labels; `job` = service.namespace/service.name,
 *   `instance` = service.instance.id; the other resource attributes go to a `target_info` series;
 * - gauges and sums as one series; classic histograms as `_bucket{le}`/`_sum`/`_count`; summaries
 *   as `{quantile}`/`_sum`/`_count`; exponential histograms as native histograms (FloatHistogram);
 * - the NoRecordedValue flag as a staleness marker; start timestamps into Sample.st.
 * Delta temporality (which Prometheus refuses as well) and out-of-range scales are rejected per
 * data point and reported through partialSuccess.
 */
import {
  STALE_NAN,
  type FloatHistogram,
  type MetricMetadata,
  type MetricSeriesInput,
  type MetricType,
  type Sample,
} from '../../kernel/models.js';
import { formatFloat, prometheusMetricName, sanitizeLabelName, type NamingKind } from './naming.js';
import { attributes, isZero, nanosToMs, toNumber, valueText, type Int64, type KeyValueMsg } from './values.js';

interface BaseDataPoint {
  attributes?: KeyValueMsg[] | null;
  startTimeUnixNano?: Int64;
  timeUnixNano?: Int64;
  flags?: number | null;
}
interface NumberDataPoint extends BaseDataPoint {
  asDouble?: number | null;
  asInt?: Int64;
}
interface HistogramDataPoint extends BaseDataPoint {
  count?: Int64;
  sum?: number | null;
  bucketCounts?: Int64[] | null;
  explicitBounds?: number[] | null;
}
interface ExpBuckets {
  offset?: number | null;
  bucketCounts?: Int64[] | null;
}
interface ExpHistogramDataPoint extends BaseDataPoint {
  count?: Int64;
  sum?: number | null;
  scale?: number | null;
  zeroCount?: Int64;
  zeroThreshold?: number | null;
  positive?: ExpBuckets | null;
  negative?: ExpBuckets | null;
}
interface SummaryDataPoint extends BaseDataPoint {
  count?: Int64;
  sum?: number | null;
  quantileValues?: { quantile?: number | null; value?: number | null }[] | null;
}
interface MetricMsg {
  name?: string | null;
  description?: string | null;
  unit?: string | null;
  gauge?: { dataPoints?: NumberDataPoint[] | null } | null;
  sum?: { dataPoints?: NumberDataPoint[] | null; aggregationTemporality?: number | null; isMonotonic?: boolean | null } | null;
  histogram?: { dataPoints?: HistogramDataPoint[] | null; aggregationTemporality?: number | null } | null;
  exponentialHistogram?: { dataPoints?: ExpHistogramDataPoint[] | null; aggregationTemporality?: number | null } | null;
  summary?: { dataPoints?: SummaryDataPoint[] | null } | null;
}
export interface ExportMetricsRequest {
  resourceMetrics?:
    | {
        resource?: { attributes?: KeyValueMsg[] | null } | null;
        scopeMetrics?: { metrics?: MetricMsg[] | null }[] | null;
      }[]
    | null;
}

export interface MetricsResult {
  series: MetricSeriesInput[];
  metadata: MetricMetadata[];
  rejected: number;
  errors: string[];
}

const DELTA = 1;
const NO_RECORDED_VALUE = 1;
const has = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/** Label sets keyed by the sanitised name; colliding keys join their values with ";" as Prometheus does. */
function labelsFrom(kvs: readonly KeyValueMsg[] | null | undefined, base: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  if (kvs && kvs.length) {
    const sorted = [...kvs].sort((a, b) => ((a.key ?? '') < (b.key ?? '') ? -1 : 1));
    const attrs = attributes(sorted);
    for (const k of Object.keys(attrs)) {
      const name = sanitizeLabelName(k);
      const v = valueText(attrs[k]);
      if (!name || v === '') continue;
      out[name] = out[name] !== undefined ? out[name] + ';' + v : v;
    }
  }
  for (const k in base) out[k] = base[k]!;
  return out;
}

function startMs(p: BaseDataPoint): number | undefined {
  return isZero(p.startTimeUnixNano) ? undefined : nanosToMs(p.startTimeUnixNano);
}

function sample(t: number, v: number, st: number | undefined, stale: boolean): Sample {
  const s: Sample = { t, v: stale ? STALE_NAN : v };
  if (st !== undefined) s.st = st;
  return s;
}

/**
 * OTLP exponential bucket index i covers (base^i, base^(i+1)]; Prometheus' index j covers
 * (base^(j-1), base^j], so j = i + 1. Scales above 8 are merged down to 8 (the finest native
 * schema) by shifting indices, as Prometheus' converter does.
 */
function expBuckets(b: ExpBuckets | null | undefined, scaleDown: number): { spans: FloatHistogram['positiveSpans']; counts: number[] } {
  const counts = b?.bucketCounts ?? [];
  if (!counts.length) return { spans: [], counts: [] };
  const offset = b?.offset ?? 0;
  const out: number[] = [];
  let first: number | undefined;
  let lastIdx = 0;
  for (let i = 0; i < counts.length; i++) {
    const idx = ((offset + i) >> scaleDown) + 1;
    const c = toNumber(counts[i]);
    if (first === undefined) {
      first = idx;
      out.push(c);
    } else if (idx === lastIdx) out[out.length - 1]! += c;
    else out.push(c);
    lastIdx = idx;
  }
  return { spans: [{ offset: first!, length: out.length }], counts: out };
}

function metricType(kind: NamingKind): MetricType {
  return kind;
}

export function mapMetrics(req: ExportMetricsRequest): MetricsResult {
  const res: MetricsResult = { series: [], metadata: [], rejected: 0, errors: [] };
  const seenMeta = new Set<string>();
  const addMeta = (metric: string, kind: NamingKind, m: MetricMsg) => {
    if (seenMeta.has(metric)) return;
    seenMeta.add(metric);
    res.metadata.push({ metric, type: metricType(kind), help: m.description ?? '', unit: m.unit ?? '' });
  };
  const reject = (n: number, why: string) => {
    res.rejected += n;
    if (res.errors.length < 5 && !res.errors.includes(why)) res.errors.push(why);
  };

  for (const rm of req.resourceMetrics ?? []) {
    const rattrs = attributes(rm.resource?.attributes);
    const serviceName = valueText(rattrs['service.name']);
    const serviceNs = valueText(rattrs['service.namespace']);
    const instance = valueText(rattrs['service.instance.id']);
    const base: Record<string, string> = {};
    if (serviceName) base.job = serviceNs ? `${serviceNs}/${serviceName}` : serviceName;
    if (instance) base.instance = instance;
    let latest = 0;
    const push = (labels: Record<string, string>, s: Sample) => {
      res.series.push({ labels, samples: [s] });
      if (s.t > latest) latest = s.t;
    };

    for (const sm of rm.scopeMetrics ?? []) {
      for (const m of sm.metrics ?? []) {
        const rawName = m.name ?? '';
        const unit = m.unit ?? '';
        if (!rawName) {
          reject(countPoints(m), 'metric without a name');
          continue;
        }
        if (m.gauge || (m.sum && !m.sum.isMonotonic)) {
          const pts = (m.gauge ?? m.sum)!.dataPoints ?? [];
          if (m.sum && m.sum.aggregationTemporality === DELTA) {
            reject(pts.length, `delta temporality is not supported (metric "${rawName}")`);
            continue;
          }
          const name = prometheusMetricName(rawName, unit, 'gauge');
          addMeta(name, 'gauge', m);
          for (const p of pts) {
            const v = has(p, 'asInt') ? toNumber(p.asInt) : (p.asDouble ?? 0);
            push(labelsFrom(p.attributes, { ...base, __name__: name }), sample(nanosToMs(p.timeUnixNano), v, startMs(p), ((p.flags ?? 0) & NO_RECORDED_VALUE) !== 0));
          }
        } else if (m.sum) {
          const pts = m.sum.dataPoints ?? [];
          if (m.sum.aggregationTemporality === DELTA) {
            reject(pts.length, `delta temporality is not supported (metric "${rawName}")`);
            continue;
          }
          const name = prometheusMetricName(rawName, unit, 'counter');
          addMeta(name, 'counter', m);
          for (const p of pts) {
            const v = has(p, 'asInt') ? toNumber(p.asInt) : (p.asDouble ?? 0);
            push(labelsFrom(p.attributes, { ...base, __name__: name }), sample(nanosToMs(p.timeUnixNano), v, startMs(p), ((p.flags ?? 0) & NO_RECORDED_VALUE) !== 0));
          }
        } else if (m.histogram) {
          const pts = m.histogram.dataPoints ?? [];
          if (m.histogram.aggregationTemporality === DELTA) {
            reject(pts.length, `delta temporality is not supported (metric "${rawName}")`);
            continue;
          }
          const name = prometheusMetricName(rawName, unit, 'histogram');
          addMeta(name, 'histogram', m);
          for (const p of pts) {
            const bounds = p.explicitBounds ?? [];
            const counts = p.bucketCounts ?? [];
            if (counts.length !== 0 && counts.length !== bounds.length + 1) {
              reject(1, `histogram "${rawName}" has ${counts.length} bucket counts for ${bounds.length} bounds`);
              continue;
            }
            const t = nanosToMs(p.timeUnixNano);
            const st = startMs(p);
            const stale = ((p.flags ?? 0) & NO_RECORDED_VALUE) !== 0;
            const count = toNumber(p.count);
            if (has(p, 'sum')) push(labelsFrom(p.attributes, { ...base, __name__: name + '_sum' }), sample(t, p.sum ?? 0, st, stale));
            push(labelsFrom(p.attributes, { ...base, __name__: name + '_count' }), sample(t, count, st, stale));
            let cum = 0;
            for (let i = 0; i < bounds.length && i < counts.length; i++) {
              cum += toNumber(counts[i]);
              push(labelsFrom(p.attributes, { ...base, __name__: name + '_bucket', le: formatFloat(bounds[i]!) }), sample(t, cum, st, stale));
            }
            push(labelsFrom(p.attributes, { ...base, __name__: name + '_bucket', le: '+Inf' }), sample(t, count, st, stale));
          }
        } else if (m.exponentialHistogram) {
          const pts = m.exponentialHistogram.dataPoints ?? [];
          if (m.exponentialHistogram.aggregationTemporality === DELTA) {
            reject(pts.length, `delta temporality is not supported (metric "${rawName}")`);
            continue;
          }
          const name = prometheusMetricName(rawName, unit, 'histogram');
          addMeta(name, 'histogram', m);
          for (const p of pts) {
            const scale = p.scale ?? 0;
            if (scale < -4) {
              reject(1, `exponential histogram "${rawName}" has scale ${scale}, below the smallest native histogram schema -4`);
              continue;
            }
            const scaleDown = scale > 8 ? scale - 8 : 0;
            const pos = expBuckets(p.positive, scaleDown);
            const neg = expBuckets(p.negative, scaleDown);
            const t = nanosToMs(p.timeUnixNano);
            const labels = labelsFrom(p.attributes, { ...base, __name__: name });
            if (((p.flags ?? 0) & NO_RECORDED_VALUE) !== 0) {
              push(labels, sample(t, 0, startMs(p), true));
              continue;
            }
            const h: FloatHistogram = {
              counterResetHint: 'unknown',
              schema: scale - scaleDown,
              zeroThreshold: p.zeroThreshold ?? 0,
              zeroCount: toNumber(p.zeroCount),
              count: toNumber(p.count),
              sum: has(p, 'sum') ? (p.sum ?? 0) : 0,
              positiveSpans: pos.spans,
              positiveBuckets: pos.counts,
              negativeSpans: neg.spans,
              negativeBuckets: neg.counts,
            };
            const s: Sample = { t, v: 0, h };
            const st = startMs(p);
            if (st !== undefined) s.st = st;
            push(labels, s);
          }
        } else if (m.summary) {
          const name = prometheusMetricName(rawName, unit, 'summary');
          addMeta(name, 'summary', m);
          for (const p of m.summary.dataPoints ?? []) {
            const t = nanosToMs(p.timeUnixNano);
            const st = startMs(p);
            const stale = ((p.flags ?? 0) & NO_RECORDED_VALUE) !== 0;
            push(labelsFrom(p.attributes, { ...base, __name__: name + '_sum' }), sample(t, p.sum ?? 0, st, stale));
            push(labelsFrom(p.attributes, { ...base, __name__: name + '_count' }), sample(t, toNumber(p.count), st, stale));
            for (const q of p.quantileValues ?? []) {
              push(
                labelsFrom(p.attributes, { ...base, __name__: name, quantile: formatFloat(q.quantile ?? 0) }),
                sample(t, q.value ?? 0, st, stale),
              );
            }
          }
        } else {
          // A metric with no data (the spec allows an empty oneof): nothing to store.
        }
      }
    }

    // target_info carries the resource attributes that did not become job/instance.
    const info: Record<string, string> = {};
    for (const k of Object.keys(rattrs).sort()) {
      if (k === 'service.name' || k === 'service.namespace' || k === 'service.instance.id') continue;
      const name = sanitizeLabelName(k);
      const v = valueText(rattrs[k]);
      if (!name || v === '') continue;
      info[name] = info[name] !== undefined ? info[name] + ';' + v : v;
    }
    if (latest > 0 && Object.keys(info).length && (base.job || base.instance)) {
      res.series.push({ labels: { ...info, ...base, __name__: 'target_info' }, samples: [{ t: latest, v: 1 }] });
      if (!seenMeta.has('target_info')) {
        seenMeta.add('target_info');
        res.metadata.push({ metric: 'target_info', type: 'gauge', help: 'Target metadata', unit: '' });
      }
    }
  }
  res.series = mergeSeries(res.series);
  return res;
}

function countPoints(m: MetricMsg): number {
  return (
    (m.gauge?.dataPoints?.length ?? 0) +
    (m.sum?.dataPoints?.length ?? 0) +
    (m.histogram?.dataPoints?.length ?? 0) +
    (m.exponentialHistogram?.dataPoints?.length ?? 0) +
    (m.summary?.dataPoints?.length ?? 0)
  );
}

/** One entry per label set, samples in time order (the same series may appear in several points). */
function mergeSeries(list: MetricSeriesInput[]): MetricSeriesInput[] {
  const byKey = new Map<string, MetricSeriesInput>();
  for (const s of list) {
    const keys = Object.keys(s.labels).sort();
    let k = '';
    for (const n of keys) k += n + '\xff' + s.labels[n] + '\xff';
    const cur = byKey.get(k);
    if (cur) (cur.samples as Sample[]).push(...s.samples);
    else byKey.set(k, { labels: s.labels, samples: [...s.samples] });
  }
  for (const s of byKey.values()) if (s.samples.length > 1) (s.samples as Sample[]).sort((a, b) => a.t - b.t);
  return [...byKey.values()];
}
