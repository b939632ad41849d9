/**
 * An in-memory storage backend: the reference implementation of the storage interfaces, used by
 * tests and for `storage.backend: memory`. Nothing survives a restart.
 */
import { definePlugin } from '../../kernel/plugin.js';
import {
  compileAlternatives,
  compileMatchers,
  type LabelMatcher,
  type MatcherAlternatives,
} from '../../kernel/matchers.js';
import type {
  EventRecord,
  FloatHistogram,
  Labels,
  LogRecord,
  MetricMetadata,
  MetricSeriesInput,
  Sample,
  Span,
} from '../../kernel/models.js';
import { distinctLabelNames, distinctLabelValues, labelsKey } from '../../kernel/models.js';
import type {
  CardinalityQuery,
  CardinalityStats,
  EventScanQuery,
  EventStore,
  LabelColumn,
  LogBatch,
  LogColumnBatch,
  LogColumnScanQuery,
  LogScanQuery,
  LogStore,
  MetaStore,
  MetaTransaction,
  MetaValue,
  MetricStore,
  SelectHints,
  StorageBackend,
  StoredSeries,
  TraceSearchQuery,
  TraceStore,
} from '../../kernel/storage.js';

interface MemSeries {
  labels: Labels;
  t: number[];
  /**
   * Values in a Float64Array, not a number[]: V8 canonicalizes NaNs stored in double arrays,
   * which would erase the staleness marker's bit pattern.
   */
  v: Float64Array;
  h: (FloatHistogram | undefined)[];
  st: number[];
  hasHist: boolean;
  hasSt: boolean;
}

function insertSample(s: MemSeries, smp: Sample): void {
  const { t } = s;
  let i = t.length;
  if (i > 0 && t[i - 1]! >= smp.t) {
    // Out of order or duplicate: binary search; duplicates keep the last value.
    let lo = 0;
    let hi = t.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (t[mid]! < smp.t) lo = mid + 1;
      else hi = mid;
    }
    i = lo;
    if (t[i] === smp.t) {
      s.v[i] = smp.v;
      s.h[i] = smp.h;
      s.st[i] = smp.st ?? NaN;
      if (smp.h) s.hasHist = true;
      if (smp.st !== undefined) s.hasSt = true;
      return;
    }
    t.splice(i, 0, smp.t);
    growValues(s, t.length);
    s.v.copyWithin(i + 1, i, t.length - 1);
    s.v[i] = smp.v;
    s.h.splice(i, 0, smp.h);
    s.st.splice(i, 0, smp.st ?? NaN);
  } else {
    t.push(smp.t);
    growValues(s, t.length);
    s.v[t.length - 1] = smp.v;
    s.h.push(smp.h);
    s.st.push(smp.st ?? NaN);
  }
  if (smp.h) s.hasHist = true;
  if (smp.st !== undefined) s.hasSt = true;
}

function growValues(s: MemSeries, n: number): void {
  if (s.v.length >= n) return;
  const next = new Float64Array(Math.max(16, s.v.length * 2, n));
  next.set(s.v);
  s.v = next;
}

function overlaps(s: MemSeries, mint: number, maxt: number): boolean {
  const n = s.t.length;
  return n > 0 && s.t[0]! <= maxt && s.t[n - 1]! >= mint;
}

export class MemoryMetricStore implements MetricStore {
  private readonly bySeries = new Map<string, MemSeries>();
  private readonly meta = new Map<string, MetricMetadata[]>();

  async append(input: readonly MetricSeriesInput[]): Promise<void> {
    for (const s of input) {
      const k = labelsKey(s.labels);
      let ms = this.bySeries.get(k);
      if (!ms) {
        ms = { labels: s.labels, t: [], v: new Float64Array(0), h: [], st: [], hasHist: false, hasSt: false };
        this.bySeries.set(k, ms);
      }
      for (const smp of s.samples) insertSample(ms, smp);
    }
  }

