/**
 * Metric-stream records (the cloud provider's "JSON" output format: one object per line,
 * `{metric_stream_name, account_id, region, namespace, metric_name, dimensions, timestamp,
 * value: {max, min, sum, count, p99, ...}, unit}`) to series.
 *
 * Naming: `<namespace>_<metric_name>_<statistic>`, each part snake_cased and lowercased, every
 * character outside `[a-z0-9_]` replaced by `_` and runs of `_` collapsed:
 * `AWS/EC2` + `CPUUtilization` + `max` → `aws_ec2_cpu_utilization_max`,
 * `AWS/ApplicationELB` + `RequestCount` + `sum` → `aws_application_elb_request_count_sum`.
 * Labels: `namespace`, `metric` (both verbatim), `statistic`, `region`, `account_id`,
 * `metric_stream_name`, and each dimension under its snake_cased name
 * (`InstanceId` → `instance_id`; a dimension whose name collides with those gets a
 * `dimension_` prefix).
 */
import { badRequest } from '../../kernel/errors.js';
import { labelsKey, type MetricMetadata, type MetricSeriesInput } from '../../kernel/models.js';

export function snake(s: string): string {
  return s
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');
}

export function seriesName(namespace: string, metric: string, stat: string): string {
  const name = [snake(namespace), snake(metric), snake(stat)].filter(Boolean).join('_');
  return /^[0-9]/.test(name) ? '_' + name : name;
}

const RESERVED = new Set(['__name__', 'namespace', 'metric', 'statistic', 'region', 'account_id', 'metric_stream_name', 'unit']);

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export class MetricStreamBatch {
  private readonly series = new Map<string, MetricSeriesInput>();
  private readonly metadata = new Map<string, MetricMetadata>();

  /** Adds one metric-stream JSON object; `where` names it in errors. */
  add(line: unknown, where: string): void {
    if (!isObj(line)) throw badRequest(`${where} is not a JSON object`);
    const { namespace, metric_name: metric, timestamp, value } = line;
    if (typeof namespace !== 'string' || namespace === '') throw badRequest(`${where}: "namespace" is required`);
    if (typeof metric !== 'string' || metric === '') throw badRequest(`${where}: "metric_name" is required`);
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) throw badRequest(`${where}: "timestamp" must be epoch milliseconds`);
    if (!isObj(value)) throw badRequest(`${where}: "value" must be an object of statistics`);
    const base: Record<string, string> = { namespace, metric };
    for (const k of ['region', 'account_id', 'metric_stream_name'] as const) {
      if (typeof line[k] === 'string' && line[k] !== '') base[k] = line[k] as string;
    }
    if (line.dimensions !== undefined) {
      if (!isObj(line.dimensions)) throw badRequest(`${where}: "dimensions" must be an object`);
      for (const [k, v] of Object.entries(line.dimensions)) {
        let name = snake(k) || 'dimension';
        if (/^[0-9]/.test(name)) name = '_' + name;
        if (RESERVED.has(name)) name = 'dimension_' + name;
        if (v !== null && v !== undefined && v !== '') base[name] = String(v);
      }
    }
    const unit = typeof line.unit === 'string' && line.unit !== 'None' ? line.unit : '';
    for (const [stat, v] of Object.entries(value)) {
      if (typeof v !== 'number') throw badRequest(`${where}: statistic "${stat}" must be a number`);
      const name = seriesName(namespace, metric, stat);
      const labels = { __name__: name, ...base, statistic: stat };
      const key = labelsKey(labels);
      let s = this.series.get(key);
      if (!s) this.series.set(key, (s = { labels, samples: [] }));
      s.samples.push({ t: Math.round(timestamp), v });
      if (!this.metadata.has(name)) {
        this.metadata.set(name, {
          metric: name,
          type: 'gauge',
          help: `${namespace} ${metric} (${stat} over the stream period)`,
          unit,
        });
      }
    }
  }

  result(): { metrics: MetricSeriesInput[]; metadata: MetricMetadata[] } {
    const metrics = [...this.series.values()];
    for (const s of metrics) s.samples.sort((a, b) => a.t - b.t);
    return { metrics, metadata: [...this.metadata.values()] };
  }
}
