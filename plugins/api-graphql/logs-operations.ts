/**
 * The log operations of GRAPHQL.md over SvcQL: getLogMetricsResultWithSvcQl (a table),
 * getLogsWithSvcQl (raw records, cursor pages) and the getLogsWithSvcQlStream subscription.
 * Every one reads inside the principal's `logs` scope.
 */
import { createQueryContext, timeQuery } from '../../kernel/query-context.js';
import { LookoutError } from '../../kernel/errors.js';
import {
  assertRecordQuery,
  compileRecordFilter,
  pageSvcQLRecords,
  parseSvcQL,
  runSvcQLTable,
  type SvcQLRunContext,
  type SvcQuery,
  type TimeRangeNs,
} from '../query-svcql/index.js';
import { checkLimit, checkQueryText, cursorArg, parseRange, parseTime } from './arguments.js';
import type { GraphQLRequestContext } from './context.js';
import type { GraphQLContribution } from './contributions.js';
import { InputError } from './errors.js';
import { LiveLogTail, PagedLogStream, toGraphQLLog, type LogPageOut, type TailHub } from './log-stream.js';

export const LOGS_TYPEDEFS = /* GraphQL */ `
type Query {
  getLogMetricsResultWithSvcQl(query: String!, startTs: Time!, endTs: Time!): SvcQlTable!
  getLogsWithSvcQl(query: String!, startTs: Time!, endTs: Time!, limit: Int = 100, cursor: String): LogPage!
}
type Subscription {
  getLogsWithSvcQlStream(query: String!, startTs: Time, endTs: Time, limit: Int = 100, live: Boolean = false): LogPage!
}
type SvcQlTable { ColumnHeaders: [String!]!  GroupKeys: [String!]!  AggrValues: [String!]!  TableResult: [[JSON]!]! }
type LogRecord { timestamp: String!  message: String!  labels: JSON!  facets: JSON! }
type LogPage { logs: [LogRecord!]!  cursor: String }
`;

export interface LogsOperationOptions {
  hub: TailHub;
  /** Live tails end after this (default 3600 s). */
  liveLifetimeMs: number;
  /** Spacing of live pages (default 1 s). */
  liveIntervalMs: number;
}

/** Parses a record query (getLogsWithSvcQl rules: filter stages only). */
function recordQuery(text: unknown): SvcQuery {
  const q = parseSvcQL(checkQueryText(text));
  assertRecordQuery(q);
  return q;
}

async function runContext(ctx: GraphQLRequestContext, query = ctx.query): Promise<SvcQLRunContext> {
  return { logs: query.storage.logs, scope: await query.scope('logs'), signal: query.signal, deadline: query.deadline };
}

async function fetchPage(
  q: SvcQuery,
  range: TimeRangeNs,
  limit: number,
  cursor: string | null,
  run: SvcQLRunContext,
): Promise<LogPageOut> {
  const page = await withinDeadline(pageSvcQLRecords(q, range, { limit, cursor }, run), run.signal);
  return { logs: page.records.map(toGraphQLLog), cursor: page.cursor };
}

/** Rejects with QUERY_TIMEOUT when the signal aborts first (the work itself also sees it). */
function withinDeadline<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new LookoutError('timeout', 'query timed out'));
    // Always settle through `p` too, so its late rejection is never unhandled.
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function logsContribution(opts: LogsOperationOptions): GraphQLContribution {
  return {
    typeDefs: LOGS_TYPEDEFS,
    fields: {
      Query: {
        getLogMetricsResultWithSvcQl: {
          component: 'logs',
          async resolve(_src, args, ctx) {
            const q = parseSvcQL(checkQueryText(args.query));
            const range = parseRange(args.startTs, args.endTs);
            const runCtx = await runContext(ctx);
            const t = await timeQuery(ctx.services, 'svcql', () => runSvcQLTable(q, range, runCtx));
            return { ColumnHeaders: t.columns, GroupKeys: t.groupKeys, AggrValues: t.aggrValues, TableResult: t.rows };
          },
        },
        getLogsWithSvcQl: {
          component: 'logs',
          async resolve(_src, args, ctx) {
            const q = recordQuery(args.query);
            const range = parseRange(args.startTs, args.endTs);
            const limit = checkLimit(args.limit, 100);
            const runCtx = await runContext(ctx);
            return timeQuery(ctx.services, 'svcql', () => fetchPage(q, range, limit, cursorArg(args.cursor), runCtx));
          },
        },
      },
      Subscription: {
        getLogsWithSvcQlStream: {
          component: 'logs',
          async subscribe(_src, args, ctx) {
            const q = recordQuery(args.query);
            const limit = checkLimit(args.limit, 100);
            if (args.live === true) {
              if (args.endTs !== undefined && args.endTs !== null) throw new InputError('endTs is not allowed with live: true');
              const startNs =
                args.startTs === undefined || args.startTs === null
                  ? BigInt(Date.now()) * 1_000_000n
                  : parseTime(args.startTs, 'startTs');
              return new LiveLogTail({
                logs: ctx.query.storage.logs,
                scope: await ctx.scope('logs'),
                filter: compileRecordFilter(q),
                startNs,
                limit,
                hub: opts.hub,
                lifetimeMs: opts.liveLifetimeMs,
                intervalMs: opts.liveIntervalMs,
                signal: ctx.signal,
                onDropped: (n) => ctx.logger.warn('live tail dropped records above its rate', { dropped: n }),
              });
            }
            if (args.startTs === undefined || args.startTs === null || args.endTs === undefined || args.endTs === null) {
              throw new InputError('startTs and endTs are required unless live is true');
            }
            const range = parseRange(args.startTs, args.endTs);
            // Each page gets its own time budget: a long stream is many queries, not one.
            const page = async (cursor: string | null) => {
              // A per-page signal linked to the connection's, unlinked afterwards, so that a
              // 100-page stream does not pile listeners onto the connection's signal.
              const linked = new AbortController();
              const onAbort = () => linked.abort(ctx.signal.reason);
              if (ctx.signal.aborted) onAbort();
              else ctx.signal.addEventListener('abort', onAbort, { once: true });
              try {
                const qctx = createQueryContext(ctx.services, ctx.principal, { signal: linked.signal, timeoutMs: ctx.timeoutMs });
                // Resolving the scope is part of the page's budget.
                const run = async () => fetchPage(q, range, limit, cursor, await runContext(ctx, qctx));
                return await withinDeadline(run(), qctx.signal);
              } finally {
                ctx.signal.removeEventListener('abort', onAbort);
              }
            };
            return new PagedLogStream(await page(null), page);
          },
        },
      },
    },
  };
}
