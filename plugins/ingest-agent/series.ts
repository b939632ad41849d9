/**
 * Agent-compatible metrics intake (`/api/v2/series`): the agent's protobuf MetricPayload and the
 * JSON form the vendor's API client sends. Names: every character outside `[a-zA-Z0-9_:]`
 * becomes `_` (`system.cpu.user` → `system_cpu_user`); tags `k:v` → labels with the same
 * sanitising; resources → labels (`host` for type host).
 */
import { badRequest } from '../../kernel/errors.js';
import type { MetricMetadata, MetricSeriesInput, MetricType } from '../../kernel/models.js';
import { agentTypes, decodeStrict, int64Num, type Int64 } from './proto.js';

/** Agent MetricType numbers and names. */
const TYPE_NAMES = ['unspecified', 'count', 'rate', 'gauge'] as const;
type AgentMetricType = (typeof TYPE_NAMES)[number];

/**
 * Count and rate points are per-interval values, not Prometheus' cumulative counters, so they
 * are stored as submitted and described as gauges (rate() over them would be wrong).
 */
const PROM_TYPE: Record<AgentMetricType, MetricType> = {
  unspecified: 'unknown',
  count: 'gauge',
  rate: 'gauge',
  gauge: 'gauge',
};

export function sanitizeMetricName(name: string): string {
  let out = name.replace(/[^a-zA-Z0-9_:]/g, '_');
  if (/^[0-9]/.test(out)) out = '_' + out;
  return out;
}

export function sanitizeLabelName(name: string): string {
  let out = name.replace(/[^a-zA-Z0-9_]/g, '_');
  if (/^[0-9]/.test(out)) out = '_' + out;
  if (out.startsWith('__')) out = 'tag' + out;
  return out;
}

/** One agent series before mapping (shared with the sketch intake). */
export interface SeriesIn {
  metric: string;
  type: AgentMetricType;
  points: { timestamp: number; value: number }[];
  resources: { type: string; name: string }[];
  tags: string[];
  unit: string;
  interval: number;
  sourceTypeName: string;
}

function toSeries(s: SeriesIn, index: number): { series: MetricSeriesInput; metadata?: MetricMetadata } {
  if (s.metric === '') throw badRequest(`series ${index + 1}: "metric" is required`);
  const name = sanitizeMetricName(s.metric);
  const labels: Record<string, string> = { __name__: name };
  for (const r of s.resources) {
    if (!r.name) continue;
    const key = r.type === 'host' || r.type === '' ? 'host' : sanitizeLabelName(r.type);
    labels[key] ??= r.name;
  }
  for (const raw of s.tags) {
    const i = raw.indexOf(':');
    const k = sanitizeLabelName(i < 0 ? raw : raw.slice(0, i));
    const v = i < 0 ? 'true' : raw.slice(i + 1);
    if (k === '' || k === '__name__' || v === '' || k in labels) continue;
    labels[k] = v;
  }
  const samples = s.points.map((p, j) => {
    if (!Number.isFinite(p.timestamp)) throw badRequest(`series ${index + 1} point ${j + 1}: invalid timestamp`);
    if (typeof p.value !== 'number') throw badRequest(`series ${index + 1} point ${j + 1}: "value" must be a number`);
    return { t: Math.round(p.timestamp * 1000), v: p.value };
  });
  samples.sort((a, b) => a.t - b.t);
  const metadata: MetricMetadata | undefined =
    s.type !== 'unspecified' || s.unit
      ? {
          metric: name,
          type: PROM_TYPE[s.type],
          help: `${s.type} metric ${s.metric}${s.interval ? ` (interval ${s.interval}s)` : ''}`,
          unit: s.unit,
        }
      : undefined;
  return { series: { labels, samples }, metadata };
}

