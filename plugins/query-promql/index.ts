/**
 * The `query-promql` plugin: PromQL with Prometheus 3.x semantics. This file is the module's
 * public contract; the HTTP API plugin codes against exactly these exports.
 *
 * Parser (parser/), evaluator (engine/) and result encoding (engine/json.ts) are kept apart.
 */
import { definePlugin } from '../../kernel/plugin.js';
import type { QueryContext } from '../../kernel/extension-points.js';
import { parsePromQL } from './parser/parser.js';
import type { Expr } from './parser/ast.js';
import { PromQLEngine, type PromQueryOutput } from './engine/engine.js';

export { parsePromQL, PromQLParseError } from './parser/parser.js';
export { formatPromQL } from './parser/format.js';
export type { Expr } from './parser/ast.js';
export {
  PromQLEngine,
  PromQLExecutionError,
  type PromQLEngineOptions,
  type PromEvalContext,
  type PromPoint,
  type PromResult,
  type PromQueryOutput,
} from './engine/engine.js';
export { resultToPrometheusJSON } from './engine/json.js';

/** Options of `execute` through the generic QueryLanguage extension point. */
export interface PromQLExecuteOptions {
  /** Instant query when `end`/`step` are absent. Unix ms. */
  time?: number;
  start?: number;
  end?: number;
  step?: number;
  maxSamples?: number;
}

const defaultEngine = new PromQLEngine();

const plugin = definePlugin({
  name: 'query-promql',
  description: 'PromQL parser and evaluator (Prometheus 3.x semantics).',
  register(ctx) {
    ctx.extensions.queryLanguage({
      name: 'promql',
      parse: (text: string) => parsePromQL(text),
      async execute(ast: unknown, options: unknown, qctx: QueryContext): Promise<PromQueryOutput> {
        const o = (options ?? {}) as PromQLExecuteOptions;
        const engine = o.maxSamples ? new PromQLEngine({ maxSamples: o.maxSamples }) : defaultEngine;
        const ectx = {
          metrics: qctx.storage.metrics,
          scope: await qctx.scope('metrics'),
          signal: qctx.signal,
          deadline: qctx.deadline,
        };
        const expr = ast as Expr;
        if (o.start !== undefined && o.end !== undefined && o.step !== undefined) {
          return engine.rangeQuery(expr, o.start, o.end, o.step, ectx);
        }
        return engine.instantQuery(expr, o.time ?? Date.now(), ectx);
      },
    });
  },
});

export default plugin;