  async appendMetadata(md: readonly MetricMetadata[]): Promise<void> {
    for (const m of md) {
      const list = this.meta.get(m.metric) ?? [];
      if (!list.some((x) => x.type === m.type && x.help === m.help && x.unit === m.unit)) list.unshift(m);
      this.meta.set(m.metric, list.slice(0, 10));
    }
  }

  private matching(
    matcherSets: readonly (readonly LabelMatcher[])[],
    mint: number,
    maxt: number,
    scope: MatcherAlternatives | undefined,
  ): MemSeries[] {
    const inScope = compileAlternatives(scope);
    const sets = matcherSets.length ? matcherSets.map(compileMatchers) : [() => true];
    const out: MemSeries[] = [];
    for (const s of this.bySeries.values()) {
      if (!overlaps(s, mint, maxt) || !inScope(s.labels)) continue;
      if (sets.some((p) => p(s.labels))) out.push(s);
    }
    return out;
  }

  async *select(
    matchers: readonly LabelMatcher[],
    mint: number,
    maxt: number,
    hints?: SelectHints,
  ): AsyncIterable<StoredSeries> {
    yield* this.selectSync(matchers, mint, maxt, hints);
  }

  *selectSync(
    matchers: readonly LabelMatcher[],
    mint: number,
    maxt: number,
    hints?: SelectHints,
  ): Iterable<StoredSeries> {
    const list = this.matching([matchers], mint, maxt, hints?.scope);
    list.sort((a, b) => (labelsKey(a.labels) < labelsKey(b.labels) ? -1 : 1));
    for (const s of list) {
      let lo = 0;
      while (lo < s.t.length && s.t[lo]! < mint) lo++;
      let hi = lo;
      while (hi < s.t.length && s.t[hi]! <= maxt) hi++;
      const out: StoredSeries = {
        labels: s.labels,
        timestamps: Float64Array.from(s.t.slice(lo, hi)),
        values: s.v.slice(lo, hi),
      };
      if (s.hasHist) out.histograms = s.h.slice(lo, hi);
      if (s.hasSt) out.startTimestamps = Float64Array.from(s.st.slice(lo, hi));
      yield out;
    }
  }

  async series(sets: readonly (readonly LabelMatcher[])[], mint: number, maxt: number, scope?: MatcherAlternatives) {
    return this.matching(sets, mint, maxt, scope).map((s) => s.labels);
  }

  async labelNames(sets: readonly (readonly LabelMatcher[])[], mint: number, maxt: number, scope?: MatcherAlternatives) {
    return distinctLabelNames(this.matching(sets, mint, maxt, scope));
  }

  async labelValues(
    name: string,
    sets: readonly (readonly LabelMatcher[])[],
    mint: number,
    maxt: number,
    scope?: MatcherAlternatives,
  ) {
    return distinctLabelValues(this.matching(sets, mint, maxt, scope), name);
  }

  async metadata(metric?: string, limit?: number): Promise<Map<string, MetricMetadata[]>> {
    const out = new Map<string, MetricMetadata[]>();
    for (const [k, v] of this.meta) {
      if (metric !== undefined && k !== metric) continue;
      out.set(k, v);
      if (limit !== undefined && out.size >= limit) break;
    }
    return out;
  }

  async cardinality(q: CardinalityQuery): Promise<CardinalityStats> {
    const list = this.matching(q.matcherSets, q.mint, q.maxt, q.scope);
    const seriesByMetric = new Map<string, number>();
    const seriesByLabel = new Map<string, number>();
    const values = new Map<string, Set<string>>();
    const want = q.labels && q.labels.length ? new Set(q.labels) : undefined;
    for (const s of list) {
      const name = s.labels.__name__ ?? '';
      seriesByMetric.set(name, (seriesByMetric.get(name) ?? 0) + 1);
      for (const [k, v] of Object.entries(s.labels)) {
        if (want && !want.has(k)) continue;
        seriesByLabel.set(k, (seriesByLabel.get(k) ?? 0) + 1);
        let set = values.get(k);
        if (!set) values.set(k, (set = new Set()));
        set.add(v);
      }
    }
    const distinctValuesByLabel = new Map([...values].map(([k, v]) => [k, v.size]));
    return { totalSeries: list.length, seriesByMetric, seriesByLabel, distinctValuesByLabel };
  }
}

