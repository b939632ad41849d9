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
  MetricMetadata,
  MetricSeriesInput,
  Span,
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
  appendMetadata(metadata: readonly MetricMetadata[]): Promise<void>;
  /** Series matching every matcher with samples in [mint, maxt] (inclusive, ms). */
  select(
    matchers: readonly LabelMatcher[],
    mint: number,
    maxt: number,
    hints?: SelectHints,
  ): AsyncIterable<StoredSeries>;
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

export interface LogStore {
  append(records: readonly LogRecord[]): Promise<void>;
  scan(query: LogScanQuery): AsyncIterable<LogBatch>;
  /** Records appended after `afterSeq`, in ingestion order (for live tail). */
  tail(afterSeq: number, scope?: MatcherAlternatives): Promise<{ records: LogRecord[]; seqs: number[] }>;
  /** The last sequence number assigned (0 when empty). */
  lastSeq(): number;
}

export interface TraceSearchQuery {
  startNs: bigint;
  endNs: bigint;
  /** Resource/span attribute equality pushdown (a prefilter). */
  attributes?: Readonly<Record<string, string>>;
  scope?: MatcherAlternatives;
  limit?: number;
  signal?: AbortSignal;
}

export interface TraceStore {
  append(spans: readonly Span[]): Promise<void>;
  getTrace(traceId: string, scope?: MatcherAlternatives): Promise<Span[]>;
  /** Spans of traces overlapping the range, grouped by trace. */
  search(query: TraceSearchQuery): AsyncIterable<Span[]>;
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
}
