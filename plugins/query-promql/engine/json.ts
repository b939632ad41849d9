/** Prometheus /api/v1 JSON encoding of query results. */
import type { FloatHistogram } from '../../../kernel/models.js';
import type { PromResult } from './engine.js';
import { allBuckets } from './histogram.js';
import { formatFloat } from './mathutil.js';

const secs = (t: number) => t / 1000;

function histJSON(h: FloatHistogram): { count: string; sum: string; buckets?: [number, string, string, string][] } {
  const buckets: [number, string, string, string][] = [];
  for (const b of allBuckets(h)) {
    if (b.count === 0) continue;
    buckets.push([b.boundary, formatFloat(b.lo), formatFloat(b.hi), formatFloat(b.count)]);
  }
  const out: { count: string; sum: string; buckets?: [number, string, string, string][] } = {
    count: formatFloat(h.count),
    sum: formatFloat(h.sum),
  };
  if (buckets.length) out.buckets = buckets;
  return out;
}

export function resultToPrometheusJSON(r: PromResult): { resultType: string; result: unknown } {
  switch (r.type) {
    case 'scalar':
      return { resultType: 'scalar', result: [secs(r.t), formatFloat(r.v)] };
    case 'string':
      return { resultType: 'string', result: [secs(r.t), r.v] };
    case 'vector':
      return {
        resultType: 'vector',
        result: r.samples.map((s) =>
          s.h ? { metric: s.metric, histogram: [secs(s.t), histJSON(s.h)] } : { metric: s.metric, value: [secs(s.t), formatFloat(s.v)] },
        ),
      };
    case 'matrix':
      return {
        resultType: 'matrix',
        result: r.series.map((s) => {
          const o: { metric: unknown; values?: unknown[]; histograms?: unknown[] } = { metric: s.metric };
          const values = s.points.filter((p) => !p.h).map((p) => [secs(p.t), formatFloat(p.v)]);
          const hists = s.points.filter((p) => p.h).map((p) => [secs(p.t), histJSON(p.h!)]);
          if (values.length) o.values = values;
          if (hists.length) o.histograms = hists;
          return o;
        }),
      };
  }
}
