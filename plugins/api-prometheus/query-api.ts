/**
 * `/api/v1/query`, `/api/v1/query_range`, `/api/v1/format_query`, `/api/v1/parse_query` and
 * `/api/v1/query_exemplars`: parameter handling and error mapping exactly as Prometheus; the
 * evaluation itself is the query-promql engine's.
 */
import { LookoutError, badRequest } from '../../kernel/errors.js';
import type { RequestContext } from '../../kernel/http/routes.js';
import type { PluginContext } from '../../kernel/plugin.js';
import { createQueryContext, timeQuery } from '../../kernel/query-context.js';
import {
  PromQLEngine,
  PromQLExecutionError,
  PromQLParseError,
  formatPromQL,
  parsePromQL,
  resultToPrometheusJSON,
  type Expr,
  type PromEvalContext,
  type PromQueryOutput,
  type PromResult,
} from '../query-promql/index.js';
import {
  MAX_TIME_MS,
  MIN_TIME_MS,
  invalidParam,
  limitParam,
  parseDurationParam,
  requiredTimeParam,
  timeParam,
} from './params.js';
import { TRUNCATED_WARNING, success, type PromEnvelope } from './response.js';

/** Prometheus refuses range queries with more points per series than this. */
const MAX_POINTS_PER_SERIES = 11_000;

export class QueryApi {
  private readonly engine: PromQLEngine;

  constructor(private readonly plugin: PluginContext) {
    this.engine = new PromQLEngine({ maxSamples: plugin.config.limits.maxSamplesPerQuery });
  }

  private get limits() {
    return this.plugin.config.limits;
  }

  /** Parses the `query` parameter, enforcing the configured maximum length. */
  private parseQuery(form: URLSearchParams): Expr {
    const text = form.get('query') ?? '';
    if (text.length > this.limits.maxQueryLength) {
      throw invalidParam(
        'query',
        new Error(`query length ${text.length} exceeds the limit of ${this.limits.maxQueryLength} (limits.maxQueryLength)`),
      );
    }
    try {
      return parsePromQL(text);
    } catch (e) {
      if (e instanceof PromQLParseError) throw invalidParam('query', e);
      throw e;
    }
  }

  /** The engine for this request: `lookback_delta` (Prometheus 3) gets its own instance. */
  private engineFor(form: URLSearchParams): PromQLEngine {
    const lb = form.get('lookback_delta');
    if (lb === null || lb === '') return this.engine;
    let ms: number;
    try {
      ms = parseDurationParam(lb);
    } catch (e) {
      throw invalidParam('lookback_delta', e);
    }
    if (ms < 0) throw invalidParam('lookback_delta', new Error('lookback delta must be non-negative'));
    return new PromQLEngine({ maxSamples: this.limits.maxSamplesPerQuery, lookbackDeltaMs: ms || undefined });
  }

  private timeoutMs(form: URLSearchParams): number | undefined {
    const to = form.get('timeout');
    if (to === null || to === '') return undefined;
    try {
      return parseDurationParam(to);
    } catch (e) {
      throw invalidParam('timeout', e);
    }
  }

  private async evalContext(ctx: RequestContext, form: URLSearchParams) {
    const timeoutMs = this.timeoutMs(form);
    // Prometheus derives a context deadline from `timeout`; a zero one has expired on arrival.
    if (timeoutMs !== undefined && timeoutMs <= 0) throw new LookoutError('timeout', 'query timed out in query execution');
    const qctx = createQueryContext(this.plugin, ctx.principal, { signal: ctx.signal, timeoutMs });
    const ectx: PromEvalContext = {
      metrics: qctx.storage.metrics,
      scope: await qctx.scope('metrics'),
      signal: qctx.signal,
      deadline: qctx.deadline,
    };
    return { qctx, ectx };
  }

  private async run(ectx: PromEvalContext, exec: () => Promise<PromQueryOutput>): Promise<PromQueryOutput> {
    try {
      return await timeQuery(this.plugin, 'promql', exec);
    } catch (e) {
      throw mapEngineError(e, ectx.signal);
    }
  }

