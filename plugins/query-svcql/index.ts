/**
 * SvcQL: Lookout's log query language (see /work/shared/SVCQL.md). Public API of the plugin;
 * lexer/parser, planner and executor live in their own modules.
 */
import { definePlugin } from '../../kernel/plugin.js';
import type { LabelMatcher, MatcherAlternatives } from '../../kernel/matchers.js';
import type { EventRecord, LogRecord } from '../../kernel/models.js';
import type { LogStore } from '../../kernel/storage.js';

export type SvcQLErrorCode = 'SVCQL_SYNTAX_ERROR' | 'SVCQL_INVALID_ARGUMENT' | 'SVCQL_LIMIT_EXCEEDED';

/** A query error; `message` is exactly as SVCQL.md writes it (position included). */
export class SvcQLError extends Error {
  constructor(
    readonly code: SvcQLErrorCode,
    message: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
    this.name = 'SvcQLError';
  }
}

/** Parsed query: search expression + stages. */
export interface SvcQuery {
  readonly text: string;
}

export type Cell = string | number | boolean | null;

export interface SvcQLTable {
  columns: string[];
  groupKeys: string[];
  aggrValues: string[];
  rows: Cell[][];
}

export interface SvcQLRunContext {
  logs: LogStore;
  scope?: MatcherAlternatives;
  signal?: AbortSignal;
  deadline?: number;
}

/** [start, end) */
export interface TimeRangeNs {
  startNs: bigint;
  endNs: bigint;
}

export function parseSvcQL(text: string): SvcQuery {
  return { text };
}

/** getLogMetricsResultWithSvcQl: full query → table. */
export async function runSvcQLTable(_q: SvcQuery, _range: TimeRangeNs, _ctx: SvcQLRunContext): Promise<SvcQLTable> {
  throw new Error('not implemented yet');
}

/** getLogsWithSvcQl: only where/parse/json/logfmt stages allowed. */
export function assertRecordQuery(_q: SvcQuery): void {}

export async function pageSvcQLRecords(
  _q: SvcQuery,
  _range: TimeRangeNs,
  _page: { limit: number; cursor?: string | null },
  _ctx: SvcQLRunContext,
): Promise<{ records: LogRecord[]; cursor: string | null }> {
  throw new Error('not implemented yet');
}

/** For live tail: true when a record passes the search and the filter stages. */
export function compileRecordFilter(_q: SvcQuery): (r: LogRecord) => boolean {
  return () => true;
}

/** Events: search expression only. */
export function parseEventSearch(text: string): SvcQuery {
  return { text };
}

export function compileEventFilter(_q: SvcQuery): (e: EventRecord) => boolean {
  return () => true;
}

export function eventPushdown(_q: SvcQuery): { matchers: LabelMatcher[] } {
  return { matchers: [] };
}

const plugin = definePlugin({
  name: 'query-svcql',
  description: 'SvcQL log query language',
  register(ctx) {
    ctx.extensions.queryLanguage({
      name: 'svcql',
      parse: parseSvcQL,
      execute: async () => {
        throw new Error('not implemented yet');
      },
    });
  },
});

export default plugin;