const containsAllTerms = (msg: string, terms: readonly string[] | undefined): boolean => {
  if (!terms || terms.length === 0) return true;
  const lower = msg.toLowerCase();
  return terms.every((t) => lower.includes(t.toLowerCase()));
};

/**
 * Records kept in ingestion order (seq = index + 1) plus a permutation sorted by (timestamp,
 * seq), brought up to date by the first scan after an append: new records are sorted alone and
 * merged (appended when they are not older than what is sorted, the usual case). A scan then
 * binary-searches its range and walks it in order, so a first page reads ~limit records.
 */
export class MemoryLogStore implements LogStore {
  private readonly records: LogRecord[] = [];
  private sorted: number[] = [];
  /** Per record: a small id of its label-set object and floor(ts / 1 ms), for columnar scans. */
  private readonly streamOf: number[] = [];
  private readonly msOf: number[] = [];
  private readonly streamIds = new WeakMap<Labels, number>();
  private readonly streams: Labels[] = [];

  async append(records: readonly LogRecord[]): Promise<void> {
    for (const r of records) {
      let id = this.streamIds.get(r.labels);
      if (id === undefined) {
        id = this.streams.push(r.labels) - 1;
        this.streamIds.set(r.labels, id);
      }
      this.records.push(r);
      this.streamOf.push(id);
      this.msOf.push(floorMs(r.timestampNs));
    }
  }

  lastSeq(): number {
    return this.records.length;
  }

  async tail(afterSeq: number, scope?: MatcherAlternatives) {
    const inScope = compileAlternatives(scope);
    const records: LogRecord[] = [];
    const seqs: number[] = [];
    for (let i = afterSeq; i < this.records.length; i++) {
      if (inScope(this.records[i]!.labels)) {
        records.push(this.records[i]!);
        seqs.push(i + 1);
      }
    }
    return { records, seqs };
  }

  private before(a: number, b: number): boolean {
    const ta = this.records[a]!.timestampNs;
    const tb = this.records[b]!.timestampNs;
    return ta < tb || (ta === tb && a < b);
  }

  private sortedIndex(): number[] {
    const have = this.sorted.length;
    const n = this.records.length;
    if (have === n) return this.sorted;
    const fresh: number[] = [];
    for (let i = have; i < n; i++) fresh.push(i);
    // Appends usually arrive in time order: check before paying for a sort.
    let inOrder = true;
    for (let k = 1; k < fresh.length && inOrder; k++) inOrder = this.records[fresh[k - 1]!]!.timestampNs <= this.records[fresh[k]!]!.timestampNs;
    if (!inOrder) fresh.sort((a, b) => (this.before(a, b) ? -1 : 1));
    const old = this.sorted;
    if (have === 0 || this.before(old[have - 1]!, fresh[0]!)) {
      for (const i of fresh) old.push(i);
      return old;
    }
    const merged: number[] = new Array(have + fresh.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < have && j < fresh.length) merged[k++] = this.before(old[i]!, fresh[j]!) ? old[i++]! : fresh[j++]!;
    while (i < have) merged[k++] = old[i++]!;
    while (j < fresh.length) merged[k++] = fresh[j++]!;
    this.sorted = merged;
    return merged;
  }

