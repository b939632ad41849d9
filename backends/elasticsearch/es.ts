/**
 * The thin layer over the Elasticsearch client every store uses: index naming (one index per
 * signal and UTC day, so retention drops whole indices), durable bulk writes, and paged reads.
 */
import { Client, errors, type estypes } from '@elastic/elasticsearch';
import type { Logger } from '../../kernel/logger.js';
import { LookoutError } from '../../kernel/errors.js';

export type Query = estypes.QueryDslQueryContainer;

/** Time-partitioned document kinds; each has index template `<prefix>-<kind>-*`. */
export type DailyKind = 'samples' | 'series' | 'logs' | 'events' | 'spans';

export interface EsSettings {
  url: string;
  indexPrefix: string;
  /** Primary shards per daily index. */
  shards: number;
  /** Replicas per index; `undefined` keeps the cluster default. */
  replicas?: number;
  /** Index refresh interval (how soon periodic refreshes make writes searchable). */
  refreshInterval: string;
  /**
   * Visibility of acknowledged writes: `wait_for` (default) returns once a refresh made them
   * searchable; `true` forces a refresh per request (lower latency, more load); `false`
   * acknowledges once durable, searchable within the refresh interval (no read-your-writes).
   */
  refresh: 'wait_for' | 'true' | 'false';
  /** Active shard copies a write waits for before it is attempted ('1', 'all', or a number). */
  waitForActiveShards: string;
  requestTimeoutMs: number;
  auth?: { apiKey?: string; username?: string; password?: string };
  tls?: { rejectUnauthorized?: boolean; ca?: string };
}

const DAY_MS = 86_400_000;
/** Backoff for transient failures (429 back-pressure, 503 shard not started): about 6 s in all. */
const RETRY_DELAYS_MS = [50, 100, 200, 400, 800, 1600, 3000];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Above this many days a query names the wildcard pattern instead of each day's index. */
const MAX_LISTED_DAYS = 62;

