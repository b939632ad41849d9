/**
 * The `query-traceql` plugin: TraceQL (Grafana Tempo's trace query language) over the
 * TraceStore. Lexer/parser (lexer.ts, parser.ts → ast.ts), planner (planner.ts), executor
 * (executor.ts, per trace) and the storage-facing search (engine.ts) are kept apart. This file is
 * the module's public contract; api-trace-search codes against these exports.
 */
import { definePlugin } from '../../kernel/plugin.js';
import type { QueryContext } from '../../kernel/extension-points.js';
import type { TraceQLQuery } from './ast.js';
import { parseTraceQL } from './parser.js';
import { planTraceQL } from './planner.js';
import { searchTraces, type TraceQLSearchOptions, type TraceQLSearchResult } from './engine.js';

export { parseTraceQL, TraceQLParseError, INTRINSIC_TAGS } from './parser.js';
export { planTraceQL, type TraceQLPlan } from './planner.js';
export { searchTraces, DEFAULT_LIMIT, type TraceMatch, type TraceQLSearchOptions, type TraceQLSearchResult } from './engine.js';
export { evaluatePipeline, evalField, attributeValue, intrinsicValue, type Spanset } from './executor.js';
export { buildTraceView, rootServiceName, rootTraceName, isRootSpan, NO_ROOT_SERVICE, type TraceView } from './trace-view.js';
export { fromAttribute, valueText, formatDuration, type Value, type Scalar } from './values.js';
export type * from './ast.js';

/** Parses and plans in one step: what callers holding query text usually want. */
export function compileTraceQL(text: string) {
  return planTraceQL(parseTraceQL(text));
}

export default definePlugin({
  name: 'query-traceql',
  description: 'TraceQL parser, planner and executor (Grafana Tempo semantics) over the trace store.',
  register(ctx) {
    ctx.extensions.queryLanguage({
      name: 'traceql',
      parse: (text: string) => parseTraceQL(text),
      execute(ast: unknown, options: unknown, qctx: QueryContext): Promise<TraceQLSearchResult> {
        return searchTraces(planTraceQL(ast as TraceQLQuery), options as TraceQLSearchOptions, qctx);
      },
    });
  },
});
