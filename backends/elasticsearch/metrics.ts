/**
 * Metrics on Elasticsearch. Two kinds of daily indices:
 *  - `series`: one document per (series, UTC hour it has samples in) with its labels — the
 *    inverted index. Series, label names/values and cardinality are aggregations over it.
 *  - `samples`: one document per (series, appended batch, day) with the samples as raw float64
 *    bytes, ordered by a write-order number so that duplicates resolve to the last write.
 * Hour granularity means the label APIs see a series in any hour it had a sample, as Prometheus'
 * blocks answer at block granularity; `select` filters samples exactly.
 */
import { compileAlternatives, compileMatchers, type LabelMatcher, type MatcherAlternatives } from '../../kernel/matchers.js';
import type { FloatHistogram, Labels, MetricMetadata, MetricSeriesInput, Sample } from '../../kernel/models.js';
import type { CardinalityQuery, CardinalityStats, MetricStore, SelectHints, StoredSeries } from '../../kernel/storage.js';
import { decodeChunk, encodeChunk, hashId, labelsDocKey, parseLabelsDocKey, seriesId, type ChunkPayload } from './codec.js';
import { dayStart, type Es, type Query } from './es.js';
import { MatcherTranslator, type Translation } from './query.js';
import type { WriteOrder } from './write-order.js';

const HOUR_MS = 3_600_000;
/** Series documents known to exist, so repeated appends skip re-creating them. */
const SEEN_LIMIT = 500_000;
const SELECT_BATCH = 500;
const PAGE = 5000;
const CARD_PRECISION = 40_000;

interface SeriesRef {
  labels: Labels;
  lk: string;
  sid: string;
}

interface ChunkDoc {
  sid: string;
  p: ChunkPayload;
}

export class EsMetricStore implements MetricStore {
  private seen = new Set<string>();

  constructor(
    private readonly es: Es,
    private readonly order: WriteOrder,
  ) {}

  /** Forgets which series documents exist (after retention deleted some). */
  forgetSeen(): void {
    this.seen = new Set();
  }

  async append(input: readonly MetricSeriesInput[]): Promise<void> {
    const ops: unknown[] = [];
    const wo = this.order.next();
    const newIds: string[] = [];
    for (const s of input) {
      if (s.samples.length === 0) continue;
      const lk = labelsDocKey(s.labels);
      const sid = seriesId(lk);
      const byDay = new Map<number, Sample[]>();
      const hours = new Set<number>();
      for (const smp of s.samples) {
        const d = dayStart(smp.t);
        let list = byDay.get(d);
        if (!list) byDay.set(d, (list = []));
        list.push(smp);
        hours.add(Math.floor(smp.t / HOUR_MS) * HOUR_MS);
      }
      for (const [day, samples] of byDay) {
        let mint = Infinity;
        let maxt = -Infinity;
        for (const x of samples) {
          if (x.t < mint) mint = x.t;
          if (x.t > maxt) maxt = x.t;
        }
        ops.push({ index: { _index: this.es.dailyIndex('samples', day) } }, { sid, mint, maxt, wo, p: encodeChunk(samples) });
      }
      for (const hour of hours) {
        const id = `${sid}:${hour}`;
        if (this.seen.has(id)) continue;
        newIds.push(id);
        ops.push(
          { create: { _index: this.es.dailyIndex('series', hour), _id: id } },
          { sid, lk, labels: s.labels, names: Object.keys(s.labels), hour },
        );
      }
    }
    await this.es.bulk(ops, { ignoreConflicts: true });
    if (this.seen.size + newIds.length > SEEN_LIMIT) this.seen = new Set();
    for (const id of newIds) this.seen.add(id);
  }

  async appendMetadata(metadata: readonly MetricMetadata[]): Promise<void> {
    const ops: unknown[] = [];
    const wo = this.order.next();
    for (const m of metadata) {
      const key = hashId(m.metric, m.type, m.help, m.unit);
      ops.push({ index: { _index: this.es.metadataIndex, _id: key } }, { metric: m.metric, key, type: m.type, help: m.help, unit: m.unit, wo });
    }
    await this.es.bulk(ops);
  }

