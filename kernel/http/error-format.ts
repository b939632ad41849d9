/**
 * Maps a LookoutError to each API family's documented error body. This is the only place where
 * error bodies are shaped.
 */
import type { LookoutError } from '../errors.js';

/** Which error format a route speaks. */
export type ErrorFamily = 'prometheus' | 'plain' | 'json' | 'graphql' | 'ingest' | 'tempo';

export interface FormattedError {
  status: number;
  contentType: string;
  body: string;
  headers: Record<string, string>;
}

const PROM_ERROR_TYPE: Record<string, string> = {
  bad_request: 'bad_data',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  not_found: 'not_found',
  conflict: 'bad_data',
  too_large: 'bad_data',
  rate_limited: 'unavailable',
  unavailable: 'unavailable',
  timeout: 'timeout',
  execution: 'execution',
  unprocessable: 'execution',
  internal: 'internal',
};

const GRAPHQL_CODE: Record<string, string> = {
  bad_request: 'BAD_USER_INPUT',
  unauthorized: 'UNAUTHENTICATED',
  forbidden: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  conflict: 'CONFLICT',
  too_large: 'BAD_USER_INPUT',
  rate_limited: 'RATE_LIMITED',
  unavailable: 'UNAVAILABLE',
  timeout: 'QUERY_TIMEOUT',
  execution: 'INTERNAL_ERROR',
  unprocessable: 'BAD_USER_INPUT',
  internal: 'INTERNAL_ERROR',
};

export function formatError(family: ErrorFamily, err: LookoutError): FormattedError {
  const headers = { ...err.headers };
  switch (family) {
    case 'prometheus':
      return {
        status: err.status,
        contentType: 'application/json',
        headers,
        body: JSON.stringify({
          status: 'error',
          errorType: err.code ?? PROM_ERROR_TYPE[err.kind] ?? 'internal',
          error: err.message,
        }),
      };
    case 'graphql': {
      // Only authentication and unparseable bodies change the HTTP status for GraphQL.
      const status = err.kind === 'unauthorized' ? 401 : err.details.malformedBody === true ? 400 : 200;
      return {
        status,
        contentType: 'application/json',
        headers,
        body: JSON.stringify({
          errors: [
            {
              message: err.message,
              path: (err.details.path as string[] | undefined) ?? [],
              extensions: {
                code: err.code ?? GRAPHQL_CODE[err.kind] ?? 'INTERNAL_ERROR',
                component: (err.details.component as string | undefined) ?? 'graphql',
              },
            },
          ],
        }),
      };
    }
    case 'json':
      return {
        status: err.status,
        contentType: 'application/json',
        headers,
        body: JSON.stringify({ error: err.code ?? err.kind, message: err.message }),
      };
    case 'plain':
    case 'ingest':
    case 'tempo':
      return { status: err.status, contentType: 'text/plain; charset=utf-8', headers, body: err.message + '\n' };
  }
}
