/**
 * The normalized record model: one shape per signal, produced by every receiver and consumed by
 * every storage backend and query language. Receivers translate wire formats into these; nothing
 * downstream ever sees a wire format.
 */

/** A label set. Keys are label names; `__name__` holds a metric name. */
export type Labels = Readonly<Record<string, string>>;

/** Prometheus' staleness marker: a specific NaN bit pattern (0x7ff0000000000002). */
export const STALE_NAN_BITS_HI = 0x7ff00000;
export const STALE_NAN_BITS_LO = 0x00000002;

const staleView = new DataView(new ArrayBuffer(8));
staleView.setUint32(0, STALE_NAN_BITS_HI);
staleView.setUint32(4, STALE_NAN_BITS_LO);
/** The float value that marks a series as stale. Compare with {@link isStaleMarker}, never `===`. */
export const STALE_NAN: number = staleView.getFloat64(0);

const probe = new DataView(new ArrayBuffer(8));
export function isStaleMarker(v: number): boolean {
  if (v === v) return false; // not NaN
  probe.setFloat64(0, v);
  return probe.getUint32(0) === STALE_NAN_BITS_HI && probe.getUint32(4) === STALE_NAN_BITS_LO;
}

/** A span of populated buckets in a native histogram (Prometheus' BucketSpan). */
export interface BucketSpan {
  offset: number;
  length: number;
}

/**
 * A native histogram sample with absolute (float) bucket counts, as Prometheus' FloatHistogram.
 * Integer histograms from remote write are converted on ingest (delta-decoded).
 */
export interface FloatHistogram {
  /** 'unknown' | 'reset' | 'not_reset' | 'gauge' */
  counterResetHint: 'unknown' | 'reset' | 'not_reset' | 'gauge';
  schema: number;
  zeroThreshold: number;
  zeroCount: number;
  count: number;
  sum: number;
  positiveSpans: BucketSpan[];
  positiveBuckets: number[];
  negativeSpans: BucketSpan[];
  negativeBuckets: number[];
  /** Upper bounds of custom buckets (schema -53, NHCB). */
  customValues?: number[];
}

/** One sample. `h` is set for native histogram samples; then `v` is ignored. */
export interface Sample {
  /** Unix milliseconds. */
  t: number;
  v: number;
  h?: FloatHistogram;
  /** Start (created) timestamp in Unix ms when the producer sent one. */
  st?: number;
}

/** A series with samples, as receivers hand it to MetricStore.append. */
export interface MetricSeriesInput {
  labels: Labels;
  samples: Sample[];
}

export type MetricType =
  | 'counter'
  | 'gauge'
  | 'histogram'
  | 'gaugehistogram'
  | 'summary'
  | 'info'
  | 'stateset'
  | 'unknown';

export interface MetricMetadata {
  metric: string;
  type: MetricType;
  help: string;
  unit: string;
}

export type FacetValue = string | number | boolean;

/** A log record. */
export interface LogRecord {
  /** Unix nanoseconds, exact. */
  timestampNs: bigint;
  message: string;
  /** Indexed labels: svc_stream, service, host, level, source, ... */
  labels: Labels;
  /** Agent-extracted typed fields (keys without `@`). */
  facets: Readonly<Record<string, FacetValue>>;
}

export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | AttributeValue[]
  | { readonly [key: string]: AttributeValue };

export type Attributes = Readonly<Record<string, AttributeValue>>;

export type SpanKind = 'unspecified' | 'internal' | 'server' | 'client' | 'producer' | 'consumer';
export type SpanStatusCode = 'unset' | 'ok' | 'error';

export interface SpanEvent {
  timeUnixNano: bigint;
  name: string;
  attributes: Attributes;
  droppedAttributesCount?: number;
}

export interface SpanLink {
  traceId: string;
  spanId: string;
  traceState?: string;
  attributes: Attributes;
  droppedAttributesCount?: number;
}

/** A complete OTLP span. Ids are lowercase hex. */
export interface Span {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  traceState?: string;
  name: string;
  kind: SpanKind;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  status: { code: SpanStatusCode; message?: string };
  attributes: Attributes;
  resource: Attributes;
  scope: { name: string; version?: string; attributes?: Attributes };
  events: SpanEvent[];
  links: SpanLink[];
  droppedAttributesCount?: number;
  droppedEventsCount?: number;
  droppedLinksCount?: number;
}

