/**
 * GraphQL error shapes of GRAPHQL.md "Errors and limits": every error carries `message`,
 * `path` (field names, `[]` for document errors) and `extensions.{code, component}`; SvcQL
 * errors add `position`. Resolvers throw anything; {@link toFieldError} turns it into an
 * {@link ApiError} whose `extensions` graphql-js copies onto the located GraphQLError.
 */
import { GraphQLError, type ExecutionResult, type OperationDefinitionNode } from 'graphql';
import { LookoutError } from '../../kernel/errors.js';
import type { Logger } from '../../kernel/logger.js';
import { SvcQLError } from '../query-svcql/index.js';
import type { GraphQLComponent } from './contributions.js';

export type ErrorCode =
  | 'GRAPHQL_PARSE_FAILED'
  | 'GRAPHQL_VALIDATION_FAILED'
  | 'BAD_USER_INPUT'
  | 'QUERY_TOO_LONG'
  | 'SVCQL_SYNTAX_ERROR'
  | 'SVCQL_INVALID_ARGUMENT'
  | 'SVCQL_LIMIT_EXCEEDED'
  | 'QUERY_TIMEOUT'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'CONFLICT'
  | 'INTERNAL_ERROR';

export interface ApiErrorExtensions {
  code: ErrorCode;
  component: GraphQLComponent;
  position?: { line: number; column: number };
  [key: string]: unknown;
}

/** An error with the extensions GRAPHQL.md prescribes. */
export class ApiError extends Error {
  readonly extensions: ApiErrorExtensions;
  constructor(message: string, extensions: ApiErrorExtensions) {
    super(message);
    this.name = 'ApiError';
    this.extensions = extensions;
  }
}

/** Input errors raised while checking arguments (component filled in by the field guard). */
export class InputError extends Error {
  constructor(
    message: string,
    readonly code: ErrorCode = 'BAD_USER_INPUT',
  ) {
    super(message);
    this.name = 'InputError';
  }
}

const KIND_CODE: Record<string, ErrorCode> = {
  bad_request: 'BAD_USER_INPUT',
  unprocessable: 'BAD_USER_INPUT',
  too_large: 'BAD_USER_INPUT',
  unauthorized: 'UNAUTHENTICATED',
  forbidden: 'FORBIDDEN',
  conflict: 'CONFLICT',
  timeout: 'QUERY_TIMEOUT',
};

const KNOWN_CODES = new Set<string>([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'QUERY_TOO_LONG',
  'SVCQL_SYNTAX_ERROR',
  'SVCQL_INVALID_ARGUMENT',
  'SVCQL_LIMIT_EXCEEDED',
  'QUERY_TIMEOUT',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'CONFLICT',
  'INTERNAL_ERROR',
]);

/** Maps anything a resolver threw to an ApiError; unknown failures are logged, never leaked. */
export function toFieldError(e: unknown, component: GraphQLComponent, logger: Logger): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof SvcQLError) {
    return new ApiError(e.message, { code: e.code, component, position: { line: e.line, column: e.column } });
  }
  if (e instanceof InputError) return new ApiError(e.message, { code: e.code, component });
  if (e instanceof LookoutError) {
    const code = e.code && KNOWN_CODES.has(e.code) ? (e.code as ErrorCode) : KIND_CODE[e.kind];
    if (code) return new ApiError(code === 'QUERY_TIMEOUT' ? 'query timed out' : e.message, { code, component });
  }
  logger.error('graphql resolver failed', { component, err: e });
  return new ApiError('internal server error', { code: 'INTERNAL_ERROR', component });
}

/** A document-level error (before execution): path `[]`, component `graphql`. */
export function documentError(message: string, code: ErrorCode): GraphQLError {
  return new GraphQLError(message, { extensions: { code, component: 'graphql' } });
}

/** Tags graphql-js errors that carry no code yet (parse, validation, variable coercion). */
export function withCode(err: GraphQLError, code: ErrorCode): GraphQLError {
  if (typeof err.extensions?.code === 'string') return err;
  return new GraphQLError(err.message, {
    nodes: err.nodes,
    source: err.source,
    positions: err.positions,
    path: err.path,
    originalError: err.originalError,
    extensions: { ...err.extensions, code, component: 'graphql' },
  });
}

/**
 * Normalizes one error so that its JSON form is exactly `{message, path, extensions}`
 * (no locations: GRAPHQL.md's shape).
 */
export function formatError(err: GraphQLError | Error): GraphQLError {
  const gql = err instanceof GraphQLError ? err : undefined;
  const ext = (gql?.extensions ?? {}) as Partial<ApiErrorExtensions>;
  const original = gql?.originalError;
  let code = typeof ext.code === 'string' ? ext.code : undefined;
  let message = err.message;
  if (!code) {
    // A failure graphql-js raised itself during execution (e.g. variable coercion) is the
    // caller's input; anything else unknown is internal and must not leak.
    if (gql && !original) code = 'BAD_USER_INPUT';
    else {
      code = 'INTERNAL_ERROR';
      message = 'internal server error';
    }
  }
  const extensions: Record<string, unknown> = { code, component: ext.component ?? 'graphql' };
  if (ext.position) extensions.position = ext.position;
  const path = (gql?.path ?? []).filter((p): p is string => typeof p === 'string');
  return new GraphQLError(message, { path, extensions });
}

/**
 * GRAPHQL.md: a failed operation answers `data.<op>: null`. The schema's root fields are
 * non-null, so graphql-js nulls all of `data`; give each root response key its null back.
 */
export function formatResult(result: ExecutionResult, operation: OperationDefinitionNode | undefined): ExecutionResult {
  const errors = result.errors?.map((e) => formatError(e));
  if (!errors?.length) return result;
  let data = result.data;
  if (data === null && operation) {
    const out: Record<string, null> = {};
    for (const sel of operation.selectionSet.selections) {
      if (sel.kind === 'Field') out[sel.alias?.value ?? sel.name.value] = null;
    }
    data = out;
  }
  return { ...(data !== undefined ? { data } : {}), errors };
}
