/**
 * The `api-cardinality` plugin: SPEC.md's Cardinality API under `/api/v1/cardinality/`. Counts
 * come from the metric index (MetricStore.cardinality), one index query per bucket, within the
 * caller's RBAC scope for the `metrics` stream.
 *
 * Authorization: any authenticated role (Viewer and up) may read cardinality; a principal whose
 * RBAC scope grants nothing of the `metrics` stream gets 403 "insufficient permissions".
 */
import { forbidden } from '../../kernel/errors.js';
import type { RequestContext } from '../../kernel/http/routes.js';
import type { LabelMatcher, MatcherAlternatives } from '../../kernel/matchers.js';
import { definePlugin, type PluginContext } from '../../kernel/plugin.js';
import { createQueryContext } from '../../kernel/query-context.js';
import type { CardinalityStats, MetricStore } from '../../kernel/storage.js';
import { INSTANT_LOOKBACK_MS, labelParams, parseCommon, requireDistinctCount, type Bucket } from './params.js';

export const CARDINALITY_BASE = '/api/v1/cardinality';

interface Scoped {
  metrics: MetricStore;
  scope: MatcherAlternatives | undefined;
}

async function scoped(plugin: PluginContext, ctx: RequestContext): Promise<Scoped> {
  const qctx = createQueryContext(plugin, ctx.principal, { signal: ctx.signal });
  const scope = await qctx.scope('metrics');
  if (scope !== undefined && scope.length === 0) {
    throw forbidden('insufficient permissions: no access to the metrics stream');
  }
  return { metrics: qctx.storage.metrics, scope };
}

async function perBucket<T>(
  s: Scoped,
  buckets: readonly Bucket[],
  matchSets: LabelMatcher[][],
  labels: readonly string[],
  shape: (b: Bucket, stats: CardinalityStats) => T,
): Promise<T[]> {
  const out: T[] = [];
  for (const b of buckets) {
    // An instant bucket (duration 0) counts series with a sample within the lookback.
    const mint = b.startMs === b.maxMs ? b.maxMs - INSTANT_LOOKBACK_MS : b.startMs;
    const stats = await s.metrics.cardinality({ mint, maxt: b.maxMs, matcherSets: matchSets, scope: s.scope, labels });
    out.push(shape(b, stats));
  }
  return out;
}

function toObject(m: Map<string, number>, only?: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  if (only && only.length) {
    for (const k of only) out[k] = m.get(k) ?? 0;
    return out;
  }
  for (const k of [...m.keys()].sort()) out[k] = m.get(k)!;
  return out;
}

const bucketStart = (b: Bucket) => Math.floor(b.startMs / 1000);

export default definePlugin({
  name: 'api-cardinality',
  description: 'Cardinality API: series counts per metric, per label, and label value counts.',
  register(ctx) {
    const route = (path: string, handler: (r: RequestContext) => Promise<unknown>) =>
      ctx.route({ method: 'GET', path: CARDINALITY_BASE + path, family: 'json', auth: 'bearer', minRole: 'Viewer', handler });

    route('/metrics_series', async (r) => {
      const { buckets, matchSets } = parseCommon(r.query);
      const s = await scoped(ctx, r);
      return perBucket(s, buckets, matchSets, [], (b, st) => ({
        bucketStart: bucketStart(b),
        overallCardinality: st.totalSeries,
        metricNames: toObject(st.seriesByMetric),
      }));
    });

    route('/series', async (r) => {
      const { buckets, matchSets } = parseCommon(r.query);
      requireDistinctCount(r.query);
      const labels = labelParams(r.query, false);
      const s = await scoped(ctx, r);
      return perBucket(s, buckets, matchSets, labels, (b, st) => ({
        bucketStart: bucketStart(b),
        overallCardinality: st.totalSeries,
        labelNames: toObject(st.seriesByLabel, labels),
      }));
    });

    route('/label_values', async (r) => {
      const { buckets, matchSets } = parseCommon(r.query);
      requireDistinctCount(r.query);
      const labels = labelParams(r.query, true);
      const s = await scoped(ctx, r);
      return perBucket(s, buckets, matchSets, labels, (b, st) => ({
        bucketStart: bucketStart(b),
        labelNames: toObject(st.distinctValuesByLabel, labels),
      }));
    });
  },
});
