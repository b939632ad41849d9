/**
 * `/api/v1/series`, `/api/v1/labels`, `/api/v1/label/<name>/values` and `/api/v1/metadata`,
 * answered from the metric index (MetricStore) within the caller's RBAC scope.
 */
import { LookoutError, badRequest } from '../../kernel/errors.js';
import type { RequestContext } from '../../kernel/http/routes.js';
import type { LabelMatcher, MatcherAlternatives } from '../../kernel/matchers.js';
import type { Labels } from '../../kernel/models.js';
import type { PluginContext } from '../../kernel/plugin.js';
import { createQueryContext } from '../../kernel/query-context.js';
import type { MetricStore } from '../../kernel/storage.js';
import { MAX_TIME_MS, MIN_TIME_MS, limitParam, parseMatchSets, timeParam } from './params.js';
import { TRUNCATED_WARNING, success, type PromEnvelope } from './response.js';

interface IndexRequest {
  form: URLSearchParams;
  start: number;
  end: number;
  limit: number;
  matchSets: LabelMatcher[][];
  scope: MatcherAlternatives | undefined;
  metrics: MetricStore;
}

export class MetadataApi {
  constructor(private readonly plugin: PluginContext) {}

  private async request(ctx: RequestContext): Promise<IndexRequest> {
    const form = await ctx.form();
    const start = timeParam(form, 'start', MIN_TIME_MS);
    const end = timeParam(form, 'end', MAX_TIME_MS);
    const limit = limitParam(form);
    const matchSets = parseMatchSets(form.getAll('match[]'));
    const qctx = createQueryContext(this.plugin, ctx.principal, { signal: ctx.signal });
    const scope = await qctx.scope('metrics');
    return { form, start, end, limit, matchSets, scope, metrics: qctx.storage.metrics };
  }

  private checkSeriesLimit(n: number): void {
    const max = this.plugin.config.limits.maxSeriesPerQuery;
    if (n > max) {
      throw new LookoutError('execution', `the request selects ${n} series, more than the limit of ${max} (limits.maxSeriesPerQuery)`);
    }
  }

  async series(ctx: RequestContext): Promise<PromEnvelope> {
    const form = await ctx.form();
    if (form.getAll('match[]').length === 0) throw badRequest('no match[] parameter provided');
    const r = await this.request(ctx);
    let list: Labels[] = await r.metrics.series(r.matchSets, r.start, r.end, r.scope);
    const warnings: string[] = [];
    if (r.limit > 0 && list.length > r.limit) {
      list = list.slice(0, r.limit);
      warnings.push(TRUNCATED_WARNING);
    }
    this.checkSeriesLimit(list.length);
    return success(list.map(sortedLabels), warnings);
  }

  async labels(ctx: RequestContext): Promise<PromEnvelope> {
    const r = await this.request(ctx);
    let names = await r.metrics.labelNames(r.matchSets, r.start, r.end, r.scope);
    names = [...names].sort();
    return this.limited(names, r.limit);
  }

  async labelValues(ctx: RequestContext): Promise<PromEnvelope> {
    let name = ctx.params.name ?? '';
    // Prometheus 3 accepts names escaped as `U__...` (underscore-escaped UTF-8) in the path.
    if (name.startsWith('U__')) name = unescapeName(name.slice(3));
    if (name === '' || !isValidUtf8Name(name)) throw badRequest(`invalid label name: ${JSON.stringify(ctx.params.name ?? '')}`);
    const r = await this.request(ctx);
    let values = await r.metrics.labelValues(name, r.matchSets, r.start, r.end, r.scope);
    values = [...values].sort();
    return this.limited(values, r.limit);
  }

  async metadata(ctx: RequestContext): Promise<PromEnvelope> {
    const form = await ctx.form();
    const limit = intOrMinusOne(form.get('limit'), 'limit must be a number');
    const perMetric = intOrMinusOne(form.get('limit_per_metric'), 'limit_per_metric must be a number');
    const metric = form.get('metric') || undefined;
    const qctx = createQueryContext(this.plugin, ctx.principal, { signal: ctx.signal });
    const scope = await qctx.scope('metrics');
    const md = await qctx.storage.metrics.metadata(metric, undefined);
    // Under a restricted scope only metrics the caller can see have visible metadata.
    const visible =
      scope === undefined
        ? undefined
        : new Set(await qctx.storage.metrics.labelValues('__name__', [], MIN_TIME_MS, MAX_TIME_MS, scope));
    const out: Record<string, { type: string; help: string; unit: string }[]> = {};
    let n = 0;
    for (const [name, list] of md) {
      if (limit >= 0 && n >= limit) break;
      if (visible && !visible.has(name)) continue;
      const entries = list.map((m) => ({ type: m.type, help: m.help, unit: m.unit }));
      out[name] = perMetric > 0 ? entries.slice(0, perMetric) : entries;
      n++;
    }
    return success(out);
  }

  private limited(list: string[], limit: number): PromEnvelope {
    if (limit > 0 && list.length > limit) return success(list.slice(0, limit), [TRUNCATED_WARNING]);
    return success(list);
  }
}

function sortedLabels(l: Labels): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(l).sort()) out[k] = l[k]!;
  return out;
}

function intOrMinusOne(v: string | null, message: string): number {
  if (v === null || v === '') return -1;
  if (!/^[+-]?\d+$/.test(v)) throw badRequest(message);
  return Number(v);
}

function isValidUtf8Name(name: string): boolean {
  // A JS string from a decoded URL is valid UTF-16; lone surrogates are the invalid case.
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(name);
}

/**
 * Prometheus' value-encoding unescaping: `_` followed by hex digits and `_` is a code point,
 * `__` is a literal underscore.
 */
function unescapeName(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '_') {
      out += c;
      continue;
    }
    if (s[i + 1] === '_') {
      out += '_';
      i++;
      continue;
    }
    const end = s.indexOf('_', i + 1);
    const hex = end > i + 1 ? s.slice(i + 1, end) : '';
    if (!/^[0-9a-fA-F]+$/.test(hex)) return '';
    const cp = parseInt(hex, 16);
    if (cp > 0x10ffff) return '';
    out += String.fromCodePoint(cp);
    i = end;
  }
  return out;
}
