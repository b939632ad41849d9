/**
 * The one HTTP app. Plugins add routes only through {@link HttpRoutes.route}; every route gets
 * the same request handling: request id, auth, role check, body limits and decoding, typed
 * error mapping to its family's format, access log and request metrics.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { createApp, createRouter, eventHandler, toNodeListener, type App, type H3Event, type Router } from 'h3';
import type { AuthProvider, IngestAuthFamily, Principal, PrincipalEnricher, Role } from '../auth.js';
import { bearerToken, hasRole } from '../auth.js';
import { LookoutError, badRequest, forbidden, toLookoutError, unauthorized } from '../errors.js';
import type { Logger } from '../logger.js';
import type { MetricsRegistry } from '../metrics-registry.js';
import { decodeBody, readRawBody, type BodyAllocator } from './body.js';
import { formatError, type ErrorFamily } from './error-format.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'HEAD' | 'OPTIONS';

export type RouteAuth = 'none' | 'bearer' | { ingest: IngestAuthFamily };

/** What a handler sees of the request. */
export interface RequestContext {
  readonly event: H3Event;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  readonly path: string;
  readonly url: URL;
  readonly query: URLSearchParams;
  /** Path parameters, URL-decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly headers: IncomingHttpHeaders;
  readonly principal: Principal;
  readonly requestId: string;
  /** Aborted when the client goes away or the server shuts down. */
  readonly signal: AbortSignal;
  /**
   * The body, decoded per Content-Encoding, within the size limits. Cached. `alloc` (first call
   * only) provides the memory a snappy body is decompressed into, for callers that are done with
   * the body before that memory is reused (see BodyAllocator).
   */
  body(alloc?: BodyAllocator): Promise<Buffer>;
  /** The body parsed as JSON; malformed JSON is a 400 with the parser's message. */
  json<T = unknown>(): Promise<T>;
  /** Form-encoded body parameters merged after query parameters (Prometheus API style). */
  form(): Promise<URLSearchParams>;
}

/** A full response. Handlers may instead return a JSON-serialisable value (200). */
export class HttpResponse {
  constructor(
    readonly status: number,
    readonly body: string | Uint8Array | null = null,
    readonly headers: Record<string, string> = {},
  ) {}
  static json(value: unknown, status = 200, headers: Record<string, string> = {}): HttpResponse {
    return new HttpResponse(status, JSON.stringify(value), { 'content-type': 'application/json', ...headers });
  }
  static text(text: string, status = 200, headers: Record<string, string> = {}): HttpResponse {
    return new HttpResponse(status, text, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  }
  static empty(status = 204, headers: Record<string, string> = {}): HttpResponse {
    return new HttpResponse(status, null, headers);
  }
}

/** Returned by a handler that wrote the response itself (e.g. WebSocket upgrade, streaming). */
export const RESPONSE_HANDLED = Symbol('lookout:response-handled');

export type RouteHandler = (ctx: RequestContext) => Promise<unknown> | unknown;

export interface RouteDefinition {
  method: HttpMethod | readonly HttpMethod[];
  /** h3 path syntax: `/api/v1/label/:name/values`, `/proxy/**`. Several paths share a handler. */
  path: string | readonly string[];
  family: ErrorFamily;
  auth: RouteAuth;
  /** Minimum role for bearer routes. */
  minRole?: Role;
  /** Body size limit override (bytes, before and after decompression). */
  maxBodyBytes?: number;
  handler: RouteHandler;
}

export interface RouteRecord extends RouteDefinition {
  plugin: string;
}

export interface HttpRoutesOptions {
  logger: Logger;
  metrics: MetricsRegistry;
  maxBodyBytes: number;
  accessLog: boolean;
  authProviders: () => readonly AuthProvider[];
  enrichers: () => readonly PrincipalEnricher[];
}

/** A request's abort state; its AbortController is only created when a handler asks for the signal. */
interface RequestState {
  abort: AbortController | undefined;
  aborted: boolean;
}

function abortRequest(st: RequestState): void {
  st.aborted = true;
  st.abort?.abort();
}

const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The RequestContext handlers get. What most requests never use (the parsed URL, the abort
 * signal, the body) is built on first use: an ingest request reads the body and headers only.
 */
class Context implements RequestContext {
  readonly method: string;
  private parsedUrl: URL | undefined;
  private decoded: Promise<Buffer> | undefined;