export type EventSource = 'kubernetes' | 'webhook' | 'bus';

/** A Kubernetes event or object, a source-control webhook delivery or an event-bus event. */
export interface EventRecord {
  id: string;
  timestampNs: bigint;
  title: string;
  text: string;
  /** svc_stream="events", source, then namespace/kind/reason/type or repository/event, ... */
  labels: Labels;
  attributes: Attributes;
}

/**
 * A series as a columnar batch names it: its label set plus a slot in which a MetricStore may
 * remember its own series number for that label set. Receivers that see the same series again
 * (remote write repeats label sets byte for byte) hand back the same handle, so a store skips
 * hashing the labels; they create handles with `storeOwner: null, storeRef: -1` and never
 * touch those fields again. A store trusts the slot only when `storeOwner` is itself.
 */
export interface SeriesHandle {
  readonly labels: Labels;
  storeOwner: object | null;
  storeRef: number;
}

/**
 * Float samples in columns (the remote-write hot path): series k owns the samples
 * [offsets[k], offsets[k + 1]) of `timestamps` (Unix ms) and `values` (float bits kept exact,
 * staleness markers included). No histograms and no start timestamps: those travel as
 * MetricSeriesInput. Backends without MetricStore.appendColumns get it via {@link columnsToSeries}.
 */
export interface MetricColumns {
  series: SeriesHandle[];
  /** series.length + 1 entries. */
  offsets: Uint32Array;
  timestamps: Float64Array;
  values: Float64Array;
}

/** Number of samples in a columnar batch. */
export function columnsSampleCount(c: MetricColumns): number {
  return c.offsets[c.series.length] ?? 0;
}

/** The row form of a columnar batch (for backends and listeners that take MetricSeriesInput). */
export function columnsToSeries(c: MetricColumns): MetricSeriesInput[] {
  const out: MetricSeriesInput[] = new Array(c.series.length);
  for (let k = 0; k < c.series.length; k++) {
    const samples: Sample[] = [];
    for (let i = c.offsets[k]!; i < c.offsets[k + 1]!; i++) samples.push({ t: c.timestamps[i]!, v: c.values[i]! });
    out[k] = { labels: c.series[k]!.labels, samples };
  }
  return out;
}

/** What one ingest request carries after decoding. Every list is optional. */
export interface IngestBatch {
  metrics?: MetricSeriesInput[];
  /** Float samples in columnar form, stored together with `metrics` (see MetricColumns). */
  metricColumns?: MetricColumns;
  metadata?: MetricMetadata[];
  logs?: LogRecord[];
  spans?: Span[];
  events?: EventRecord[];
}

export function batchRecordCount(b: IngestBatch): number {
  let n = 0;
  if (b.metrics) for (const s of b.metrics) n += s.samples.length;
  if (b.metricColumns) n += columnsSampleCount(b.metricColumns);
  n += b.logs?.length ?? 0;
  n += b.spans?.length ?? 0;
  n += b.events?.length ?? 0;
  return n;
}

/** Canonical, order-independent key of a label set (sorted `name\xffvalue\xff...`). */
export function labelsKey(labels: Labels): string {
  const names = Object.keys(labels).sort();
  let k = '';
  for (const n of names) k += n + '\xff' + labels[n] + '\xff';
  return k;
}

/** Returns labels with keys sorted and empty values dropped (Prometheus treats "" as absent). */
export function normalizeLabels(labels: Record<string, string>): Labels {
  const out: Record<string, string> = {};
  for (const n of Object.keys(labels).sort()) {
    const v = labels[n];
    if (v !== '' && v !== undefined) out[n] = v;
  }
  return out;
}

/** Sorted distinct label names over label sets (for MetricStore.labelNames). */
export function distinctLabelNames(items: Iterable<{ readonly labels: Labels }>): string[] {
  const names = new Set<string>();
  for (const it of items) for (const n in it.labels) names.add(n);
  return [...names].sort();
}

/** Sorted distinct values of one label over label sets (for MetricStore.labelValues). */
export function distinctLabelValues(items: Iterable<{ readonly labels: Labels }>, name: string): string[] {
  const vals = new Set<string>();
  for (const it of items) {
    const v = it.labels[name];
    if (v !== undefined) vals.add(v);
  }
  return [...vals].sort();
}
