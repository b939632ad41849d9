/**
 * Sources of the getLogsWithSvcQlStream subscription, as pull-based async iterators so a slow
 * WebSocket reader slows the producer down instead of queueing pages in memory:
 * - {@link PagedLogStream}: one LogPage per getLogsWithSvcQl page, at most 100, then done;
 * - {@link LiveLogTail}: records ingested after subscribing, at most one non-empty page per
 *   second of at most `limit` records, until the client completes or the lifetime runs out.
 * `return()` ends a pending `next()` at once (a generator would wait for it).
 */
import type { LogRecord } from '../../kernel/models.js';
import type { MatcherAlternatives } from '../../kernel/matchers.js';
import type { LogStore } from '../../kernel/storage.js';

export interface LogPageOut {
  logs: GraphQLLog[];
  cursor: string | null;
}

export interface GraphQLLog {
  timestamp: string;
  message: string;
  labels: Record<string, string>;
  facets: Record<string, string | number | boolean>;
}

export function toGraphQLLog(r: LogRecord): GraphQLLog {
  return { timestamp: r.timestampNs.toString(), message: r.message, labels: { ...r.labels }, facets: { ...r.facets } };
}

export const MAX_STREAM_PAGES = 100;

type Result<T> = IteratorResult<T, undefined>;
const DONE: Result<never> = { done: true, value: undefined };

/** Fetches one page after `cursor` (null: the first). Errors end the stream with an Error event. */
export type PageFetcher = (cursor: string | null) => Promise<LogPageOut>;

export class PagedLogStream implements AsyncIterableIterator<LogPageOut | Error> {
  private pages = 0;
  private finished = false;
  private next_: LogPageOut | null;

  /** `first` was fetched eagerly so that its errors answer the subscribe with `error`. */
  constructor(
    first: LogPageOut,
    private readonly fetch: PageFetcher,
    private readonly maxPages = MAX_STREAM_PAGES,
  ) {
    this.next_ = first;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<Result<LogPageOut | Error>> {
    if (this.finished) return DONE;
    let page = this.next_;
    this.next_ = null;
    if (!page) {
      try {
        page = await this.fetch(this.lastCursor);
      } catch (e) {
        this.finished = true;
        return { done: false, value: e instanceof Error ? e : new Error(String(e)) };
      }
      if (this.finished) return DONE;
    }
    this.pages++;
    this.lastCursor = page.cursor;
    if (page.cursor === null || this.pages >= this.maxPages) this.finished = true;
    return { done: false, value: page };
  }

  private lastCursor: string | null = null;

  async return(): Promise<Result<LogPageOut | Error>> {
    this.finished = true;
    return DONE;
  }

  async throw(e?: unknown): Promise<Result<LogPageOut | Error>> {
    this.finished = true;
    throw e;
  }
}

/** Wakes live tails when a batch with logs was stored (one ingest listener for all of them). */
export class TailHub {
  private waiters = new Set<() => void>();
  notify(): void {
    const ws = this.waiters;
    this.waiters = new Set();
    for (const w of ws) w();
  }
  /** Resolves on the next notify, after `ms`, or when `signal` aborts. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
  }
}

export interface LiveTailOptions {
  logs: LogStore;
  scope: MatcherAlternatives | undefined;
  /** Search + filter stages of the query. */
  filter: (r: LogRecord) => boolean;
  startNs: bigint;
  limit: number;
  hub: TailHub;
  /** The server completes the stream after this long (GRAPHQL.md: 3600 s). */
  lifetimeMs: number;
  /** Minimum spacing of non-empty pages. */
  intervalMs?: number;
  /** Matching records waiting to be sent beyond this are dropped (oldest first): the rate is capped. */
  maxBacklog?: number;
  /** Aborted when the connection goes away. */
  signal: AbortSignal;
  onDropped?: (n: number) => void;
}

export class LiveLogTail implements AsyncIterableIterator<LogPageOut | Error> {
  private afterSeq: number;
  private readonly backlog: LogRecord[] = [];
  private lastEmit = 0;
  private readonly endAt: number;
  private readonly stop = new AbortController();
  private finished = false;

  constructor(private readonly o: LiveTailOptions) {
    this.afterSeq = o.logs.lastSeq();
    this.endAt = Date.now() + o.lifetimeMs;
    if (o.signal.aborted) this.stop.abort();
    else o.signal.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = () => this.stop.abort();

  [Symbol.asyncIterator](): this {
    return this;
  }

  private async pull(): Promise<void> {
    const upto = this.o.logs.lastSeq();
    if (upto <= this.afterSeq) return;
    const { records, seqs } = await this.o.logs.tail(this.afterSeq, this.o.scope);
    let last = upto;
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      last = Math.max(last, seqs[i]!);
      if (r.timestampNs >= this.o.startNs && this.o.filter(r)) this.backlog.push(r);
    }
    this.afterSeq = last;
    const max = this.o.maxBacklog ?? this.o.limit * 60;
    if (this.backlog.length > max) {
      const n = this.backlog.length - max;
      this.backlog.splice(0, n);
      this.o.onDropped?.(n);
    }
  }

  async next(): Promise<Result<LogPageOut | Error>> {
    const interval = this.o.intervalMs ?? 1000;
    while (!this.finished && !this.stop.signal.aborted) {
      const now = Date.now();
      if (now >= this.endAt) break;
      try {
        await this.pull();
      } catch (e) {
        this.end();
        return { done: false, value: e instanceof Error ? e : new Error(String(e)) };
      }
      const due = this.lastEmit + interval;
      if (this.backlog.length > 0 && Date.now() >= due) {
        this.lastEmit = Date.now();
        const batch = this.backlog.splice(0, this.o.limit);
        return { done: false, value: { logs: batch.map(toGraphQLLog), cursor: null } };
      }
      const wait = this.backlog.length > 0 ? due - Date.now() : interval;
      await this.o.hub.wait(Math.min(wait, this.endAt - Date.now()), this.stop.signal);
    }
    this.end();
    return DONE;
  }

  private end(): void {
    this.finished = true;
    this.stop.abort();
    this.o.signal.removeEventListener('abort', this.onAbort);
  }

  async return(): Promise<Result<LogPageOut | Error>> {
    this.end();
    return DONE;
  }

  async throw(e?: unknown): Promise<Result<LogPageOut | Error>> {
    await this.return();
    throw e;
  }
}