export function collect(list: SeriesIn[]): { metrics: MetricSeriesInput[]; metadata: MetricMetadata[] } {
  const metrics: MetricSeriesInput[] = [];
  const byName = new Map<string, MetricMetadata>();
  list.forEach((s, i) => {
    const r = toSeries(s, i);
    metrics.push(r.series);
    if (r.metadata) byName.set(r.metadata.metric, r.metadata);
  });
  return { metrics, metadata: [...byName.values()] };
}

// ---- protobuf ----------------------------------------------------------------------------------

interface PbSeries {
  resources: { type: string; name: string }[];
  metric: string;
  tags: string[];
  points: { value: number; timestamp: Int64 }[];
  type: number;
  unit: string;
  source_type_name: string;
  interval: Int64;
}

export function decodeSeriesProtobuf(body: Buffer) {
  let msg: { series: PbSeries[] };
  try {
    msg = decodeStrict(agentTypes().metricPayload, body) as unknown as { series: PbSeries[] };
  } catch (e) {
    throw badRequest(`malformed MetricPayload protobuf: ${(e as Error).message}`);
  }
  return collect(
    msg.series.map((s) => ({
      metric: s.metric,
      type: TYPE_NAMES[s.type] ?? 'unspecified',
      points: s.points.map((p) => ({ timestamp: int64Num(p.timestamp), value: p.value })),
      resources: s.resources,
      tags: s.tags,
      unit: s.unit,
      interval: int64Num(s.interval),
      sourceTypeName: s.source_type_name,
    })),
  );
}

// ---- JSON --------------------------------------------------------------------------------------

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function jsonType(v: unknown, where: string): AgentMetricType {
  if (v === undefined || v === null) return 'unspecified';
  if (typeof v === 'number' && TYPE_NAMES[v]) return TYPE_NAMES[v];
  if (typeof v === 'string' && (TYPE_NAMES as readonly string[]).includes(v.toLowerCase())) return v.toLowerCase() as AgentMetricType;
  throw badRequest(`${where}: "type" must be 0..3 or unspecified/count/rate/gauge`);
}

function stringList(v: unknown, where: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((t) => typeof t === 'string')) throw badRequest(`${where} must be an array of strings`);
  return v as string[];
}

export function decodeSeriesJson(body: Buffer) {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw badRequest(`malformed JSON: ${(e as Error).message}`);
  }
  if (!isObj(doc) || !Array.isArray(doc.series)) throw badRequest('body must be an object with a "series" array');
  const list: SeriesIn[] = doc.series.map((s: unknown, i: number) => {
    const where = `series ${i + 1}`;
    if (!isObj(s)) throw badRequest(`${where} is not an object`);
    if (typeof s.metric !== 'string') throw badRequest(`${where}: "metric" must be a string`);
    if (!Array.isArray(s.points)) throw badRequest(`${where}: "points" must be an array`);
    const points = s.points.map((p: unknown, j: number) => {
      // v2 points are objects; the v1 API's [timestamp, value] pairs are accepted too.
      if (Array.isArray(p) && p.length === 2) return { timestamp: Number(p[0]), value: Number(p[1]) };
      if (!isObj(p)) throw badRequest(`${where} point ${j + 1} is not an object`);
      return { timestamp: Number(p.timestamp), value: p.value as number };
    });
    const resources = Array.isArray(s.resources)
      ? s.resources.map((r: unknown) => (isObj(r) ? { type: String(r.type ?? ''), name: String(r.name ?? '') } : { type: '', name: '' }))
      : [];
    if (typeof s.host === 'string') resources.push({ type: 'host', name: s.host });
    return {
      metric: s.metric,
      type: jsonType(s.type, where),
      points,
      resources,
      tags: stringList(s.tags, `${where}: "tags"`),
      unit: typeof s.unit === 'string' ? s.unit : '',
      interval: typeof s.interval === 'number' ? s.interval : 0,
      sourceTypeName: typeof s.source_type_name === 'string' ? s.source_type_name : '',
    };
  });
  return collect(list);
}
