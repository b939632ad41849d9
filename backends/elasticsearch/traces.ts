/**
 * Traces on Elasticsearch: one document per span in a daily index (by span start), id derived
 * from (trace id, span id) so a re-sent span replaces itself. `labels` carries what RBAC scopes
 * spans by (resource string attributes and `service`); `kv` carries `key=value` of scalar
 * resource and span attributes for the equality prefilter.
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

interface SpanDoc {
  tid: string;
  sid: string;
  start: string;
  end: string;
  labels: Labels;
  kv: string[];
  span: StoredSpan;
}

function scalar(v: AttributeValue): string | undefined {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
}

function keyValues(s: Span): string[] {
  const out = new Set<string>();
  for (const attrs of [s.resource, s.attributes]) {
    for (const [k, v] of Object.entries(attrs)) {
      const x = scalar(v);
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
    const base: Query = {
      bool: { filter: [{ range: { start: { lt: q.endNs.toString() } } }, { range: { end: { gte: q.startNs.toString() } } }] },
    };
    const tr = await new MatcherTranslator(this.es, index, base).build({ scope: q.scope });
    const filter: Query[] = [tr.query];
    for (const [k, v] of Object.entries(q.attributes ?? {})) filter.push({ term: { kv: `${k}=${v}` } });
    const query: Query = { bool: { filter } };
    const inScope = compileAlternatives(q.scope);
    const visible = (d: SpanDoc) => inScope(d.labels);

    if (q.limit === undefined) {
      // Every matching trace, grouped from a scan sorted by trace id.
      let tid = '';
      let group: Span[] = [];
      for await (const hits of this.es.pages<SpanDoc>(index, { query, sort: [{ tid: 'asc' }, { sid: 'asc' }] }, PAGE, undefined, q.signal)) {
        for (const h of hits) {
          const d = h._source!;
          if (d.tid !== tid) {
            if (group.length) yield group;
            tid = d.tid;
            group = [];
          }
          if (visible(d)) group.push(decodeSpan(d.span));
        }
      }
      if (group.length) yield group;
      return;
    }

    // The most recent traces first: trace ids by their latest span start, then their spans.
    const size = Math.min(10_000, Math.max(1, q.limit * 10));
    const res = await this.es.search<unknown>(index, {
      size: 0,
      query,
      aggs: { t: { terms: { field: 'tid', size, order: { last: 'desc' } }, aggs: { last: { max: { field: 'start' } } } } },
    });
    const tids = ((res.aggregations?.t as { buckets?: { key: string }[] } | undefined)?.buckets ?? []).map((b) => String(b.key));
    for (let i = 0; i < tids.length; i += 500) {
      q.signal?.throwIfAborted();
      const batch = tids.slice(i, i + 500);
      const groups = new Map<string, Span[]>(batch.map((t) => [t, []]));
      const bq: Query = { bool: { filter: [query, { terms: { tid: batch } }] } };
      for await (const hits of this.es.pages<SpanDoc>(index, { query: bq, sort: [{ tid: 'asc' }, { sid: 'asc' }] }, PAGE, undefined, q.signal)) {
        for (const h of hits) if (visible(h._source!)) groups.get(h._source!.tid)?.push(decodeSpan(h._source!.span));
      }
      for (const t of batch) {
        const g = groups.get(t)!;
        if (g.length) yield g;
      }
    }
  }
}
