/**
 * GraphQL subscriptions over WebSocket at /query, protocol graphql-transport-ws (graphql-ws 6 +
 * ws). The token comes from the `connection_init` payload `{"Authorization": "Bearer …"}` or
 * the upgrade request's Authorization header; a bad one closes the socket with 4403.
 *
 * The subscription is started inside `onSubscribe` so that errors raised before the first
 * page reach the client as an `error` message, as GRAPHQL.md requires; graphql-ws would
 * otherwise send them as a `next`.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { getOperationAST, GraphQLError, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { GetEnvelopedFn } from '@envelop/core';
import { WebSocketServer, type WebSocket } from 'ws';
import { useServer } from 'graphql-ws/use/ws';
import type { Principal } from '../../kernel/auth.js';
import type { Logger } from '../../kernel/logger.js';
import type { UpgradeHandler } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import type { GraphQLTransportContext, Services } from './context.js';
import { documentError, formatError } from './errors.js';

/** Subscriptions one connection may run at once. */
export const MAX_SUBSCRIPTIONS_PER_SOCKET = 50;

interface SocketState {
  principal: Principal;
  abort: AbortController;
  /** Ids of running subscriptions. */
  active: Set<string>;
}

interface PreparedRoot {
  prepared?: AsyncIterable<ExecutionResult> | ExecutionResult;
  execute?: (args: ExecutionArgs) => Promise<ExecutionResult>;
}

function bearerFrom(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(value.trim());
  return m ? m[1]!.trim() : undefined;
}

export function createWsTransport(
  getEnveloped: () => GetEnvelopedFn<GraphQLTransportContext>,
  services: Services,
  logger: Logger,
): UpgradeHandler {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  const sockets = new WeakMap<WebSocket, SocketState>();

  const errorsOf = (errs: readonly GraphQLError[]) => errs.map((e) => formatError(e));

  useServer(
    {
      isProd: true,
      async onConnect(ctx) {
        const params = ctx.connectionParams ?? {};
        const raw = params.Authorization ?? params.authorization ?? ctx.extra.request.headers.authorization;
        const token = bearerFrom(raw);
        if (!token) return false;
        const principal = await services.get(Tokens.Authenticator).authenticateBearer(token, ctx.extra.request.headers);
        if (!principal) return false;
        const abort = new AbortController();
        ctx.extra.socket.once('close', () => abort.abort());
        sockets.set(ctx.extra.socket, { principal, abort, active: new Set() });
        return true;
      },
      async onSubscribe(ctx, id, payload) {
        const state = sockets.get(ctx.extra.socket);
        if (!state) return [documentError('not authenticated', 'UNAUTHENTICATED')];
        if (state.active.size >= MAX_SUBSCRIPTIONS_PER_SOCKET) {
          return [documentError(`at most ${MAX_SUBSCRIPTIONS_PER_SOCKET} operations per connection`, 'BAD_USER_INPUT')];
        }
        const env = getEnveloped()({ principal: state.principal, services, logger, signal: state.abort.signal });
        let document;
        try {
          document = env.parse(payload.query);
        } catch (e) {
          return [formatError(e as Error)];
        }
        const errors = env.validate(env.schema, document);
        if (errors.length) return errorsOf(errors);
        const op = getOperationAST(document, payload.operationName ?? undefined);
        if (!op) return [formatError(documentError('unable to identify the operation', 'GRAPHQL_VALIDATION_FAILED'))];
        const args: ExecutionArgs = {
          schema: env.schema,
          document,
          variableValues: payload.variables ?? undefined,
          operationName: payload.operationName ?? undefined,
          contextValue: await env.contextFactory(),
        };
        if (op.operation !== 'subscription') {
          const root: PreparedRoot = { execute: (a) => env.execute(a) as Promise<ExecutionResult> };
          return { ...args, rootValue: root };
        }
        const result = (await env.subscribe(args)) as AsyncIterable<ExecutionResult> | ExecutionResult;
        if (!(Symbol.asyncIterator in Object(result))) {
          const errs = (result as ExecutionResult).errors ?? [documentError('subscription failed', 'INTERNAL_ERROR')];
          return errorsOf(errs);
        }
        state.active.add(id);
        const root: PreparedRoot = { prepared: result };
        return { ...args, rootValue: root };
      },
      execute: (args) => (args.rootValue as PreparedRoot).execute!(args),
      subscribe: (args) => (args.rootValue as PreparedRoot).prepared!,
      onComplete(ctx, id) {
        sockets.get(ctx.extra.socket)?.active.delete(id);
      },
    },
    wss,
  );

  return {
    handle(req: IncomingMessage, socket: Duplex, head: Buffer) {
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    },
    async close() {
      for (const client of wss.clients) client.close(1001, 'server shutting down');
      const deadline = Date.now() + 1000;
      while (wss.clients.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
