/**
 * `/api/v1/status/tsdb`: Prometheus' head-block cardinality statistics, which Prometheus users
 * (and Grafana's "TSDB status" views) read to find what drives series counts. Computed over the
 * series active in the last two hours (Prometheus' head block span) within the caller's RBAC
 * scope, so the figures never reveal series the caller cannot query.
 */
import { badRequest } from '../../kernel/errors.js';
import type { RequestContext } from '../../kernel/http/routes.js';
import type { PluginContext } from '../../kernel/plugin.js';
import { createQueryContext } from '../../kernel/query-context.js';
import { success, type PromEnvelope } from './response.js';

const HEAD_SPAN_MS = 2 * 3_600_000;
const DEFAULT_LIMIT = 10;

interface NameValue {
  name: string;
  value: number;
}

function top(counts: Map<string, number>, limit: number): NameValue[] {
  return [...counts]
    .map(([name, value]) => ({ name, value }))
    .sort((a, b) => b.value - a.value || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .slice(0, limit);
}

const bump = (m: Map<string, number>, k: string, by = 1) => m.set(k, (m.get(k) ?? 0) + by);

export async function tsdbStatus(plugin: PluginContext, ctx: RequestContext): Promise<PromEnvelope> {
  const form = await ctx.form();
  const raw = form.get('limit');
  let limit = DEFAULT_LIMIT;
  if (raw !== null && raw !== '') {
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 10_000) {
      throw badRequest('limit must be a positive number');
    }
    limit = Number(raw);
  }
  const qctx = createQueryContext(plugin, ctx.principal, { signal: ctx.signal });
  const scope = await qctx.scope('metrics');
  const maxt = Date.now();
  const mint = maxt - HEAD_SPAN_MS;
  const all = [[{ name: '__name__', op: '=~' as const, value: '.+' }]];
  const series = await qctx.storage.metrics.series(all, mint, maxt, scope);

  const byMetric = new Map<string, number>();
  const valuesByLabel = new Map<string, Set<string>>();
  const bytesByLabel = new Map<string, number>();
  const byPair = new Map<string, number>();
  for (const labels of series) {
    bump(byMetric, labels.__name__ ?? '');
    for (const [k, v] of Object.entries(labels)) {
      let set = valuesByLabel.get(k);
      if (!set) valuesByLabel.set(k, (set = new Set()));
      set.add(v);
      bump(byPair, `${k}=${v}`);
    }
  }
  // Like Prometheus: memory per label name is the bytes of its distinct values.
  for (const [k, set] of valuesByLabel) for (const v of set) bump(bytesByLabel, k, Buffer.byteLength(v));
  const valueCounts = new Map([...valuesByLabel].map(([k, s]) => [k, s.size]));

  return success({
    headStats: {
      numSeries: series.length,
      numLabelPairs: byPair.size,
      chunkCount: 0,
      minTime: series.length ? mint : 0,
      maxTime: series.length ? maxt : 0,
    },
    seriesCountByMetricName: top(byMetric, limit),
    labelValueCountByLabelName: top(valueCounts, limit),
    memoryInBytesByLabelName: top(bytesByLabel, limit),
    seriesCountByLabelValuePair: top(byPair, limit),
  });
}