  /** Applies `limit` and limits.maxSeriesPerQuery to a result, then wraps it. */
  private respond(out: PromQueryOutput, limit: number): PromEnvelope {
    const warnings = [...out.warnings];
    let result = out.result;
    const n = seriesCount(result);
    if (limit > 0 && n > limit) {
      result = truncate(result, limit);
      warnings.push(TRUNCATED_WARNING);
    } else if (n > this.limits.maxSeriesPerQuery) {
      throw new LookoutError(
        'execution',
        `query returned ${n} series, more than the limit of ${this.limits.maxSeriesPerQuery} (limits.maxSeriesPerQuery)`,
      );
    }
    return success(resultToPrometheusJSON(result), warnings, out.infos);
  }

  async instant(ctx: RequestContext): Promise<PromEnvelope> {
    const form = await ctx.form();
    const time = timeParam(form, 'time', Date.now());
    const limit = limitParam(form);
    const engine = this.engineFor(form);
    const expr = this.parseQuery(form);
    const { ectx } = await this.evalContext(ctx, form);
    const out = await this.run(ectx, () => engine.instantQuery(expr, time, ectx));
    return this.respond(out, limit);
  }

  async range(ctx: RequestContext): Promise<PromEnvelope> {
    const form = await ctx.form();
    const start = requiredTimeParam(form, 'start');
    const end = requiredTimeParam(form, 'end');
    if (end < start) throw badRequest('end timestamp must not be before start time');
    let step: number;
    try {
      step = parseDurationParam(form.get('step') ?? '');
    } catch (e) {
      throw invalidParam('step', e);
    }
    if (!(step > 0)) {
      throw badRequest('zero or negative query resolution step widths are not accepted. Try a positive integer');
    }
    // Prometheus compares whole nanosecond durations (integer division).
    if (Math.floor((end - start) / step) > MAX_POINTS_PER_SERIES) {
      throw badRequest(
        'exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)',
      );
    }
    const limit = limitParam(form);
    const engine = this.engineFor(form);
    const expr = this.parseQuery(form);
    const { ectx } = await this.evalContext(ctx, form);
    const out = await this.run(ectx, () => engine.rangeQuery(expr, start, end, step, ectx));
    return this.respond(out, limit);
  }

  async format(ctx: RequestContext): Promise<PromEnvelope> {
    const form = await ctx.form();
    return success(formatPromQL(this.parseQuery(form)));
  }

  /** Prometheus 3's experimental AST endpoint: we return our AST (positions included). */
  async parse(ctx: RequestContext): Promise<PromEnvelope> {
    const form = await ctx.form();
    return success(this.parseQuery(form));
  }

  /** Exemplars are not stored; the parameters are still validated like Prometheus does. */
  async exemplars(ctx: RequestContext): Promise<PromEnvelope> {
    const form = await ctx.form();
    const start = timeParam(form, 'start', MIN_TIME_MS);
    const end = timeParam(form, 'end', MAX_TIME_MS);
    if (end < start) throw badRequest('end timestamp must not be before start time');
    this.parseQuery(form);
    return success([]);
  }
}

export function seriesCount(r: PromResult): number {
  if (r.type === 'vector') return r.samples.length;
  if (r.type === 'matrix') return r.series.length;
  return 1;
}

function truncate(r: PromResult, n: number): PromResult {
  if (r.type === 'vector') return { type: 'vector', samples: r.samples.slice(0, n) };
  if (r.type === 'matrix') return { type: 'matrix', series: r.series.slice(0, n) };
  return r;
}

/** Engine errors → Prometheus' error types: 400 bad_data, 422 execution, 503 timeout. */
function mapEngineError(e: unknown, signal: AbortSignal | undefined): unknown {
  if (e instanceof LookoutError) return e;
  if (e instanceof PromQLParseError) return invalidParam('query', e);
  if (e instanceof PromQLExecutionError) {
    if (e.kind === 'timeout') return new LookoutError('timeout', e.message);
    if (e.kind === 'bad_data') return badRequest(e.message);
    return new LookoutError('execution', e.message);
  }
  if (signal?.aborted) {
    const reason: unknown = signal.reason;
    if (reason instanceof LookoutError) return reason;
    return new LookoutError('timeout', 'query timed out in query execution');
  }
  return e;
}