  constructor(
    readonly event: H3Event,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly params: Readonly<Record<string, string>>,
    readonly principal: Principal,
    readonly requestId: string,
    private readonly state: RequestState,
    private readonly bodyLimit: number,
  ) {
    this.method = req.method ?? 'GET';
  }

  get headers(): IncomingHttpHeaders {
    return this.req.headers;
  }
  get url(): URL {
    return (this.parsedUrl ??= new URL(this.req.url ?? '/', 'http://localhost'));
  }
  get path(): string {
    return this.url.pathname;
  }
  get query(): URLSearchParams {
    return this.url.searchParams;
  }
  get signal(): AbortSignal {
    const st = this.state;
    if (st.abort === undefined) {
      st.abort = new AbortController();
      if (st.aborted) st.abort.abort();
    }
    return st.abort.signal;
  }

  body(alloc?: BodyAllocator): Promise<Buffer> {
    return (this.decoded ??= readRawBody(this.req, this.bodyLimit).then((raw) =>
      decodeBody(raw, this.req.headers['content-encoding'] as string | undefined, this.bodyLimit, alloc),
    ));
  }

  async json<T = unknown>(): Promise<T> {
    const b = await this.body();
    try {
      return JSON.parse(b.toString('utf8')) as T;
    } catch (e) {
      throw badRequest(`unmarshal failure: ${(e as Error).message}`, { details: { malformedBody: true } });
    }
  }

  async form(): Promise<URLSearchParams> {
    const out = new URLSearchParams(this.url.searchParams);
    const ct = String(this.req.headers['content-type'] ?? '');
    if (this.method === 'POST' && ct.startsWith('application/x-www-form-urlencoded')) {
      for (const [k, v] of new URLSearchParams((await this.body()).toString('utf8'))) out.append(k, v);
    }
    return out;
  }
}

const ANONYMOUS: Principal = Object.freeze({ kind: 'anonymous', name: 'anonymous', role: 'Viewer', teams: [] }) as Principal;

export class HttpRoutes {
  readonly app: App;
  private readonly router: Router;
  private readonly records: RouteRecord[] = [];
  private readonly inflight = new Set<RequestState>();
  private readonly requests;
  private readonly durations;

  constructor(private readonly opts: HttpRoutesOptions) {
    this.app = createApp();
    this.router = createRouter();
    this.app.use(this.router);
    // What no route matched (unknown path, or a method the path does not serve): a plain 404,
    // as Prometheus and Loki answer, instead of the framework's JSON with a stack field.
    this.app.use(
      eventHandler((event) => {
        const res = event.node.res;
        res.statusCode = 404;
        res.setHeader('content-type', 'text/plain; charset=utf-8');
        res.end('404 page not found\n');
        this.requests.inc({ route: 'unmatched', method: event.node.req.method ?? '', status: '404' });
      }),
    );
    this.requests = opts.metrics.counter('lookout_http_requests_total', 'HTTP requests by route and status.');
    this.durations = opts.metrics.histogram('lookout_http_request_duration_seconds', 'HTTP request latency by route.');
  }

  /** Routes registered so far (for docs and tests). */
  list(): readonly RouteRecord[] {
    return this.records;
  }

  route(plugin: string, def: RouteDefinition): void {
    const methods = (Array.isArray(def.method) ? def.method : [def.method]) as HttpMethod[];
    const paths = (Array.isArray(def.path) ? def.path : [def.path]) as string[];
    this.records.push({ ...def, plugin });
    const handler = eventHandler((event) => this.handle(event, def, paths[0]!));
    for (const p of paths) {
      for (const m of methods) this.router.add(p, handler, m.toLowerCase() as 'get');
    }
  }

  nodeListener(): (req: IncomingMessage, res: ServerResponse) => void {
    return toNodeListener(this.app);
  }

  /** Aborts every in-flight request's signal (used after the drain timeout). */
  abortAll(): void {
    for (const st of this.inflight) abortRequest(st);
  }

  /**
   * Resolves a bearer token to an enriched principal, as bearer routes do; undefined when no
   * provider accepts it. For transports that carry the token elsewhere (WebSocket init payload).
   */
  async authenticateBearer(token: string, headers: IncomingHttpHeaders = {}): Promise<Principal | undefined> {
    for (const p of this.opts.authProviders()) {
      const out = await p.authenticate({ scheme: 'bearer', token, headers });
      if (out === 'invalid') return undefined;
      if (out) return this.enrich(out);
    }
    return undefined;
  }

