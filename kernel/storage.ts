/**
 * The storage extension point: narrow, streaming interfaces per signal, in the spirit of
 * Prometheus' Appender / Querier.Select. Queries push time ranges, label matchers and the
 * caller's RBAC scope down; a backend may accept more pushdown but never must.
 */
import type { LabelMatcher, MatcherAlternatives } from './matchers.js';
import type {
  EventRecord,
  FloatHistogram,
  Labels,
  LogRecord,
  MetricColumns,
  MetricMetadata,
  MetricSeriesInput,
  Span,
  SpanStatusCode,
} from './models.js';

/** Hints a query gives a backend; all optional. */
export interface SelectHints {
  /** Evaluation step in ms, for backends that can downsample. */
  step?: number;
  /** Outer function name (e.g. "rate"), as Prometheus' SelectHints.Func. */
  func?: string;
  /** RBAC scope: only series matching one alternative may be returned. */
  scope?: MatcherAlternatives;
  /** Abort reading when set. */
  signal?: AbortSignal;
}

/**
 * One series read back. `timestamps` are Unix ms ascending; `values[i]` is the float at
 * `timestamps[i]` (STALE_NAN for staleness markers). Where `histograms[i]` is set the sample
 * is a native histogram and `values[i]` is meaningless.
 */
export interface StoredSeries {
  labels: Labels;
  timestamps: Float64Array;
  values: Float64Array;
  histograms?: (FloatHistogram | undefined)[];
  /** Start timestamps (ms) per sample, NaN where absent; only when the producer sent any. */
  startTimestamps?: Float64Array;
}

export interface MetricStore {
  /** Appends samples. Resolves once the samples are durable per the backend's fsync policy. */
  append(series: readonly MetricSeriesInput[]): Promise<void>;
  /**
   * Optional fast path: appends a columnar batch of float samples (same semantics and
   * durability as `append`). May cache its series numbers in the batch's SeriesHandles.
   * The ingest pipeline falls back to `append(columnsToSeries(c))` when absent.
   */
  appendColumns?(columns: MetricColumns): Promise<void>;
  appendMetadata(metadata: readonly MetricMetadata[]): Promise<void>;
  /** Series matching every matcher with samples in [mint, maxt] (inclusive, ms). */
  select(
    matchers: readonly LabelMatcher[],
    mint: number,
    maxt: number,
    hints?: SelectHints,
  ): AsyncIterable<StoredSeries>;
  /**
   * Optional: the same series as `select`, for backends whose reads never wait (in-process
   * stores). Query engines prefer it: no promise and no event-loop turn per series, which is a
   * good part of an instant query over thousands of series.
   */
  selectSync?(
    matchers: readonly LabelMatcher[],
    mint: number,
    maxt: number,
    hints?: SelectHints,
  ): Iterable<StoredSeries>;
  /** Label sets of series matching any of the matcher sets with samples in [mint, maxt]. */
  series(
    matcherSets: readonly (readonly LabelMatcher[])[],
    mint: number,
    maxt: number,
    scope?: MatcherAlternatives,
  ): Promise<Labels[]>;
  labelNames(
    matcherSets: readonly (readonly LabelMatcher[])[],
    mint: number,
    maxt: number,
    scope?: MatcherAlternatives,
  ): Promise<string[]>;
  labelValues(
    name: string,
    matcherSets: readonly (readonly LabelMatcher[])[],
    mint: number,
    maxt: number,
    scope?: MatcherAlternatives,
  ): Promise<string[]>;
  /** Metadata by metric name; `metric` restricts to one name. */
  metadata(metric?: string, limit?: number): Promise<Map<string, MetricMetadata[]>>;
  /**
   * Cardinality statistics from the index (never by scanning samples): for series active in
   * [mint, maxt] and matching any matcher set (none = all) within scope.
   */
  cardinality(query: CardinalityQuery): Promise<CardinalityStats>;
}

export interface CardinalityQuery {
  mint: number;
  maxt: number;
  matcherSets: readonly (readonly LabelMatcher[])[];
  scope?: MatcherAlternatives;
  /** Restrict label statistics to these names (empty = all). */
  labels?: readonly string[];
}

