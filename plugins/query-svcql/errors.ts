/**
 * SvcQL's typed error: `message` is exactly as SVCQL.md writes it, position included, so the
 * GraphQL layer can pass it through and add `position` from `line`/`column`.
 */
export type SvcQLErrorCode = 'SVCQL_SYNTAX_ERROR' | 'SVCQL_INVALID_ARGUMENT' | 'SVCQL_LIMIT_EXCEEDED';

/** A 1-based line:column (UTF-16 units) plus the 0-based offset it came from. */
export interface Pos {
  readonly line: number;
  readonly column: number;
  readonly offset: number;
}

export class SvcQLError extends Error {
  readonly code: SvcQLErrorCode;
  readonly line: number;
  readonly column: number;
  constructor(code: SvcQLErrorCode, message: string, line: number, column: number) {
    super(message);
    this.name = 'SvcQLError';
    this.code = code;
    this.line = line;
    this.column = column;
  }
}

const at = (p: Pos) => `${p.line}:${p.column}`;

export const syntaxError = (what: string, p: Pos) =>
  new SvcQLError('SVCQL_SYNTAX_ERROR', `${what} at ${at(p)}`, p.line, p.column);

/** `unexpected "tok" at L:C, expected what` (tok null = end of query). */
export const unexpected = (tok: string | null, p: Pos, expected: string) =>
  new SvcQLError(
    'SVCQL_SYNTAX_ERROR',
    `unexpected ${tok === null ? 'end of query' : `"${tok}"`} at ${at(p)}, expected ${expected}`,
    p.line,
    p.column,
  );

export const invalidArgument = (msg: string, p: Pos, suffix = '') =>
  new SvcQLError('SVCQL_INVALID_ARGUMENT', `${msg} at ${at(p)}${suffix}`, p.line, p.column);

export const limitExceeded = (msg: string, p: Pos) =>
  new SvcQLError('SVCQL_LIMIT_EXCEEDED', `${msg} at ${at(p)}`, p.line, p.column);