  async metadata(metric?: string, limit?: number): Promise<Map<string, MetricMetadata[]>> {
    const out = new Map<string, MetricMetadata[]>();
    const query: Query = metric !== undefined ? { term: { metric } } : { match_all: {} };
    type Doc = MetricMetadata & { wo: number };
    pages: for await (const hits of this.es.pages<Doc>(
      this.es.metadataIndex,
      { query, sort: [{ metric: 'asc' }, { wo: 'desc' }, { key: 'asc' }] },
      PAGE,
    )) {
      for (const h of hits) {
        const d = h._source!;
        let list = out.get(d.metric);
        if (!list) {
          if (limit !== undefined && limit > 0 && out.size >= limit) break pages;
          out.set(d.metric, (list = []));
        }
        // As the other backends: the ten most recent distinct descriptions per metric.
        if (list.length < 10) list.push({ metric: d.metric, type: d.type, help: d.help, unit: d.unit });
      }
    }
    return out;
  }

  private translator(mint: number, maxt: number): { index: string; t: MatcherTranslator } {
    const index = this.es.indicesFor('series', mint - HOUR_MS, maxt);
    const base: Query = { range: { hour: { lte: maxt, gt: mint - HOUR_MS } } };
    return { index, t: new MatcherTranslator(this.es, index, base) };
  }

  private async translate(
    sets: readonly (readonly LabelMatcher[])[],
    mint: number,
    maxt: number,
    scope: MatcherAlternatives | undefined,
  ): Promise<{ index: string; tr: Translation }> {
    const { index, t } = this.translator(mint, maxt);
    return { index, tr: await t.build({ sets, scope }) };
  }

  /** Series matching any set (none = all) within scope, sorted by label set; filtered exactly. */
  private async matching(
    sets: readonly (readonly LabelMatcher[])[],
    mint: number,
    maxt: number,
    scope: MatcherAlternatives | undefined,
    signal?: AbortSignal,
  ): Promise<SeriesRef[]> {
    if (scope !== undefined && scope.length === 0) return [];
    const { index, tr } = await this.translate(sets, mint, maxt, scope);
    const inScope = compileAlternatives(scope);
    const preds = sets.length ? sets.map(compileMatchers) : [() => true];
    const out: SeriesRef[] = [];
    for await (const b of this.es.composite(index, tr.query, [{ lk: { terms: { field: 'lk' } } }], undefined, signal)) {
      const lk = String(b.key.lk);
      const labels = parseLabelsDocKey(lk);
      // Cheap and makes the result exact when a regex could not be pushed down.
      if (!inScope(labels) || !preds.some((p) => p(labels))) continue;
      out.push({ labels, lk, sid: seriesId(lk) });
    }
    return out;
  }

  async *select(matchers: readonly LabelMatcher[], mint: number, maxt: number, hints?: SelectHints): AsyncIterable<StoredSeries> {
    const refs = await this.matching([matchers], mint, maxt, hints?.scope, hints?.signal);
    const index = this.es.indicesFor('samples', mint, maxt);
    for (let i = 0; i < refs.length; i += SELECT_BATCH) {
      const batch = refs.slice(i, i + SELECT_BATCH);
      const chunks = new Map<string, ChunkPayload[]>();
      const query: Query = {
        bool: {
          filter: [{ terms: { sid: batch.map((r) => r.sid) } }, { range: { mint: { lte: maxt } } }, { range: { maxt: { gte: mint } } }],
        },
      };
      // Write order, so that a later duplicate overwrites an earlier one; (sid, wo, mint) is
      // unique because one append writes one chunk per series and day.
      for await (const hits of this.es.pages<ChunkDoc>(index, { query, sort: [{ sid: 'asc' }, { wo: 'asc' }, { mint: 'asc' }] }, PAGE, undefined, hints?.signal)) {
        for (const h of hits) {
          const d = h._source!;
          let list = chunks.get(d.sid);
          if (!list) chunks.set(d.sid, (list = []));
          list.push(d.p);
        }
      }
      for (const ref of batch) {
        const list = chunks.get(ref.sid);
        if (!list) continue;
        const s = mergeChunks(ref.labels, list, mint, maxt);
        if (s) yield s;
      }
    }
  }