  private async authenticate(def: RouteDefinition, headers: IncomingHttpHeaders): Promise<Principal> {
    if (def.auth === 'none') {
      // Optional bearer auth still resolves a principal when a valid token is given.
      const token = bearerToken(headers);
      if (!token) return ANONYMOUS;
      for (const p of this.opts.authProviders()) {
        const out = await p.authenticate({ scheme: 'bearer', token, headers });
        if (out && out !== 'invalid') return this.enrich(out);
      }
      return ANONYMOUS;
    }
    if (def.auth === 'bearer') {
      const token = bearerToken(headers);
      if (!token) throw unauthorized('missing or invalid Authorization header');
      for (const p of this.opts.authProviders()) {
        const out = await p.authenticate({ scheme: 'bearer', token, headers });
        if (out === 'invalid') break;
        if (out) {
          const principal = await this.enrich(out);
          if (def.minRole && !hasRole(principal, def.minRole)) throw forbidden('Forbidden');
          return principal;
        }
      }
      throw unauthorized('missing or invalid Authorization header');
    }
    for (const p of this.opts.authProviders()) {
      const out = await p.authenticate({ scheme: 'ingest', family: def.auth.ingest, headers });
      if (out === 'invalid') break;
      if (out) return out;
    }
    throw badRequest('missing or invalid API key');
  }

  private async enrich(p: Principal): Promise<Principal> {
    let out = p;
    for (const e of this.opts.enrichers()) out = await e(out);
    return out;
  }

  private async handle(event: H3Event, def: RouteDefinition, routePath: string): Promise<unknown> {
    const start = performance.now();
    const req = event.node.req;
    const res = event.node.res;
    const requestId = (req.headers['x-request-id'] as string | undefined)?.slice(0, 128) || randomUUID();
    res.setHeader('x-request-id', requestId);
    const state: RequestState = { abort: undefined, aborted: false };
    this.inflight.add(state);
    const onClose = () => {
      if (!res.writableFinished) abortRequest(state);
    };
    res.once('close', onClose);
    let status = 500;
    try {
      const principal = await this.authenticate(def, req.headers);
      const rawParams = event.context.params;
      let params: Record<string, string> = NO_PARAMS;
      if (rawParams) {
        for (const k in rawParams) {
          if (params === NO_PARAMS) params = {};
          try {
            params[k] = decodeURIComponent(rawParams[k]!);
          } catch {
            throw badRequest(`malformed URL encoding in path parameter ${k}`);
          }
        }
      }
      const ctx = new Context(event, req, res, params, principal, requestId, state, def.maxBodyBytes ?? this.opts.maxBodyBytes);
      const result = await def.handler(ctx);
      if (result === RESPONSE_HANDLED) {
        status = res.statusCode;
        return undefined;
      }
      if (result instanceof HttpResponse) {
        status = result.status;
        res.statusCode = result.status;
        for (const [k, v] of Object.entries(result.headers)) res.setHeader(k, v);
        res.end(result.body ?? undefined);
        return undefined;
      }
      status = 200;
      res.statusCode = 200;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(result ?? null));
      return undefined;
    } catch (e) {
      const err = toLookoutError(e);
      if (err.kind === 'internal') this.opts.logger.error('request failed', { requestId, path: routePath, err: err.cause ?? err });
      const f = formatError(def.family, err);
      status = f.status;
      if (!res.headersSent) {
        res.statusCode = f.status;
        res.setHeader('content-type', f.contentType);
        for (const [k, v] of Object.entries(f.headers)) res.setHeader(k, v);
        res.end(f.body);
      } else if (!res.writableEnded) res.end();
      return undefined;
    } finally {
      this.inflight.delete(state);
      res.off('close', onClose);
      const secs = (performance.now() - start) / 1000;
      this.requests.inc({ route: routePath, method: req.method ?? '', status: String(status) });
      this.durations.observe({ route: routePath }, secs);
      if (this.opts.accessLog) {
        this.opts.logger.info('request', {
          requestId,
          method: req.method,
          path: routePath,
          status,
          ms: Math.round(secs * 1000),
        });
      }
    }
  }
}

export { LookoutError };
