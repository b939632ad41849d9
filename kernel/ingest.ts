/**
 * The shared ingest path behind every Receiver route: back-pressure (503 past the in-flight
 * limit, 429 past the rate), content-type checks, decoding, and an atomic write: a request is
 * acknowledged only after storage accepted all of its records, and a malformed one writes nothing.
 */
import type { LookoutConfig } from './config.js';
import { LookoutError, badRequest, toLookoutError } from './errors.js';
import type { IngestDecoded, IngestRequest, ReceiverDefinition, ReceiverRoute } from './extension-points.js';
import { HttpResponse, type HttpRoutes, type RequestContext } from './http/routes.js';
import { contentEncodings } from './http/body.js';
import type { Logger } from './logger.js';
import type { MetricsRegistry } from './metrics-registry.js';
import { batchRecordCount, columnsSampleCount, columnsToSeries, type IngestBatch } from './models.js';
import type { StorageBackend } from './storage.js';

export const INGEST_BASE = '/ingester';

const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** Token bucket over requests per second. */
class RateLimiter {
  private tokens: number;
  private last = performance.now();
  constructor(private readonly perSecond: number) {
    this.tokens = perSecond;
  }
  take(): boolean {
    if (this.perSecond <= 0) return true;
    const now = performance.now();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export type BatchListener = (batch: IngestBatch) => void;

const SCRATCH_MIN = 64 * 1024;
const SCRATCH_MAX = 8 * 1024 * 1024;
const SCRATCH_KEEP = 4;

/**
 * Decompression buffers for routes with `transientBody` (remote write): a 240 KB snappy body per
 * request would otherwise be a fresh external allocation each time, freed by the GC later.
 * Memory is lent for one decode ({@link alloc}, one function for all requests) and comes back
 * with {@link release}; bodies above SCRATCH_MAX get their own memory.
 */
class ScratchPool {
  private readonly free: ArrayBuffer[] = [];
  /** Weak: memory lent to a request that failed before handing it back is simply collected. */
  private readonly lent = new WeakSet<ArrayBuffer>();
  readonly alloc = (length: number): Buffer => {
    if (length > SCRATCH_MAX) return Buffer.allocUnsafeSlow(length);
    let ab: ArrayBuffer | undefined;
    for (let i = this.free.length - 1; i >= 0; i--) {
      if (this.free[i]!.byteLength >= length) {
        ab = this.free[i]!;
        this.free[i] = this.free[this.free.length - 1]!;
        this.free.pop();
        break;
      }
    }
    if (ab === undefined) {
      let size = SCRATCH_MIN;
      while (size < length) size *= 2;
      ab = new ArrayBuffer(size);
    }
    this.lent.add(ab);
    return Buffer.from(ab, 0, ab.byteLength);
  };
  /** Takes back the memory under `body` if it was lent here (else does nothing). */
  release(body: Buffer): void {
    const ab = body.buffer as ArrayBuffer;
    if (!this.lent.delete(ab)) return;
    if (this.free.length < SCRATCH_KEEP) this.free.push(ab);
  }
}

export class IngestPipeline {
  private inflight = 0;
  private readonly scratch = new ScratchPool();
  private readonly rate: RateLimiter;
  private readonly listeners: BatchListener[] = [];
  private readonly ingested;
  private readonly rejected;

  constructor(
    private readonly config: LookoutConfig,
    private readonly storage: () => StorageBackend,
    private readonly logger: Logger,
    metrics: MetricsRegistry,
  ) {
    this.rate = new RateLimiter(config.limits.ingestRatePerSecond);
    this.ingested = metrics.counter('lookout_ingested_records_total', 'Records accepted, by receiver and signal.');
    this.rejected = metrics.counter('lookout_rejected_requests_total', 'Ingest requests refused, by receiver and reason.');
    metrics.gauge('lookout_ingest_inflight_requests', 'Ingest requests in flight.').collect(() => [[{}, this.inflight]]);
  }

  /** Called after each batch is durably stored (archiver, live tail, ...). */
  onBatch(fn: BatchListener): void {
    this.listeners.push(fn);
  }

  /**
   * Writes a batch to storage. Metrics, logs, spans and events go to their stores; the call
   * resolves when all are durable.
   */
  async write(batch: IngestBatch): Promise<void> {
    const st = this.storage();
    const tasks: Promise<void>[] = [];
    if (batch.metrics?.length) tasks.push(st.metrics.append(batch.metrics));
    const cols = batch.metricColumns;
    if (cols && cols.series.length) {
      tasks.push(st.metrics.appendColumns ? st.metrics.appendColumns(cols) : st.metrics.append(columnsToSeries(cols)));
    }
    if (batch.metadata?.length) tasks.push(st.metrics.appendMetadata(batch.metadata));
    if (batch.logs?.length) tasks.push(st.logs.append(batch.logs));
    if (batch.spans?.length) tasks.push(st.traces.append(batch.spans));
    if (batch.events?.length) tasks.push(st.events.append(batch.events));
    if (tasks.length === 1) await tasks[0];
    else if (tasks.length > 1) await Promise.all(tasks);
    for (const l of this.listeners) {
      try {
        l(batch);
      } catch (e) {
        this.logger.warn('ingest listener failed', { err: e });
      }
    }
  }

  /** Mounts a receiver's routes under /ingester on the HTTP app. */
  mount(http: HttpRoutes, plugin: string, receiver: ReceiverDefinition): void {
    for (const route of receiver.routes) {
      const paths = (Array.isArray(route.path) ? route.path : [route.path]) as string[];
      http.route(plugin, {
        method: route.method ?? 'POST',
        path: paths.map((p) => INGEST_BASE + p),
        family: 'ingest',
        auth: route.auth === 'none' ? 'none' : { ingest: route.auth },
        handler: (ctx) => this.handle(receiver, route, ctx),
      });
    }
  }

  private reject(receiver: string, reason: string): void {
    this.rejected.inc({ receiver, reason });
  }

  private async handle(receiver: ReceiverDefinition, route: ReceiverRoute, ctx: RequestContext): Promise<HttpResponse> {
    const contentTypeHeader = String(ctx.headers['content-type'] ?? '');
    const contentType = contentTypeHeader.split(';')[0]!.trim().toLowerCase();
    const errorResponse = (e: LookoutError): HttpResponse => {
      if (!route.formatError) throw e;
      const r = route.formatError(e.status, e.message, { contentType, headers: ctx.headers });
      return new HttpResponse(r.status ?? e.status, r.body ?? null, {
        ...(r.contentType ? { 'content-type': r.contentType } : {}),
        ...e.headers,
        ...r.headers,
      });
    };
    if (!this.rate.take()) {
      this.reject(receiver.name, 'rate_limited');
      return errorResponse(
        new LookoutError('rate_limited', 'ingest rate limit exceeded; retry after a short backoff', {
          headers: { 'retry-after': '1' },
        }),
      );
    }
    if (this.inflight >= this.config.limits.ingestMaxConcurrent) {
      this.reject(receiver.name, 'overloaded');
      ctx.req.resume();
      return errorResponse(
        new LookoutError('unavailable', 'ingester at maximum concurrent request capacity; retry with backoff', {
          headers: { 'retry-after': '1' },
        }),
      );
    }
    this.inflight++;
    try {
      if (route.requiredEncoding) {
        const encs = contentEncodings(ctx.headers['content-encoding'] as string | undefined);
        if (!encs.includes(route.requiredEncoding)) {
          throw badRequest(`Content-Encoding: ${route.requiredEncoding} is required`);
        }
      }
      if (route.contentTypes && !route.contentTypes.includes(contentType)) {
        throw badRequest(
          `unsupported content type "${contentType || '(none)'}"; expected ${route.contentTypes.filter((t) => t !== '').join(' or ')}`,
        );
      }
      let lent: Buffer | undefined;
      let decoded: IngestDecoded;
      try {
        const body = route.transientBody
          ? (lent = await ctx.body(this.scratch.alloc))
          : await ctx.body();
        const req: IngestRequest = {
          body,
          contentType,
          contentTypeHeader,
          headers: ctx.headers,
          // Parsed only when a receiver asks (most never do).
          get query() {
            return ctx.query;
          },
          get path() {
            return ctx.path;
          },
          principal: ctx.principal,
        };
        try {
          const d = route.decode(req);
          decoded = d instanceof Promise ? await d : d;
        } catch (e) {
          if (e instanceof LookoutError) throw e;
          throw badRequest(`malformed payload: ${(e as Error).message}`);
        }
      } finally {
        // The decoder is done with the body (transientBody): its memory serves the next request.
        if (lent !== undefined) this.scratch.release(lent);
      }
      await this.write(decoded.batch);
      this.countIngested(receiver.name, decoded.batch);
      const r = decoded.respond?.() ?? {};
      let headers: Record<string, string> = r.headers ?? NO_HEADERS;
      if (r.contentType) headers = { ...headers, 'content-type': r.contentType };
      return new HttpResponse(r.status ?? 200, r.body ?? null, headers);
    } catch (e) {
      const err = toLookoutError(e);
      this.reject(receiver.name, err.status === 413 ? 'too_large' : err.status >= 500 ? 'error' : 'bad_request');
      if (err.kind === 'internal') this.logger.error('ingest failed', { receiver: receiver.name, err: err.cause ?? err });
      return errorResponse(err);
    } finally {
      this.inflight--;
    }
  }

  private countIngested(receiver: string, b: IngestBatch): void {
    if (b.metrics?.length) {
      let n = 0;
      for (const s of b.metrics) n += s.samples.length;
      this.ingested.inc({ receiver, signal: 'metrics' }, n);
    }
    if (b.metricColumns?.series.length) this.ingested.inc({ receiver, signal: 'metrics' }, columnsSampleCount(b.metricColumns));
    if (b.logs?.length) this.ingested.inc({ receiver, signal: 'logs' }, b.logs.length);
    if (b.spans?.length) this.ingested.inc({ receiver, signal: 'traces' }, b.spans.length);
    if (b.events?.length) this.ingested.inc({ receiver, signal: 'events' }, b.events.length);
  }
}

export { batchRecordCount };
