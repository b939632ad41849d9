/**
 * GraphQL at /query: POST for queries and mutations, WebSocket (graphql-transport-ws) for
 * subscriptions, GET from a browser for the explorer. The schema is assembled at start from
 * the contributions of this plugin (logs) and of others (events, facets) through
 * {@link GraphQLSchemaToken}; envelop plugins apply auth, RBAC scope, limits, timeout and the
 * error shape to every operation.
 */
import { envelop, useEngine, useSchema, type GetEnvelopedFn } from '@envelop/core';
import { execute, parse, specifiedRules, subscribe, validate } from 'graphql';
import { definePlugin } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import type { GraphQLTransportContext } from './context.js';
import { GraphQLSchemaToken, type GraphQLContribution } from './contributions.js';
import { useAuthContext, useDocumentLimits, useErrorFormatting, useRbacScope, useTimeout } from './envelop-plugins.js';
import { explorerRoutes } from './explorer.js';
import { createHttpHandler } from './http-transport.js';
import { TailHub } from './log-stream.js';
import { logsContribution } from './logs-operations.js';
import { buildLookoutSchema } from './schema.js';
import { createWsTransport } from './ws-transport.js';

export { GraphQLSchemaToken } from './contributions.js';
export type { GraphQLContribution, GraphQLComponent, RootFieldDefinition } from './contributions.js';
export type { GraphQLRequestContext } from './context.js';

/** GRAPHQL.md: operations over 30 s fail with QUERY_TIMEOUT. */
export const QUERY_TIMEOUT_MS = 30_000;
export const LIVE_LIFETIME_MS = 3_600_000;

const num = (v: unknown, dflt: number): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : dflt);

const plugin = definePlugin({
  name: 'api-graphql',
  description: 'GraphQL at /query: logs, events and favorite facets; subscriptions over graphql-transport-ws',
  after: ['query-svcql'],
  register(ctx) {
    // Options exist so tests can shorten the clocks; operators normally leave them alone.
    const timeoutMs = Math.min(num(ctx.options.queryTimeoutMs, QUERY_TIMEOUT_MS), QUERY_TIMEOUT_MS);
    const hub = new TailHub();
    const contributions: GraphQLContribution[] = [
      logsContribution({
        hub,
        liveLifetimeMs: num(ctx.options.liveLifetimeMs, LIVE_LIFETIME_MS),
        liveIntervalMs: num(ctx.options.liveIntervalMs, 1000),
      }),
    ];
    let started = false;
    ctx.provide(GraphQLSchemaToken, {
      contribute(c) {
        if (started) throw new Error('graphql: contributions must be made during register');
        contributions.push(c);
      },
    });

    let getEnveloped: GetEnvelopedFn<GraphQLTransportContext> | undefined;
    const enveloped = () => {
      if (!getEnveloped) throw new Error('graphql: schema not built yet');
      return getEnveloped;
    };

    ctx.onStart(() => {
      started = true;
      const built = buildLookoutSchema(contributions, ctx.logger);
      getEnveloped = envelop({
        plugins: [
          useEngine({ parse, validate, specifiedRules, execute, subscribe }),
          useSchema(built.schema),
          useDocumentLimits(),
          useAuthContext(),
          useRbacScope(timeoutMs),
          useTimeout(built.components),
          useErrorFormatting(),
        ],
      }) as unknown as GetEnvelopedFn<GraphQLTransportContext>;
      ctx.get(Tokens.Ingest).onBatch((batch) => {
        if (batch.logs?.length) hub.notify();
      });
    });

    ctx.route({
      method: 'POST',
      path: '/query',
      family: 'graphql',
      auth: 'bearer',
      handler: createHttpHandler(enveloped, ctx, ctx.logger),
    });
    for (const r of explorerRoutes()) ctx.route(r);
    ctx.onUpgrade('/query', createWsTransport(enveloped, ctx, ctx.logger));
  },
});

export default plugin;
