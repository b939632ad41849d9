/**
 * Errors are typed once here and mapped to each API family's documented format in
 * `http/error-format.ts`. Plugins throw these; they never format error bodies themselves.
 */
export type ErrorKind =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'too_large'
  | 'rate_limited'
  | 'unavailable'
  | 'timeout'
  | 'execution'
  | 'unprocessable'
  | 'internal';

const STATUS: Record<ErrorKind, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  rate_limited: 429,
  unavailable: 503,
  timeout: 503,
  execution: 422,
  unprocessable: 422,
  internal: 500,
};

export interface LookoutErrorOptions {
  /** Machine-readable code for families that carry one (GraphQL extensions.code, ...). */
  code?: string;
  /** Overrides the status derived from the kind. */
  status?: number;
  /** Extra headers (e.g. Retry-After). */
  headers?: Record<string, string>;
  /** Extra fields for structured families (e.g. GraphQL `position`). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class LookoutError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly headers: Record<string, string>;
  readonly details: Record<string, unknown>;
  constructor(
    readonly kind: ErrorKind,
    message: string,
    opts: LookoutErrorOptions = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'LookoutError';
    this.status = opts.status ?? STATUS[kind];
    this.code = opts.code;
    this.headers = opts.headers ?? {};
    this.details = opts.details ?? {};
  }
}

export const badRequest = (msg: string, opts?: LookoutErrorOptions) => new LookoutError('bad_request', msg, opts);
export const unauthorized = (msg = 'Unauthorized', opts?: LookoutErrorOptions) =>
  new LookoutError('unauthorized', msg, opts);
export const forbidden = (msg = 'Forbidden', opts?: LookoutErrorOptions) => new LookoutError('forbidden', msg, opts);
export const notFound = (msg = 'Not Found', opts?: LookoutErrorOptions) => new LookoutError('not_found', msg, opts);
export const conflict = (msg: string, opts?: LookoutErrorOptions) => new LookoutError('conflict', msg, opts);
export const tooLarge = (msg: string, opts?: LookoutErrorOptions) => new LookoutError('too_large', msg, opts);

export function isLookoutError(e: unknown): e is LookoutError {
  return e instanceof LookoutError;
}

/** Wraps anything thrown into a LookoutError without leaking internals to clients. */
export function toLookoutError(e: unknown): LookoutError {
  if (e instanceof LookoutError) return e;
  return new LookoutError('internal', 'internal server error', { cause: e });
}
