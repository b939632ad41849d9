/**
 * The `api-trace-search` plugin: a Tempo-compatible HTTP API (the subset Grafana's Tempo
 * datasource uses) mounted under the dashboards proxy path of the `lookout-traces` datasource.
 * Queries go through query-traceql; every read applies the principal's `apm` scope.
 */
import { LookoutError, badRequest, notFound } from '../../kernel/errors.js';
import { HttpResponse, type RequestContext } from '../../kernel/http/routes.js';
import { definePlugin, type PluginContext } from '../../kernel/plugin.js';
import { createQueryContext } from '../../kernel/query-context.js';
import { Tokens } from '../../kernel/services.js';
import { DATASOURCE_PROXY_BASE, TRACES_DATASOURCE_UID } from '../dashboards/index.js';
import { DEFAULT_LIMIT, TraceQLParseError, compileTraceQL, searchTraces, type TraceQLPlan } from '../query-traceql/index.js';
import { traceJson } from './otlp-json.js';
import { encodeTraceByIdV2Proto, encodeTraceProto } from './otlp-proto.js';
import { legacySearchToTraceQL, positiveInt, timeRange, traceIdParam } from './params.js';
import { traceSearchMetadata } from './search-response.js';
import { tagField, tagNamesByScope, tagScopeParam, tagValues, type TagLimits, type TagScope } from './tags.js';

export const TRACE_SEARCH_BASE = `${DATASOURCE_PROXY_BASE}/${TRACES_DATASOURCE_UID}`;

/** Version reported by /api/status/buildinfo: Grafana gates TraceQL features on Tempo ≥ 2. */
export const TEMPO_COMPAT_VERSION = '2.6.0';

interface Options {
  maxLimit: number;
  defaultSpss: number;
  maxSpss: number;
  tags: TagLimits;
}

function readOptions(o: Readonly<Record<string, unknown>>): Options {
  const num = (k: string, d: number) => (typeof o[k] === 'number' && Number.isFinite(o[k]) && (o[k] as number) > 0 ? (o[k] as number) : d);
  return {
    maxLimit: num('maxLimit', 1000),
    defaultSpss: num('defaultSpss', 3),
    maxSpss: num('maxSpss', 1000),
    tags: { maxInspectedTraces: num('maxTagTraces', 5000), maxValues: num('maxTagValues', 5000) },
  };
}

function compile(text: string): TraceQLPlan {
  try {
    return compileTraceQL(text);
  } catch (e) {
    if (e instanceof TraceQLParseError) throw badRequest(`invalid TraceQL query: ${e.message}`);
    throw e;
  }
}

function wantsProtobuf(ctx: RequestContext): boolean {
  const accept = String(ctx.headers.accept ?? '');
  return accept.includes('application/protobuf') || accept.includes('application/x-protobuf');
}