export interface CardinalityStats {
  totalSeries: number;
  /** metric name → series count */
  seriesByMetric: Map<string, number>;
  /** label name → number of series carrying it */
  seriesByLabel: Map<string, number>;
  /** label name → number of distinct values */
  distinctValuesByLabel: Map<string, number>;
}

export interface LogScanQuery {
  /** [startNs, endNs) */
  startNs: bigint;
  endNs: bigint;
  /** AND of label matchers on `labels` (facets are not indexed). */
  matchers?: readonly LabelMatcher[];
  /** RBAC scope on labels. */
  scope?: MatcherAlternatives;
  /** Case-insensitive substrings that must all occur in the message (a prefilter; may be a superset). */
  terms?: readonly string[];
  /** Newest first (default) or oldest first. Ties: later-ingested first for desc. */
  order?: 'desc' | 'asc';
  /** Resume after this opaque position (returned with each batch). */
  after?: string;
  /** Upper bound on records wanted (the backend may return more; the caller stops early). */
  limit?: number;
  signal?: AbortSignal;
}

export interface LogBatch {
  records: LogRecord[];
  /** Ingestion sequence per record (monotonic per backend), parallel to `records`. */
  seqs: number[];
  /** Opaque position after the last record in this batch. */
  position: string;
}

/** Query of the optional columnar log scan (`LogStore.scanColumns`). */
export interface LogColumnScanQuery {
  /** [startNs, endNs) */
  startNs: bigint;
  endNs: bigint;
  /** AND of label matchers on `labels` (exact, not a prefilter). */
  matchers?: readonly LabelMatcher[];
  /** RBAC scope on labels (exact). */
  scope?: MatcherAlternatives;
  /** Label names wanted as dictionary-coded columns, in this order. */
  labels: readonly string[];
  /** Also return each record's timestamp as Unix ms, floor(ns / 1e6). */
  timestampsMs?: boolean;
  /**
   * The caller understands `LogColumnBatch.weights` (only meaningful without `timestampsMs`):
   * a backend may then fold records with equal labels into one weighted row, e.g. from per-block
   * per-stream record counts, instead of reading any column.
   */
  weighted?: boolean;
  signal?: AbortSignal;
}

/** One label column of a columnar batch: `codes[i]` indexes `dict`; -1 = the record lacks the label. */
export interface LabelColumn {
  readonly dict: readonly string[];
  /** null: every record of the batch has code 0 (dict of length 1) or lacks the label (empty dict). */
  readonly codes: Int32Array | null;
}

/** A batch of the columnar scan: parallel columns, `length` records. */
export interface LogColumnBatch {
  readonly length: number;
  /** Parallel to the query's `labels`. */
  readonly labels: readonly LabelColumn[];
  /** Present when `timestampsMs` was asked for. */
  readonly timestampsMs?: Float64Array;
  /**
   * Only when the query was `weighted`: row i stands for `weights[i]` records (absent = 1 each;
   * `length` then counts rows, not records).
   */
  readonly weights?: Float64Array;
}

export interface LogStore {
  append(records: readonly LogRecord[]): Promise<void>;
  scan(query: LogScanQuery): AsyncIterable<LogBatch>;
  /**
   * OPTIONAL: every record in range matching matchers and scope (exactly, no terms), in no
   * particular order, as dictionary-coded label columns (and ms timestamps when asked) instead
   * of LogRecords — for label-only aggregations (`* | count by service`, timeslice counts) that
   * would otherwise build a record per line. Query engines feature-check it and fall back to
   * `scan`. Dictionaries may differ between batches.
   */
  scanColumns?(query: LogColumnScanQuery): AsyncIterable<LogColumnBatch>;
  /** Records appended after `afterSeq`, in ingestion order (for live tail). */
  tail(afterSeq: number, scope?: MatcherAlternatives): Promise<{ records: LogRecord[]; seqs: number[] }>;
  /** The last sequence number assigned (0 when empty). */
  lastSeq(): number;
}