  async series(sets: readonly (readonly LabelMatcher[])[], mint: number, maxt: number, scope?: MatcherAlternatives): Promise<Labels[]> {
    return (await this.matching(sets, mint, maxt, scope)).map((r) => r.labels);
  }

  async labelNames(sets: readonly (readonly LabelMatcher[])[], mint: number, maxt: number, scope?: MatcherAlternatives): Promise<string[]> {
    if (scope !== undefined && scope.length === 0) return [];
    const { index, tr } = await this.translate(sets, mint, maxt, scope);
    if (!tr.exact) {
      const names = new Set<string>();
      for (const r of await this.matching(sets, mint, maxt, scope)) for (const n of Object.keys(r.labels)) names.add(n);
      return [...names].sort();
    }
    const out: string[] = [];
    for await (const b of this.es.composite(index, tr.query, [{ n: { terms: { field: 'names' } } }])) out.push(String(b.key.n));
    return out.sort();
  }

  async labelValues(
    name: string,
    sets: readonly (readonly LabelMatcher[])[],
    mint: number,
    maxt: number,
    scope?: MatcherAlternatives,
  ): Promise<string[]> {
    if (scope !== undefined && scope.length === 0) return [];
    const { index, tr } = await this.translate(sets, mint, maxt, scope);
    if (!tr.exact) {
      const vals = new Set<string>();
      for (const r of await this.matching(sets, mint, maxt, scope)) {
        const v = r.labels[name];
        if (v !== undefined) vals.add(v);
      }
      return [...vals].sort();
    }
    const out: string[] = [];
    for await (const b of this.es.composite(index, tr.query, [{ v: { terms: { field: `labels.${name}` } } }])) out.push(String(b.key.v));
    return out.sort();
  }

  async cardinality(q: CardinalityQuery): Promise<CardinalityStats> {
    const empty: CardinalityStats = { totalSeries: 0, seriesByMetric: new Map(), seriesByLabel: new Map(), distinctValuesByLabel: new Map() };
    if (q.scope !== undefined && q.scope.length === 0) return empty;
    const want = q.labels && q.labels.length ? new Set(q.labels) : undefined;
    const { index, tr } = await this.translate(q.matcherSets, q.mint, q.maxt, q.scope);
    if (!tr.exact) return this.cardinalityInProcess(q, want);
    const sidCard = { cardinality: { field: 'sid', precision_threshold: CARD_PRECISION } };
    const res = await this.es.search<unknown>(index, { size: 0, query: tr.query, aggs: { total: sidCard } });
    const totalSeries = (res.aggregations?.total as { value?: number } | undefined)?.value ?? 0;
    const seriesByMetric = new Map<string, number>();
    for await (const b of this.es.composite(index, tr.query, [{ m: { terms: { field: 'labels.__name__', missing_bucket: true } } }], { s: sidCard })) {
      seriesByMetric.set(b.key.m === null ? '' : String(b.key.m), (b.s as { value: number }).value);
    }
    const seriesByLabel = new Map<string, number>();
    for await (const b of this.es.composite(index, tr.query, [{ n: { terms: { field: 'names' } } }], { s: sidCard })) {
      const n = String(b.key.n);
      if (!want || want.has(n)) seriesByLabel.set(n, (b.s as { value: number }).value);
    }
    const distinctValuesByLabel = new Map<string, number>();
    const names = [...seriesByLabel.keys()];
    for (let i = 0; i < names.length; i += 50) {
      const batch = names.slice(i, i + 50);
      // `direct`: Elasticsearch's global-ordinals path counts 0 for a flattened field's key when
      // it is the only aggregation (seen on 8.19); hashing the values directly is always right.
      const aggs = Object.fromEntries(
        batch.map((n, j) => [`v${j}`, { cardinality: { field: `labels.${n}`, precision_threshold: CARD_PRECISION, execution_hint: 'direct' as const } }]),
      );
      const r = await this.es.search<unknown>(index, { size: 0, query: tr.query, aggs });
      batch.forEach((n, j) => distinctValuesByLabel.set(n, (r.aggregations?.[`v${j}`] as { value?: number } | undefined)?.value ?? 0));
    }
    return { totalSeries, seriesByMetric, seriesByLabel, distinctValuesByLabel };
  }

