/**
 * POST /query: GraphQL over HTTP. Only a bad token (401, by the kernel) and a body that is not
 * JSON (400) change the status; everything else is 200 with `errors` (GRAPHQL.md).
 */
import { getOperationAST, type ExecutionResult, type GraphQLError } from 'graphql';
import type { GetEnvelopedFn } from '@envelop/core';
import { HttpResponse, type RequestContext } from '../../kernel/http/routes.js';
import type { GraphQLTransportContext, Services } from './context.js';
import { documentError, formatError } from './errors.js';
import type { Logger } from '../../kernel/logger.js';

export interface GraphQLRequestBody {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

const respond = (result: ExecutionResult): HttpResponse => HttpResponse.json(result);
const fail = (message: string, code: 'GRAPHQL_PARSE_FAILED' | 'GRAPHQL_VALIDATION_FAILED' | 'BAD_USER_INPUT') =>
  respond({ errors: [formatError(documentError(message, code))] });

export function createHttpHandler(
  getEnveloped: () => GetEnvelopedFn<GraphQLTransportContext>,
  services: Services,
  logger: Logger,
): (ctx: RequestContext) => Promise<HttpResponse> {
  return async (ctx) => {
    const body = await ctx.json<unknown>();
    if (typeof body !== 'object' || body === null || Array.isArray(body) || typeof (body as GraphQLRequestBody).query !== 'string') {
      return fail('the request body must be a JSON object with a "query" string', 'GRAPHQL_PARSE_FAILED');
    }
    const { query, variables, operationName } = body as GraphQLRequestBody;
    if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) {
      return fail('"variables" must be a JSON object', 'BAD_USER_INPUT');
    }
    if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
      return fail('"operationName" must be a string', 'BAD_USER_INPUT');
    }
    const env = getEnveloped()({ principal: ctx.principal, services, logger, signal: ctx.signal });
    let document;
    try {
      document = env.parse(query);
    } catch (e) {
      return respond({ errors: [formatError(e as Error)] });
    }
    const errors = env.validate(env.schema, document);
    if (errors.length) return respond({ errors: errors.map((e: GraphQLError) => formatError(e)) });
    const op = getOperationAST(document, operationName ?? undefined);
    if (!op) {
      return fail(
        operationName ? `unknown operation "${operationName}"` : 'the document has several operations; give operationName',
        'GRAPHQL_VALIDATION_FAILED',
      );
    }
    if (op.operation === 'subscription') {
      return fail('subscriptions are served over WebSocket at /query (subprotocol graphql-transport-ws)', 'BAD_USER_INPUT');
    }
    const contextValue = await env.contextFactory();
    const result = (await env.execute({
      schema: env.schema,
      document,
      variableValues: variables ?? undefined,
      operationName: operationName ?? undefined,
      contextValue,
    })) as ExecutionResult;
    return respond(result);
  };
}
