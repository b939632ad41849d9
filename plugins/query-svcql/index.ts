/**
 * SvcQL: Lookout's log query language (SVCQL.md). This file is the plugin's public API; the
 * lexer/parser (lexer.ts, parser.ts), planner (planner.ts) and executor (executor.ts,
 * operators.ts) live apart.
 */
import type { QueryContext } from '../../kernel/extension-points.js';
import type { LabelMatcher, MatcherAlternatives } from '../../kernel/matchers.js';
import type { EventRecord, LogRecord } from '../../kernel/models.js';
import { definePlugin } from '../../kernel/plugin.js';
import type { LogStore } from '../../kernel/storage.js';
import type { SvcQueryAst } from './ast.js';
import { compileEventQuery, eventMatchers, parseEventQuery } from './events.js';
import { buildTable, executePlan } from './executor.js';
import { parseQuery } from './parser.js';
import { planQuery, type TimeRangeNs } from './planner.js';
import { assertRecordQuery as assertRecords, compileRecordFilter as recordFilter, pageRecords } from './records.js';
import type { Cell, SvcQLTable } from './table.js';

export { SvcQLError, type SvcQLErrorCode } from './errors.js';
export type { Cell, SvcQLTable, TimeRangeNs };
export type { AggSpec, Expr, FieldRef, SearchNode, Stage } from './ast.js';
export {
  columnarOverScan,
  hasColumnarScan,
  type ColumnarLogStore,
  type LabelColumn,
  type LogColumnBatch,
  type LogColumnScanQuery,
} from './columnar.js';

/** Parsed query: search expression + stages (see ast.ts). */
export interface SvcQuery extends SvcQueryAst {}

export interface SvcQLRunContext {
  logs: LogStore;
  /** RBAC scope for the `logs` stream (undefined = unrestricted, [] = nothing). */
  scope?: MatcherAlternatives;
  signal?: AbortSignal;
  /** Unix ms after which the query stops with a timeout error. */
  deadline?: number;
}

/** Parses a full query; throws SvcQLError (SVCQL_SYNTAX_ERROR / SVCQL_INVALID_ARGUMENT). */
export function parseSvcQL(text: string): SvcQuery {
  return parseQuery(text);
}

/**
 * getLogMetricsResultWithSvcQl: full query → table (non-aggregated: `_timestamp` as decimal ns
 * string, `_message`, made fields; at most 1000 rows without `limit`).
 */
export async function runSvcQLTable(q: SvcQuery, range: TimeRangeNs, ctx: SvcQLRunContext): Promise<SvcQLTable> {
  const plan = planQuery(q, range);
  const rows = await executePlan(plan, ctx);
  return buildTable(rows, plan, q.stages);
}

/**
 * getLogsWithSvcQl: only where/parse/json/logfmt stages allowed (else SVCQL_INVALID_ARGUMENT
 * `stage "<s>" not allowed here at L:C`).
 */
export function assertRecordQuery(q: SvcQuery): void {
  assertRecords(q);
}

/**
 * Pages raw records, unchanged, newest first (ties: later-ingested first). The cursor is opaque,
 * null when nothing is left, valid for the same query and range; a bad one is a
 * LookoutError('bad_request', 'invalid cursor', {code: 'BAD_USER_INPUT'}).
 */
export function pageSvcQLRecords(
  q: SvcQuery,
  range: TimeRangeNs,
  page: { limit: number; cursor?: string | null },
  ctx: SvcQLRunContext,
): Promise<{ records: LogRecord[]; cursor: string | null }> {
  return pageRecords(q, range, page, ctx);
}

/** For live tail: true when a record passes the search and the filter stages. */
export function compileRecordFilter(q: SvcQuery): (r: LogRecord) => boolean {
  return recordFilter(q);
}

/** Events: search expression only (any stage → SVCQL_INVALID_ARGUMENT). */
export function parseEventSearch(text: string): SvcQuery {
  return parseEventQuery(text);
}

/** Free text matches title or text; `@x` an attribute; keys are labels. */
export function compileEventFilter(q: SvcQuery): (e: EventRecord) => boolean {
  return compileEventQuery(q);
}

/** Label matchers safe to push into EventStore.scan (top-level AND-ed label terms). */
export function eventPushdown(q: SvcQuery): { matchers: LabelMatcher[] } {
  return { matchers: eventMatchers(q) };
}

/** Options of the `svcql` QueryLanguage's execute: a table query over a range. */
export interface SvcQLExecuteOptions {
  range: TimeRangeNs;
}

async function execute(q: SvcQuery, options: SvcQLExecuteOptions, ctx: QueryContext): Promise<SvcQLTable> {
  return runSvcQLTable(q, options.range, {
    logs: ctx.storage.logs,
    scope: await ctx.scope('logs'),
    signal: ctx.signal,
    deadline: ctx.deadline,
  });
}

const plugin = definePlugin({
  name: 'query-svcql',
  description: 'SvcQL, the log query language: parser, planner and streaming executor',
  register(ctx) {
    ctx.extensions.queryLanguage({
      name: 'svcql',
      parse: parseSvcQL,
      execute: (ast, options, qctx) => execute(ast as SvcQuery, options as SvcQLExecuteOptions, qctx),
    });
  },
});

export default plugin;