  /** First index in `idx` whose (ts, seq) is not below (ts, seq). */
  private lowerBound(idx: readonly number[], ts: bigint, seq: number): number {
    let lo = 0;
    let hi = idx.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const r = idx[mid]!;
      const t = this.records[r]!.timestampNs;
      if (t < ts || (t === ts && r + 1 < seq)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Sorted-index bounds [lo, hi) of records in [startNs, endNs). */
  private range(idx: readonly number[], startNs: bigint, endNs: bigint): [number, number] {
    return [this.lowerBound(idx, startNs, 0), this.lowerBound(idx, endNs, 0)];
  }

  /** A per-label-set memo of matchers AND scope (label objects are usually shared per stream). */
  private labelFilter(matchers: readonly LabelMatcher[] | undefined, scope: MatcherAlternatives | undefined): (l: Labels) => boolean {
    if ((!matchers || matchers.length === 0) && scope === undefined) return () => true;
    const match = compileMatchers(matchers ?? []);
    const inScope = compileAlternatives(scope);
    const memo = new WeakMap<Labels, boolean>();
    return (l) => {
      let v = memo.get(l);
      if (v === undefined) memo.set(l, (v = match(l) && inScope(l)));
      return v;
    };
  }

  async *scan(q: LogScanQuery): AsyncIterable<LogBatch> {
    const ok = this.labelFilter(q.matchers, q.scope);
    const idx = this.sortedIndex();
    let [lo, hi] = this.range(idx, q.startNs, q.endNs);
    const desc = (q.order ?? 'desc') === 'desc';
    const after = q.after === undefined ? null : /^(-?\d+):(\d+)$/.exec(q.after);
    if (after) {
      const ts = BigInt(after[1]!);
      const seq = Number(after[2]!);
      const at = this.lowerBound(idx, ts, seq);
      if (desc) hi = Math.min(hi, at);
      else lo = Math.max(lo, at < idx.length && idx[at]! + 1 === seq ? at + 1 : at);
    }
    let left = q.limit !== undefined && q.limit > 0 ? q.limit : Infinity;
    const batch = 1024;
    let records: LogRecord[] = [];
    let seqs: number[] = [];
    const flush = (): LogBatch => {
      const last = records[records.length - 1]!;
      const out = { records, seqs, position: `${last.timestampNs}:${seqs[seqs.length - 1]}` };
      records = [];
      seqs = [];
      return out;
    };
    for (let k = desc ? hi - 1 : lo; desc ? k >= lo : k < hi; desc ? k-- : k++) {
      const i = idx[k]!;
      const r = this.records[i]!;
      if (!ok(r.labels) || !containsAllTerms(r.message, q.terms)) continue;
      records.push(r);
      seqs.push(i + 1);
      if (--left <= 0) break;
      if (records.length === batch) {
        if (q.signal?.aborted) return;
        yield flush();
      }
    }
    if (records.length > 0) yield flush();
  }

  /** The columnar scan of LogStore: codes per label-set object, folded per object when weighted. */
  async *scanColumns(q: LogColumnScanQuery): AsyncIterable<LogColumnBatch> {
    const filter = this.labelFilter(q.matchers, q.scope);
    const idx = this.sortedIndex();
    const [lo, hi] = this.range(idx, q.startNs, q.endNs);
    const nStreams = this.streams.length;
    const ok = new Uint8Array(nStreams);
    for (let id = 0; id < nStreams; id++) ok[id] = filter(this.streams[id]!) ? 1 : 0;
    const dicts: string[][] = q.labels.map(() => []);
    const index = q.labels.map(() => new Map<string, number>());
    const codeOf = q.labels.map(() => new Int32Array(nStreams).fill(-2));
    const code = (j: number, id: number): number => {
      let c = codeOf[j]![id]!;
      if (c !== -2) return c;
      const v = this.streams[id]![q.labels[j]!];
      if (v === undefined) c = -1;
      else {
        const known = index[j]!.get(v);
        if (known === undefined) index[j]!.set(v, (c = dicts[j]!.push(v) - 1));
        else c = known;
      }
      return (codeOf[j]![id] = c);
    };
    const acc = q.weighted === true && !q.timestampsMs ? new Float64Array(nStreams) : null;
    const BATCH = 8192;
    const ids = new Int32Array(BATCH);
    for (let from = lo; from < hi; from += BATCH) {
      if (q.signal?.aborted) return;
      const to = Math.min(hi, from + BATCH);
      let n = 0;
      const rows = new Int32Array(to - from);
      for (let k = from; k < to; k++) {
        const i = idx[k]!;
        const id = this.streamOf[i]!;
        if (ok[id] !== 1) continue;
        if (acc) acc[id]!++;
        else {
          ids[n] = id;
          rows[n++] = i;
        }
      }
      if (acc || n === 0) continue;
      const codes = q.labels.map((_, j) => {
        const c = new Int32Array(n);
        for (let k = 0; k < n; k++) c[k] = code(j, ids[k]!);
        return c;
      });
      const labels: LabelColumn[] = codes.map((c, j) => ({ dict: dicts[j]!.slice(), codes: c }));
      if (!q.timestampsMs) yield { length: n, labels };
      else {
        const ms = new Float64Array(n);
        for (let k = 0; k < n; k++) ms[k] = this.msOf[rows[k]!]!;
        yield { length: n, labels, timestampsMs: ms };
      }
    }
    if (acc) {
      const present: number[] = [];
      for (let id = 0; id < nStreams; id++) if (acc[id]! > 0) present.push(id);
      if (present.length === 0) return;
      const codes = q.labels.map((_, j) => Int32Array.from(present, (id) => code(j, id)));
      yield {
        length: present.length,
        labels: codes.map((c, j) => ({ dict: dicts[j]!.slice(), codes: c })),
        weights: Float64Array.from(present, (id) => acc[id]!),
      };
    }
  }
}

/** floor(ns / 1e6) as a Number of ms. */
function floorMs(ns: bigint): number {
  const q = ns / 1_000_000n;
  return Number(ns < 0n && q * 1_000_000n !== ns ? q - 1n : q);
}

export class MemoryTraceStore implements TraceStore {
  private readonly byTrace = new Map<string, Span[]>();

  async append(spans: readonly Span[]): Promise<void> {
    for (const s of spans) {
      const list = this.byTrace.get(s.traceId) ?? [];
      list.push(s);
      this.byTrace.set(s.traceId, list);
    }
  }

  async getTrace(traceId: string, scope?: MatcherAlternatives): Promise<Span[]> {
    const inScope = compileAlternatives(scope);
    return (this.byTrace.get(traceId.toLowerCase()) ?? []).filter((s) => inScope(spanLabels(s)));
  }

  async *search(q: TraceSearchQuery): AsyncIterable<Span[]> {
    const inScope = compileAlternatives(q.scope);
    let n = 0;
    for (const spans of this.byTrace.values()) {
      const visible = spans.filter(
        (s) => s.startTimeUnixNano < q.endNs && s.endTimeUnixNano >= q.startNs && inScope(spanLabels(s)),
      );
      if (visible.length === 0) continue;
      yield visible;
      if (q.limit !== undefined && ++n >= q.limit * 10) return;
    }
  }
}

/** Labels a span is scoped by: its resource's string attributes, plus service. */
export function spanLabels(s: Span): Labels {
  const out: Record<string, string> = { svc_stream: 'apm' };
  for (const [k, v] of Object.entries(s.resource)) if (typeof v === 'string') out[k] = v;
  const svc = s.resource['service.name'];
  if (typeof svc === 'string') out.service = svc;
  return out;
}

export class MemoryEventStore implements EventStore {
  private readonly events: EventRecord[] = [];

  async append(events: readonly EventRecord[]): Promise<void> {
    for (const e of events) this.events.push(e);
  }

  async *scan(q: EventScanQuery) {
    const match = compileMatchers(q.matchers ?? []);
    const inScope = compileAlternatives(q.scope);
    const idx: number[] = [];
    this.events.forEach((e, i) => {
      if (e.timestampNs >= q.startNs && e.timestampNs < q.endNs && match(e.labels) && inScope(e.labels)) idx.push(i);
    });
    const desc = (q.order ?? 'desc') === 'desc';
    idx.sort((a, b) => {
      const ta = this.events[a]!.timestampNs;
      const tb = this.events[b]!.timestampNs;
      if (ta !== tb) return desc ? (ta > tb ? -1 : 1) : ta < tb ? -1 : 1;
      return desc ? b - a : a - b;
    });
    let start = 0;
    if (q.after !== undefined) {
      const at = idx.indexOf(Number(q.after));
      start = at >= 0 ? at + 1 : 0;
    }
    for (let i = start; i < idx.length; i += 1024) {
      const slice = idx.slice(i, i + 1024);
      yield { events: slice.map((j) => this.events[j]!), seqs: slice.map((j) => j + 1), position: String(slice[slice.length - 1]) };
    }
  }
}

const clone = (v: MetaValue): MetaValue => (v === null || typeof v !== 'object' ? v : structuredClone(v));

export class MemoryMetaStore implements MetaStore {
  protected readonly data = new Map<string, Map<string, MetaValue>>();
  private queue: Promise<unknown> = Promise.resolve();

  async get(collection: string, key: string) {
    const v = this.data.get(collection)?.get(key);
    return v === undefined ? undefined : clone(v);
  }

  async list(collection: string): Promise<[string, MetaValue][]> {
    return [...(this.data.get(collection) ?? new Map<string, MetaValue>())].map(([k, v]) => [k, clone(v)]);
  }

  /** Applies a transaction's writes; the embedded backend overrides this to log them first. */
  protected async commit(_writes: Array<[string, string, MetaValue | undefined]>): Promise<void> {}

  transaction<T>(fn: (tx: MetaTransaction) => T): Promise<T> {
    const run = async () => {
      const writes = new Map<string, [string, string, MetaValue | undefined]>();
      const keyOf = (c: string, k: string) => JSON.stringify([c, k]);
      const tx: MetaTransaction = {
        get: (c, k) => {
          const w = writes.get(keyOf(c, k));
          if (w) return w[2] === undefined ? undefined : clone(w[2]);
          const v = this.data.get(c)?.get(k);
          return v === undefined ? undefined : clone(v);
        },
        put: (c, k, v) => void writes.set(keyOf(c, k), [c, k, clone(v)]),
        delete: (c, k) => {
          const existed = tx.get(c, k) !== undefined;
          writes.set(keyOf(c, k), [c, k, undefined]);
          return existed;
        },
        list: (c) => {
          const m = new Map(this.data.get(c) ?? []);
          for (const [cc, k, v] of writes.values()) {
            if (cc !== c) continue;
            if (v === undefined) m.delete(k);
            else m.set(k, v);
          }
          return [...m].map(([k, v]) => [k, clone(v)]);
        },
      };
      const result = fn(tx);
      const list = [...writes.values()];
      await this.commit(list);
      for (const [c, k, v] of list) {
        let m = this.data.get(c);
        if (!m) this.data.set(c, (m = new Map()));
        if (v === undefined) m.delete(k);
        else m.set(k, v);
      }
      return result;
    };
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }
}

export function createMemoryBackend(): StorageBackend {
  return {
    name: 'memory',
    metrics: new MemoryMetricStore(),
    logs: new MemoryLogStore(),
    traces: new MemoryTraceStore(),
    events: new MemoryEventStore(),
    meta: new MemoryMetaStore(),
    flush: async () => {},
    close: async () => {},
  };
}

export default definePlugin({
  name: 'storage-memory',
  description: 'In-memory storage (nothing persists); the reference for the storage conformance suite.',
  register(ctx) {
    ctx.extensions.storageBackend({ name: 'memory', create: async () => createMemoryBackend() });
  },
});