  /** Exact statistics from the series list, when a matcher could not be pushed down. */
  private async cardinalityInProcess(q: CardinalityQuery, want: Set<string> | undefined): Promise<CardinalityStats> {
    const list = await this.matching(q.matcherSets, q.mint, q.maxt, q.scope);
    const seriesByMetric = new Map<string, number>();
    const seriesByLabel = new Map<string, number>();
    const values = new Map<string, Set<string>>();
    for (const { labels } of list) {
      const name = labels.__name__ ?? '';
      seriesByMetric.set(name, (seriesByMetric.get(name) ?? 0) + 1);
      for (const [k, v] of Object.entries(labels)) {
        if (want && !want.has(k)) continue;
        seriesByLabel.set(k, (seriesByLabel.get(k) ?? 0) + 1);
        let set = values.get(k);
        if (!set) values.set(k, (set = new Set()));
        set.add(v);
      }
    }
    return {
      totalSeries: list.length,
      seriesByMetric,
      seriesByLabel,
      distinctValuesByLabel: new Map([...values].map(([k, v]) => [k, v.size])),
    };
  }
}

/** Merges chunks (in write order) into one sorted series within [mint, maxt]; last write wins. */
function mergeChunks(labels: Labels, chunks: ChunkPayload[], mint: number, maxt: number): StoredSeries | undefined {
  // Index of the winning (chunk, position) per timestamp.
  const decoded = chunks.map(decodeChunk);
  const win = new Map<number, [number, number]>();
  decoded.forEach((c, ci) => {
    for (let i = 0; i < c.t.length; i++) {
      const t = c.t[i]!;
      if (t >= mint && t <= maxt) win.set(t, [ci, i]);
    }
  });
  if (win.size === 0) return undefined;
  const ts = [...win.keys()].sort((a, b) => a - b);
  const n = ts.length;
  const timestamps = new Float64Array(ts);
  const values = new Float64Array(n);
  // Values are copied as raw 32-bit words: a float read into a JS number may lose its NaN payload
  // (the staleness marker) on some engines' paths; words cannot.
  const valueWords = new Uint32Array(values.buffer);
  const chunkWords = decoded.map((c) => new Uint32Array(c.v.buffer, c.v.byteOffset, c.v.length * 2));
  let histograms: (FloatHistogram | undefined)[] | undefined;
  let startTimestamps: Float64Array | undefined;
  for (let k = 0; k < n; k++) {
    const [ci, i] = win.get(ts[k]!)!;
    const c = decoded[ci]!;
    const w = chunkWords[ci]!;
    valueWords[2 * k] = w[2 * i]!;
    valueWords[2 * k + 1] = w[2 * i + 1]!;
    const h = c.h?.[i];
    if (h) {
      histograms ??= new Array<FloatHistogram | undefined>(n).fill(undefined);
      histograms[k] = h;
    }
    const st = c.st?.[i];
    if (st !== undefined && !Number.isNaN(st)) {
      startTimestamps ??= new Float64Array(n).fill(NaN);
      startTimestamps[k] = st;
    }
  }
  const out: StoredSeries = { labels, timestamps, values };
  if (histograms) out.histograms = histograms;
  if (startTimestamps) out.startTimestamps = startTimestamps;
  return out;
}
