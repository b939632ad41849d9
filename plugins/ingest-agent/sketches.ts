/**
 * Agent-compatible distribution intake (`/api/beta/sketches`): the agent's SketchPayload
 * protobuf, which the agent (and the vendor's collector exporter) sends for distribution metrics
 * and histograms — an empty payload on every flush even when there are none.
 *
 * Lookout keeps each sketch point's summary, as the vendor's own count/sum/min/max/avg
 * aggregations of a distribution: series `<metric>_count` (per-interval count), `_sum`, `_min`,
 * `_max`, `_avg`, labelled like `/api/v2/series` (tags, `host`). The sketch bins (percentiles)
 * are not kept.
 */
import { badRequest } from '../../kernel/errors.js';
import { agentTypes, decodeStrict, int64Num, type Int64 } from './proto.js';
import { collect, type SeriesIn } from './series.js';

interface PbSketchPoint {
  ts: Int64;
  cnt: Int64;
  min: number;
  max: number;
  avg: number;
  sum: number;
}

interface PbSketch {
  metric: string;
  host: string;
  tags: string[];
  distributions: PbSketchPoint[];
  dogsketches: PbSketchPoint[];
}

const STATS = ['count', 'sum', 'min', 'max', 'avg'] as const;

export function decodeSketchPayload(body: Buffer) {
  let msg: { sketches: PbSketch[] };
  try {
    msg = decodeStrict(agentTypes().sketchPayload, body) as unknown as { sketches: PbSketch[] };
  } catch (e) {
    throw badRequest(`malformed SketchPayload protobuf: ${(e as Error).message}`);
  }
  const list: SeriesIn[] = [];
  msg.sketches.forEach((sk, i) => {
    if (sk.metric === '') throw badRequest(`sketch ${i + 1}: "metric" is required`);
    const points = [...sk.dogsketches, ...sk.distributions];
    for (const stat of STATS) {
      list.push({
        metric: `${sk.metric}.${stat}`,
        // Counts are per flush interval, like the agent's count metrics.
        type: stat === 'count' ? 'count' : 'gauge',
        points: points.map((p) => ({
          timestamp: int64Num(p.ts),
          value: stat === 'count' ? int64Num(p.cnt) : p[stat],
        })),
        resources: sk.host ? [{ type: 'host', name: sk.host }] : [],
        tags: sk.tags,
        unit: '',
        interval: 0,
        sourceTypeName: '',
      });
    }
  });
  return collect(list);
}
