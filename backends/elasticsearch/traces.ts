/**
 * Traces on Elasticsearch: one document per span in a daily index (by span start), id derived
 * from (trace id, span id) so a re-sent span replaces itself. `labels` carries what RBAC scopes
 * spans by (resource string attributes and `service`); `kv` carries `key=value` of resource and
 * span attributes (non-strings as JSON) and `name=<span name>` for the equality prefilter;
 * `status` and `dur` (ns) serve the status and duration prefilters.
 */
import { compileAlternatives } from '../../kernel/matchers.js';
import type { AttributeValue, Labels, Span } from '../../kernel/models.js';
import type { TraceSearchQuery, TraceStore } from '../../kernel/storage.js';
import { spanLabels } from '../memory/index.js';
import { decodeSpan, encodeSpan, hashId, type StoredSpan } from './codec.js';
import type { Es, Query } from './es.js';
import { nsToMs } from './ordered-scan.js';
import { MatcherTranslator } from './query.js';

const DAY_MS = 86_400_000;
const PAGE = 5000;
/** `ignore_above` of the `kv` field (characters). */
const KV_MAX_CHARS = 8191;

interface SpanDoc {
  tid: string;
  sid: string;
  start: string;
  end: string;
  labels: Labels;
  kv: string[];
  status: string;
  dur: string;
  span: StoredSpan;
}

