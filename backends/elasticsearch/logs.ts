/**
 * Logs on Elasticsearch: one document per record in a daily index (by record timestamp), with a
 * cluster-wide ingestion sequence number. Labels are a `flattened` field (matchers, scope);
 * the message is analysed text used only as a case-insensitive substring prefilter; facets are
 * kept in `_source` only.
 */
import { compileAlternatives, type MatcherAlternatives } from '../../kernel/matchers.js';
import type { FacetValue, Labels, LogRecord } from '../../kernel/models.js';
import type { LabelColumn, LogBatch, LogColumnBatch, LogColumnScanQuery, LogScanQuery, LogStore } from '../../kernel/storage.js';
import type { Es, Query } from './es.js';
import { nsRange, nsToMs, orderedScan } from './ordered-scan.js';
import { MatcherTranslator } from './query.js';
import { SequenceCounter, SequencedWriter } from './sequence.js';

interface LogDoc {
  ts: string;
  seq: number;
  labels: Labels;
  message: string;
  facets: Record<string, FacetValue>;
}

const TAIL_MAX = 10_000;

/**
 * Substring terms as a superset query on the analysed message: every run of ASCII letters,
 * digits and `_` in a term lies inside one token of the standard tokenizer (it never splits such
 * runs), so `*run*` on the lowercased tokens keeps every record that contains the term.
 * Terms without such runs are left to the exact in-process check.
 */
export function termsPrefilter(terms: readonly string[] | undefined): Query[] {
  const out: Query[] = [];
  for (const t of terms ?? []) {
    for (const run of t.match(/[A-Za-z0-9_]+/g) ?? []) {
      if (run.length > 1000) continue;
      out.push({ wildcard: { message: { value: `*${run.toLowerCase()}*`, case_insensitive: true } } });
    }
  }
  return out;
}

function containsAll(message: string, terms: readonly string[] | undefined): boolean {
  if (!terms || terms.length === 0) return true;
  const lower = message.toLowerCase();
  return terms.every((t) => lower.includes(t.toLowerCase()));
}

function toRecord(d: LogDoc): LogRecord {
  return { timestampNs: BigInt(d.ts), message: d.message, labels: d.labels, facets: d.facets ?? {} };
}

export class EsLogStore implements LogStore {
  readonly writer: SequencedWriter<LogRecord>;

  constructor(private readonly es: Es) {
    const counter = new SequenceCounter(es, 'seq-logs');
    this.writer = new SequencedWriter<LogRecord>(es, counter, (r, seq) => [
      { index: { _index: es.dailyIndex('logs', nsToMs(r.timestampNs)) } },
      { ts: r.timestampNs.toString(), seq, labels: r.labels, message: r.message, facets: r.facets } satisfies LogDoc,
    ]);
  }

  async open(): Promise<void> {
    await this.writer.counter.load();
  }

  append(records: readonly LogRecord[]): Promise<void> {
    return this.writer.append(records);
  }

  lastSeq(): number {
    return this.writer.counter.current;
  }

  async tail(afterSeq: number, scope?: MatcherAlternatives): Promise<{ records: LogRecord[]; seqs: number[] }> {
    const records: LogRecord[] = [];
    const seqs: number[] = [];
    if (scope !== undefined && scope.length === 0) return { records, seqs };
    const inScope = compileAlternatives(scope);
    const res = await this.es.search<LogDoc>(this.es.pattern('logs'), {
      size: TAIL_MAX,
      query: { range: { seq: { gt: afterSeq } } },
      sort: [{ seq: 'asc' }],
    });
    for (const h of res.hits.hits) {
      const d = h._source!;
      if (!inScope(d.labels)) continue;
      records.push(toRecord(d));
      seqs.push(d.seq);
    }
    return { records, seqs };
  }

  async *scan(q: LogScanQuery): AsyncIterable<LogBatch> {
    const terms = q.terms?.filter((t) => t !== '');
    for await (const { docs, position } of orderedScan<LogDoc>(this.es, 'logs', q, termsPrefilter(terms), (d) => containsAll(d.message, terms))) {
      yield { records: docs.map(toRecord), seqs: docs.map((d) => d.seq), position };
    }
  }

  /**
   * Label columns for label-only aggregations. Weighted and without timestamps this is one
   * composite aggregation over the wanted labels: each bucket (a label combination and its
   * record count) is a weighted row, and no record is read. Otherwise records are read with only
   * their timestamp and labels.
   */
  async *scanColumns(q: LogColumnScanQuery): AsyncIterable<LogColumnBatch> {
    if (q.scope !== undefined && q.scope.length === 0) return;
    if (q.endNs <= q.startNs) return;
    if (q.weighted && !q.timestampsMs) {
      const index = this.es.indicesFor('logs', nsToMs(q.startNs), nsToMs(q.endNs - 1n));
      const tr = await new MatcherTranslator(this.es, index, nsRange(q.startNs, q.endNs)).build({ matchers: q.matchers, scope: q.scope });
      // Exact translation only: otherwise the records must be filtered in process, below.
      if (tr.exact) {
        if (q.labels.length === 0) {
          const res = await this.es.search<unknown>(index, { size: 0, query: tr.query, track_total_hits: true });
          const total = typeof res.hits.total === 'number' ? res.hits.total : (res.hits.total?.value ?? 0);
          if (total > 0) yield { length: 1, labels: [], weights: Float64Array.of(total) };
          return;
        }
        const sources = q.labels.map((n, j) => ({ [`l${j}`]: { terms: { field: `labels.${n}`, missing_bucket: true } } }));
        let rows: { key: Record<string, unknown>; n: number }[] = [];
        const flush = (): LogColumnBatch => {
          const labels = q.labels.map((_, j) => column(rows.map((r) => r.key[`l${j}`])));
          const out = { length: rows.length, labels, weights: Float64Array.from(rows, (r) => r.n) };
          rows = [];
          return out;
        };
        for await (const b of this.es.composite(index, tr.query, sources, undefined, q.signal)) {
          rows.push({ key: b.key, n: b.doc_count });
          if (rows.length === 5000) yield flush();
        }
        if (rows.length) yield flush();
        return;
      }
    }
    const scan = orderedScan<LogDoc>(this.es, 'logs', { ...q, order: 'asc' }, [], () => true, ['ts', 'seq', 'labels']);
    for await (const { docs } of scan) {
      const labels = q.labels.map((n) => column(docs.map((d) => d.labels[n])));
      if (!q.timestampsMs) yield { length: docs.length, labels };
      else yield { length: docs.length, labels, timestampsMs: Float64Array.from(docs, (d) => Number(BigInt(d.ts) / 1_000_000n)) };
    }
  }
}

/** Dictionary-codes one column; null/undefined (label absent) is -1. */
function column(values: readonly unknown[]): LabelColumn {
  const dict: string[] = [];
  const index = new Map<string, number>();
  const codes = new Int32Array(values.length);
  values.forEach((v, i) => {
    if (v === null || v === undefined) {
      codes[i] = -1;
      return;
    }
    const s = String(v);
    let c = index.get(s);
    if (c === undefined) index.set(s, (c = dict.push(s) - 1));
    codes[i] = c;
  });
  return { dict, codes };
}