export default definePlugin({
  name: 'api-trace-search',
  description: 'Tempo-compatible trace search API (TraceQL) under the dashboards datasource proxy.',
  dependsOn: ['query-traceql'],
  register(ctx: PluginContext) {
    const opts = readOptions(ctx.options);
    const get = (path: string | string[], handler: (r: RequestContext) => unknown) =>
      ctx.route({
        method: 'GET',
        path: (Array.isArray(path) ? path : [path]).map((p) => TRACE_SEARCH_BASE + p),
        family: 'tempo',
        auth: 'bearer',
        handler,
      });
    const qctx = (r: RequestContext) => createQueryContext(ctx, r.principal, { signal: r.signal });

    // Grafana's "Save & test" calls /api/echo; it reads the version from buildinfo.
    get('/api/echo', () => HttpResponse.text('echo'));
    get('/api/status/buildinfo', () => ({
      version: TEMPO_COMPAT_VERSION,
      revision: 'lookout',
      branch: 'lookout',
      buildUser: 'lookout',
      buildDate: '',
      goVersion: '',
    }));

    get('/api/search', async (r) => {
      const text = r.query.get('q') ?? legacySearchToTraceQL(r.query);
      if (text === undefined || text.trim() === '') throw badRequest('invalid query: parameter q (TraceQL) is required');
      const range = timeRange(r.query, true);
      const limit = positiveInt(r.query, 'limit', DEFAULT_LIMIT, opts.maxLimit);
      const spss = positiveInt(r.query, 'spss', opts.defaultSpss, opts.maxSpss);
      const plan = compile(text);
      const res = await searchTraces(plan, { ...range, limit }, qctx(r));
      return {
        traces: res.matches.map((m) => traceSearchMetadata(m, plan, spss)),
        metrics: {
          inspectedTraces: res.metrics.inspectedTraces,
          inspectedSpans: String(res.metrics.inspectedSpans),
          inspectedBytes: String(res.metrics.inspectedBytes),
          totalBlocks: 0,
          completedJobs: 1,
          totalJobs: 1,
          totalBlockBytes: '0',
        },
      };
    });

    const traceById = (v2: boolean) => async (r: RequestContext) => {
      const id = traceIdParam(r.params.traceID ?? '');
      const q = qctx(r);
      const scope = await q.scope('apm');
      const store = ctx.get(Tokens.Storage).traces;
      let spans = scope !== undefined && scope.length === 0 ? [] : await store.getTrace(id, scope);
      // Ids stored in their 64-bit form (16 digits) are found by the short spelling too.
      if (spans.length === 0 && id.startsWith('0000000000000000')) spans = await store.getTrace(id.slice(16), scope);
      if (spans.length === 0) throw notFound('trace not found');
      const trace = traceJson(spans);
      if (wantsProtobuf(r)) {
        return new HttpResponse(200, v2 ? encodeTraceByIdV2Proto(trace) : encodeTraceProto(trace), { 'content-type': 'application/protobuf' });
      }
      return v2 ? { trace, status: 'COMPLETE' } : { trace };
    };
    get('/api/traces/:traceID', traceById(false));
    get('/api/v2/traces/:traceID', traceById(true));

    const tagPlan = (r: RequestContext) => compile(r.query.get('q') || '{}');

    get('/api/search/tags', async (r) => {
      const scope = tagScopeParam(r.query.get('scope'));
      const range = timeRange(r.query, false);
      const byScope = await tagNamesByScope(tagPlan(r), range, opts.tags, qctx(r));
      const names = new Set<string>();
      const wanted: TagScope[] = scope ? [scope] : ['span', 'resource'];
      for (const s of wanted) for (const n of byScope.get(s) ?? []) names.add(n);
      return { tagNames: [...names].sort() };
    });

    get('/api/v2/search/tags', async (r) => {
      const scope = tagScopeParam(r.query.get('scope'));
      const range = timeRange(r.query, false);
      const byScope = await tagNamesByScope(tagPlan(r), range, opts.tags, qctx(r));
      const order: TagScope[] = ['resource', 'span', 'event', 'link', 'instrumentation', 'intrinsic'];
      return {
        scopes: order
          .filter((s) => (scope ? s === scope : true))
          .map((s) => ({ name: s, tags: byScope.get(s) ?? [] }))
          .filter((s) => s.tags.length > 0 || s.name === scope || s.name === 'span' || s.name === 'resource'),
      };
    });

    get('/api/search/tag/:tagName/values', async (r) => {
      const range = timeRange(r.query, true);
      const values = await tagValues(tagField(r.params.tagName ?? ''), tagPlan(r), range, opts.tags, qctx(r));
      return { tagValues: [...new Set(values.map((v) => v.value))] };
    });

    get('/api/v2/search/tag/:tagName/values', async (r) => {
      const range = timeRange(r.query, true);
      const values = await tagValues(tagField(r.params.tagName ?? ''), tagPlan(r), range, opts.tags, qctx(r));
      return { tagValues: values, metrics: { inspectedBytes: '0' } };
    });

    // TraceQL metrics (query_range, query) are not implemented: say so plainly, as Tempo would
    // for a disabled feature, instead of a bare 404.
    get(['/api/metrics/query_range', '/api/metrics/query', '/api/metrics/**'], () => {
      throw new LookoutError('bad_request', 'TraceQL metrics queries (/api/metrics/...) are not available on this server', {
        status: 501,
      });
    });
  },
});
