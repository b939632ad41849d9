/**
 * Runs a planned query against the TraceStore: pushes the time range, the RBAC scope and the
 * planner's prefilters into `search`, takes each candidate trace whole (structural operators and
 * trace intrinsics need every span the principal may see: from the search group itself when the
 * store returns whole traces, else by a getTrace), evaluates it, and keeps the most recent
 * `limit` matches.
 */
import { checkDeadline } from '../../kernel/query-context.js';
import type { QueryContext } from '../../kernel/extension-points.js';
import type { MatcherAlternatives } from '../../kernel/matchers.js';
import type { Span } from '../../kernel/models.js';
import { evaluatePipeline, type Spanset } from './executor.js';
import type { TraceQLPlan } from './planner.js';
import { buildTraceView, type TraceView } from './trace-view.js';

export interface TraceQLSearchOptions {
  startNs: bigint;
  endNs: bigint;
  /** Traces wanted (most recent first). Default 20. */
  limit?: number;
  /** Stop after inspecting this many candidate traces (tag listings bound their work this way). */
  maxInspectedTraces?: number;
}

export interface TraceMatch {
  view: TraceView;
  spansets: Spanset[];
}

export interface TraceQLSearchResult {
  matches: TraceMatch[];
  metrics: { inspectedTraces: number; inspectedSpans: number; inspectedBytes: number };
  /** True when maxInspectedTraces stopped the scan early. */
  truncated: boolean;
}

export const DEFAULT_LIMIT = 20;

export async function searchTraces(plan: TraceQLPlan, opts: TraceQLSearchOptions, ctx: QueryContext): Promise<TraceQLSearchResult> {
  const scope = await ctx.scope('apm');
  const limit = opts.limit ?? DEFAULT_LIMIT;
  const store = ctx.storage.traces;
  const metrics = { inspectedTraces: 0, inspectedSpans: 0, inspectedBytes: 0 };
  let matches: TraceMatch[] = [];
  let truncated = false;
  const seen = new Set<string>();
  if (scope !== undefined && scope.length === 0) return { matches, metrics, truncated };
  const byRecency = (x: TraceMatch, y: TraceMatch) => (x.view.startNs > y.view.startNs ? -1 : x.view.startNs < y.view.startNs ? 1 : 0);
  const whole = store.searchesWholeTraces === true;
  for await (const group of store.search({
    ...plan.prefilter,
    startNs: opts.startNs,
    endNs: opts.endNs,
    scope,
    signal: ctx.signal,
    wholeTraces: true,
  })) {
    if (group.length === 0) continue;
    const traceId = group[0]!.traceId;
    if (seen.has(traceId)) continue;
    seen.add(traceId);
    if ((metrics.inspectedTraces & 63) === 0) checkDeadline(ctx);
    if (opts.maxInspectedTraces !== undefined && metrics.inspectedTraces >= opts.maxInspectedTraces) {
      truncated = true;
      break;
    }
    const spans = whole ? group : await wholeTrace(store.getTrace.bind(store), traceId, scope, group);
    metrics.inspectedTraces++;
    metrics.inspectedSpans += spans.length;
    metrics.inspectedBytes += estimateBytes(spans);
    const view = buildTraceView(spans);
    const spansets = evaluatePipeline(plan.query.pipeline, view);
    if (spansets.length === 0) continue;
    matches.push({ view, spansets });
    // Keep memory bounded: trim to the newest `limit` now and then.
    if (matches.length >= Math.max(2 * limit, 64)) matches = matches.sort(byRecency).slice(0, limit);
  }
  checkDeadline(ctx);
  matches = matches.sort(byRecency).slice(0, limit);
  return { matches, metrics, truncated };
}

async function wholeTrace(
  getTrace: (id: string, scope?: MatcherAlternatives) => Promise<Span[]>,
  traceId: string,
  scope: MatcherAlternatives | undefined,
  fallback: Span[],
): Promise<Span[]> {
  const all = await getTrace(traceId, scope);
  return all.length >= fallback.length ? all : fallback;
}

/** A rough wire size of the spans (Tempo reports inspectedBytes; we have no blocks to measure). */
function estimateBytes(spans: readonly Span[]): number {
  let n = 0;
  for (const s of spans) {
    n += 64 + s.name.length;
    for (const k in s.attributes) n += k.length + 16;
    n += s.events.length * 32 + s.links.length * 48;
  }
  return n;
}