/** An attribute as the equality prefilter compares it: strings as is, others as JSON text. */
function attrString(v: AttributeValue | undefined): string | undefined {
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function keyValues(s: Span): string[] {
  const out = new Set<string>(['name=' + s.name]);
  for (const attrs of [s.resource, s.attributes]) {
    for (const [k, v] of Object.entries(attrs)) {
      const x = attrString(v);
      if (x !== undefined) out.add(`${k}=${x}`);
    }
  }
  return [...out];
}

export class EsTraceStore implements TraceStore {
  constructor(private readonly es: Es) {}

  async append(spans: readonly Span[]): Promise<void> {
    const ops: unknown[] = [];
    for (const s of spans) {
      const tid = s.traceId.toLowerCase();
      ops.push(
        { index: { _index: this.es.dailyIndex('spans', nsToMs(s.startTimeUnixNano)), _id: hashId(tid, s.spanId) } },
        {
          tid,
          sid: s.spanId,
          start: s.startTimeUnixNano.toString(),
          end: s.endTimeUnixNano.toString(),
          labels: spanLabels(s),
          kv: keyValues(s),
          status: s.status.code,
          dur: (s.endTimeUnixNano - s.startTimeUnixNano).toString(),
          span: encodeSpan(s),
        } satisfies SpanDoc,
      );
    }
    await this.es.bulk(ops);
  }

  async getTrace(traceId: string, scope?: Parameters<TraceStore['getTrace']>[1]): Promise<Span[]> {
    if (scope !== undefined && scope.length === 0) return [];
    const inScope = compileAlternatives(scope);
    const out: Span[] = [];
    // A trace's spans are few: scope is applied in process, exactly.
    for await (const hits of this.es.pages<SpanDoc>(this.es.pattern('spans'), { query: { term: { tid: traceId.toLowerCase() } }, sort: [{ sid: 'asc' }] }, PAGE)) {
      for (const h of hits) if (inScope(h._source!.labels)) out.push(decodeSpan(h._source!.span));
    }
    out.sort((a, b) => (a.startTimeUnixNano < b.startTimeUnixNano ? -1 : a.startTimeUnixNano > b.startTimeUnixNano ? 1 : 0));
    return out;
  }

  async *search(q: TraceSearchQuery): AsyncIterable<Span[]> {
    if (q.scope !== undefined && q.scope.length === 0) return;
    if (q.endNs <= q.startNs) return;
    // Spans are filed by start: look one day back for spans that started before the range.
    const index = this.es.indicesFor('spans', nsToMs(q.startNs) - DAY_MS, nsToMs(q.endNs - 1n));
    const inRange: Query = {
      bool: { filter: [{ range: { start: { lt: q.endNs.toString() } } }, { range: { end: { gte: q.startNs.toString() } } }] },
    };
    const tr = await new MatcherTranslator(this.es, index, inRange).build({ scope: q.scope });
    /** Spans the caller may see: in range and in scope. */
    const visibleQuery = tr.query;
    // A candidate trace has one visible span meeting every prefilter: they go in one query.
    const filter: Query[] = [visibleQuery];
    for (const [k, v] of Object.entries(q.attributes ?? {})) {
      // Longer values are not indexed (ignore_above): such a condition is not pushed down.
      if (k.length + v.length < KV_MAX_CHARS) filter.push({ term: { kv: `${k}=${v}` } });
    }
    if (q.statuses) filter.push({ terms: { status: [...q.statuses] } });
    if (q.minDurationNs !== undefined || q.maxDurationNs !== undefined) {
      filter.push({ range: { dur: { ...(q.minDurationNs !== undefined ? { gte: q.minDurationNs.toString() } : {}), ...(q.maxDurationNs !== undefined ? { lte: q.maxDurationNs.toString() } : {}) } } });
    }
    const candidateQuery: Query = { bool: { filter } };
    const inScope = compileAlternatives(q.scope);
    const cond = q.spanFilter ? exactCondition(q) : undefined;

    const self = this;
    async function* spansOf(tids: string[]): AsyncGenerator<Span[]> {
      const groups = new Map<string, Span[]>(tids.map((t) => [t, []]));
      const bq: Query = { bool: { filter: [visibleQuery, { terms: { tid: tids } }] } };
      for await (const hits of self.es.pages<SpanDoc>(index, { query: bq, sort: [{ tid: 'asc' }, { sid: 'asc' }] }, PAGE, undefined, q.signal)) {
        for (const h of hits) if (inScope(h._source!.labels)) groups.get(h._source!.tid)?.push(decodeSpan(h._source!.span));
      }
      for (const t of tids) {
        const g = groups.get(t)!;
        // The span filter is the caller's: it runs here, on the visible spans.
        if (g.length && (!cond || g.some(cond))) yield g;
      }
    }

    if (q.limit === undefined) {
      // Every candidate trace, in trace-id order, 500 at a time.
      let batch: string[] = [];
      for await (const b of this.es.composite(index, candidateQuery, [{ t: { terms: { field: 'tid' } } }], undefined, q.signal)) {
        batch.push(String(b.key.t));
        if (batch.length === 500) {
          yield* spansOf(batch);
          batch = [];
        }
      }
      if (batch.length) yield* spansOf(batch);
      return;
    }

    // The most recent traces first: candidate trace ids by their latest span start.
    const size = Math.min(10_000, Math.max(1, q.limit * 10));
    const res = await this.es.search<unknown>(index, {
      size: 0,
      query: candidateQuery,
      aggs: { t: { terms: { field: 'tid', size, order: { last: 'desc' } }, aggs: { last: { max: { field: 'start' } } } } },
    });
    const tids = ((res.aggregations?.t as { buckets?: { key: string }[] } | undefined)?.buckets ?? []).map((b) => String(b.key));
    for (let i = 0; i < tids.length; i += 500) {
      q.signal?.throwIfAborted();
      yield* spansOf(tids.slice(i, i + 500));
    }
  }
}

/** Every prefilter and the span filter, exactly, on one span (only used with a span filter). */
function exactCondition(q: TraceSearchQuery): (s: Span) => boolean {
  const attrs = Object.entries(q.attributes ?? {});
  const statuses = q.statuses ? new Set(q.statuses) : undefined;
  return (s) => {
    for (const [k, v] of attrs) {
      if (attrString(s.attributes[k]) !== v && attrString(s.resource[k]) !== v && !(k === 'name' && s.name === v)) return false;
    }
    if (statuses && !statuses.has(s.status.code)) return false;
    const d = s.endTimeUnixNano - s.startTimeUnixNano;
    if (q.minDurationNs !== undefined && d < q.minDurationNs) return false;
    if (q.maxDurationNs !== undefined && d > q.maxDurationNs) return false;
    return q.spanFilter ? q.spanFilter(s) : true;
  };
}