export interface TraceSearchQuery {
  startNs: bigint;
  endNs: bigint;
  /**
   * Resource/span attribute equality pushdown (a prefilter). Values are compared as strings
   * (arrays/maps as JSON); key `name` also matches the span name.
   */
  attributes?: Readonly<Record<string, string>>;
  /** Prefilter: span status is one of these. */
  statuses?: readonly SpanStatusCode[];
  /** Prefilter: span duration (end − start, ns) is at least / at most this. */
  minDurationNs?: bigint;
  maxDurationNs?: bigint;
  /**
   * Prefilter evaluated by the store on each visible span after its own pruning (e.g. a TraceQL
   * span filter compiled by the caller). Must be pure and cheap; it may be called on any span.
   */
  spanFilter?: (span: Readonly<Span>) => boolean;
  /**
   * Ask for whole traces: each group holds every span `getTrace(id, scope)` would return, in and
   * out of the range (candidacy still needs a visible span meeting the prefilters). Only stores
   * that set `TraceStore.searchesWholeTraces` honour it; others return their usual groups.
   */
  wholeTraces?: boolean;
  scope?: MatcherAlternatives;
  limit?: number;
  signal?: AbortSignal;
}

export interface TraceStore {
  append(spans: readonly Span[]): Promise<void>;
  getTrace(traceId: string, scope?: MatcherAlternatives): Promise<Span[]>;
  /**
   * Spans of traces overlapping the range, grouped by trace (each trace once). A trace is a
   * candidate when one and the same visible span (in range and scope) meets every prefilter
   * (attributes, statuses, durations, spanFilter). Prefilters only prune: a backend may ignore
   * any of them and return more, never fewer, traces. Backends that can return the most
   * recent traces first should.
   */
  search(query: TraceSearchQuery): AsyncIterable<Span[]>;
  /** OPTIONAL: true when `search` honours `wholeTraces` (callers then skip a getTrace per group). */
  readonly searchesWholeTraces?: boolean;
}

export interface EventScanQuery {
  startNs: bigint;
  endNs: bigint;
  matchers?: readonly LabelMatcher[];
  scope?: MatcherAlternatives;
  order?: 'desc' | 'asc';
  after?: string;
  limit?: number;
  signal?: AbortSignal;
}

export interface EventStore {
  append(events: readonly EventRecord[]): Promise<void>;
  scan(query: EventScanQuery): AsyncIterable<{ events: EventRecord[]; seqs: number[]; position: string }>;
}

/** A JSON value kept in the MetaStore. */
export type MetaValue =
  | string
  | number
  | boolean
  | null
  | MetaValue[]
  | { [key: string]: MetaValue };

export interface MetaTransaction {
  get(collection: string, key: string): MetaValue | undefined;
  put(collection: string, key: string, value: MetaValue): void;
  delete(collection: string, key: string): boolean;
  list(collection: string): [string, MetaValue][];
}

/**
 * Small transactional key-value store for policies, teams, facets, jobs. A transaction's writes
 * become durable together or not at all.
 */
export interface MetaStore {
  get(collection: string, key: string): Promise<MetaValue | undefined>;
  list(collection: string): Promise<[string, MetaValue][]>;
  /** Runs `fn` atomically (serialized with other transactions); its writes commit together. */
  transaction<T>(fn: (tx: MetaTransaction) => T): Promise<T>;
}

/** What a storage backend plugin provides. */
export interface StorageBackend {
  readonly name: string;
  readonly metrics: MetricStore;
  readonly logs: LogStore;
  readonly traces: TraceStore;
  readonly events: EventStore;
  readonly meta: MetaStore;
  /** Makes everything acknowledged durable (called on shutdown). */
  flush(): Promise<void>;
  close(): Promise<void>;
  /** Bytes used per signal, for /metrics. */
  sizes?(): Record<string, number>;
  /** Samples or records refused after acknowledgement rules (e.g. out of the out-of-order window), by reason. */
  dropped?(): Record<string, number>;
}