export function dayStart(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

function daySuffix(ms: number): string {
  const d = new Date(Math.max(0, dayStart(ms)));
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}.${p(d.getUTCMonth() + 1)}.${p(d.getUTCDate())}`;
}

export function parseDaySuffix(s: string): number | undefined {
  const m = /^(\d{4})\.(\d{2})\.(\d{2})$/.exec(s);
  if (!m) return undefined;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
}

export function validateIndexPrefix(prefix: string): void {
  // Elasticsearch index names: lowercase, no \ / * ? " < > | , # : or space, not starting with - _ +.
  if (!/^[a-z0-9][a-z0-9._-]{0,100}$/.test(prefix)) {
    throw new Error(
      `storage.indexPrefix "${prefix}" is not a valid Elasticsearch index prefix (lowercase letters, digits, '.', '_', '-'; must start with a letter or digit)`,
    );
  }
}

export class BulkError extends Error {
  constructor(
    readonly failed: number,
    readonly total: number,
    readonly reason: string,
  ) {
    super(`Elasticsearch rejected ${failed} of ${total} documents: ${reason}`);
  }
}

export class Es {
  readonly client: Client;
  readonly prefix: string;

  constructor(
    readonly settings: EsSettings,
    readonly logger: Logger,
  ) {
    validateIndexPrefix(settings.indexPrefix);
    this.prefix = settings.indexPrefix;
    this.client = new Client({
      node: settings.url,
      requestTimeout: settings.requestTimeoutMs,
      maxRetries: 3,
      compression: false,
      auth: settings.auth?.apiKey
        ? { apiKey: settings.auth.apiKey }
        : settings.auth?.username !== undefined
          ? { username: settings.auth.username, password: settings.auth.password ?? '' }
          : undefined,
      tls: settings.tls,
    });
  }

  dailyIndex(kind: DailyKind, ms: number): string {
    return `${this.prefix}-${kind}-${daySuffix(ms)}`;
  }

  pattern(kind: DailyKind): string {
    return `${this.prefix}-${kind}-*`;
  }

  /** The indices that can hold `kind` documents dated in [minMs, maxMs]. */
  indicesFor(kind: DailyKind, minMs: number, maxMs: number): string {
    if (!(maxMs >= minMs) || !Number.isFinite(minMs) || !Number.isFinite(maxMs)) return this.pattern(kind);
    const lo = dayStart(Math.max(0, minMs));
    const hi = dayStart(Math.max(0, maxMs));
    if ((hi - lo) / DAY_MS >= MAX_LISTED_DAYS) return this.pattern(kind);
    const out: string[] = [];
    for (let d = lo; d <= hi; d += DAY_MS) out.push(this.dailyIndex(kind, d));
    return out.join(',');
  }

  get stateIndex(): string {
    return `${this.prefix}-state`;
  }

  get metadataIndex(): string {
    return `${this.prefix}-metadata`;
  }

  /**
   * Writes `operations` (action/document pairs) in one bulk request that returns only once the
   * documents are in the translog (fsynced: `index.translog.durability: request`) and visible to
   * searches. Any item failure rejects, naming the first reason; `create` conflicts listed in
   * `ignoreConflicts` count as success (idempotent series documents).
   */
  async bulk(operations: unknown[], opts: { ignoreConflicts?: boolean; refresh?: boolean } = {}): Promise<void> {
    if (operations.length === 0) return;
    const mode = this.settings.refresh;
    const refresh = opts.refresh === false || mode === 'false' ? false : mode === 'true' ? true : 'wait_for';
    let pending = operations;
    for (let attempt = 0; ; attempt++) {
      const res = await this.call(() =>
        this.client.bulk({
          operations: pending as estypes.BulkRequest['operations'],
          refresh,
          wait_for_active_shards: this.settings.waitForActiveShards as estypes.WaitForActiveShards,
          timeout: `${Math.ceil(this.settings.requestTimeoutMs / 1000)}s`,
        }),
      );
      if (!res.errors) return;
      let failed = 0;
      let reason = '';
      const retry: unknown[] = [];
      res.items.forEach((item, i) => {
        const r = Object.values(item)[0];
        if (!r || !r.error) return;
        if (opts.ignoreConflicts && r.status === 409) return;
        // Back-pressure (429) and a shard not started yet (503) are transient: resend those items.
        if ((r.status === 429 || r.status === 503) && attempt < RETRY_DELAYS_MS.length) {
          retry.push(pending[2 * i], pending[2 * i + 1]);
          return;
        }
        failed++;
        if (!reason) reason = `${r.error.type}: ${r.error.reason ?? ''}`;
      });
      if (failed > 0) throw new BulkError(failed, res.items.length, reason);
      if (retry.length === 0) return;
      await sleep(RETRY_DELAYS_MS[attempt]!);
      pending = retry;
    }
  }

  async search<T>(index: string, body: Omit<estypes.SearchRequest, 'index'>): Promise<estypes.SearchResponse<T>> {
    // Partial results would silently drop data when a shard fails; a failure is retried instead.
    // (A daily index that a concurrent write just created answers 503 until its shard starts.)
    return this.read(() =>
      this.client.search<T>({
        index,
        ignore_unavailable: true,
        allow_no_indices: true,
        allow_partial_search_results: false,
        track_total_hits: false,
        ...body,
      }),
    );
  }

  /** An idempotent read, retried with backoff on back-pressure and unavailable shards. */
  async read<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        const status = e instanceof errors.ResponseError ? e.statusCode : undefined;
        if ((status === 429 || status === 503) && attempt < RETRY_DELAYS_MS.length) {
          await sleep(RETRY_DELAYS_MS[attempt]!);
          continue;
        }
        throw toLookoutError(e);
      }
    }
  }

  /**
   * Every bucket of a composite aggregation over `query`, page by page. Aggregations read the
   * fields' doc values (the index), never sample payloads.
   */
  async *composite(
    index: string,
    query: Query,
    sources: Record<string, estypes.AggregationsCompositeAggregationSource>[],
    aggs?: Record<string, estypes.AggregationsAggregationContainer>,
    signal?: AbortSignal,
  ): AsyncGenerator<estypes.AggregationsCompositeBucket> {
    let after: estypes.AggregationsCompositeAggregateKey | undefined;
    for (;;) {
      signal?.throwIfAborted();
      const res = await this.search<unknown>(index, {
        size: 0,
        query,
        aggs: { c: { composite: { size: 5000, sources, ...(after ? { after } : {}) }, ...(aggs ? { aggs } : {}) } },
      });
      const agg = res.aggregations?.c as estypes.AggregationsCompositeAggregate | undefined;
      const buckets = (agg?.buckets ?? []) as estypes.AggregationsCompositeBucket[];
      for (const b of buckets) yield b;
      if (!agg?.after_key || buckets.length < 5000) return;
      after = agg.after_key;
    }
  }

  /**
   * Sorted hits page by page with search_after; `sort` must end with a unique tie-breaker.
   * `afterOf` gives a hit's sort values when the returned ones cannot be trusted (long fields
   * above 2^53 come back as rounded JSON numbers). Pages grow from `size` to `maxSize`: a
   * caller that keeps reading wants more.
   */
  async *pages<T>(
    index: string,
    body: Omit<estypes.SearchRequest, 'index' | 'search_after' | 'size'>,
    size: number,
    searchAfter?: estypes.SortResults,
    signal?: AbortSignal,
    afterOf: (hit: estypes.SearchHit<T>) => estypes.SortResults | undefined = (h) => h.sort,
    maxSize = size,
  ): AsyncGenerator<estypes.SearchHit<T>[]> {
    let after = searchAfter;
    for (let n = size; ; n = Math.min(maxSize, n * 2)) {
      signal?.throwIfAborted();
      const res = await this.search<T>(index, { ...body, size: n, ...(after ? { search_after: after } : {}) });
      const hits = res.hits.hits;
      if (hits.length) yield hits;
      if (hits.length < n) return;
      after = afterOf(hits[hits.length - 1]!);
      if (!after) return;
    }
  }

  /** Maps transport failures to typed errors the HTTP layer can format (503, not a crash). */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw toLookoutError(e);
    }
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

export function toLookoutError(e: unknown): unknown {
  if (e instanceof LookoutError || e instanceof BulkError) return e;
  if (e instanceof errors.ConnectionError || e instanceof errors.TimeoutError || e instanceof errors.NoLivingConnectionsError) {
    return new LookoutError('unavailable', `Elasticsearch unavailable: ${e.message}`);
  }
  if (e instanceof errors.ResponseError) {
    const status = e.statusCode ?? 500;
    const body = e.body as { error?: { type?: string; reason?: string; root_cause?: { type?: string; reason?: string }[] } } | undefined;
    const root = body?.error?.root_cause?.[0] ?? body?.error;
    const reason = root ? `${root.type ?? 'error'}: ${root.reason ?? ''}` : e.message;
    if (status === 429 || status === 503) return new LookoutError('unavailable', `Elasticsearch busy: ${reason}`);
    return new LookoutError('internal', `Elasticsearch error (${status}): ${reason}`);
  }
  return e;
}
