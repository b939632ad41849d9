/**
 * The TraceQL lexer. Context-free except for attribute names: after a scope (`span.`,
 * `resource.`, `.`) everything up to a delimiter is the name, so `span.http.status_code` is one
 * token, as in Tempo's lexer.
 */
import type { Position } from './ast.js';

export type TokenType =
  | 'string'
  | 'number'
  | 'duration'
  | 'ident'
  | 'attribute'
  | 'intrinsic'
  | 'op'
  | 'eof';

export interface Token {
  type: TokenType;
  /** Operator/punctuation text, identifier, string contents or number text. */
  text: string;
  /** For attribute tokens: the scope. */
  scope?: string;
  /** Numeric value of numbers (as written) and durations (nanoseconds). */
  num?: number;
  /** True for numbers written without a fraction or exponent. */
  isInt?: boolean;
  pos: Position;
  end: number;
}

export class TraceQLParseError extends Error {
  constructor(
    readonly reason: string,
    readonly pos: Position,
  ) {
    super(`parse error at line ${pos.line}, col ${pos.col}: ${reason}`);
    this.name = 'TraceQLParseError';
  }
}

const SCOPES = new Set(['span', 'resource', 'event', 'link', 'instrumentation']);
/** Prefixes of colon intrinsics: `span:name`, `trace:rootService`, `event:name`, ... */
const INTRINSIC_PREFIXES = new Set(['span', 'trace', 'event', 'link', 'instrumentation']);

/** Multi-character operators, longest first. */
const OPERATORS = [
  '!>>', '!<<', '&&', '||', '>>', '<<', '>=', '<=', '!=', '=~', '!~', '!>', '!<',
  '{', '}', '(', ')', '=', '>', '<', '!', '~', '|', ',', '+', '-', '*', '/', '%', '^',
];

/** Characters ending an unquoted attribute name (Tempo's attribute delimiters). */
const ATTR_END = new Set([' ', '\t', '\n', '\r', '{', '}', '(', ')', '=', '~', '!', '<', '>', '&', '|', '^', ',', '"', '`']);

const DURATION_UNITS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  'µs': 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

export function positionAt(text: string, offset: number): Position {
  let line = 1;
  let col = 1;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === '\n') {
      line++;
      col = 1;
    } else col++;
  }
  return { offset, line, col };
}

const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
const isIdentStart = (c: string | undefined) => c !== undefined && /[A-Za-z_]/.test(c);
const isIdentPart = (c: string | undefined) => c !== undefined && /[A-Za-z0-9_]/.test(c);

export function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = text.length;
  const err = (reason: string, at: number): never => {
    throw new TraceQLParseError(reason, positionAt(text, at));
  };
  const push = (t: Omit<Token, 'pos' | 'end'>, start: number, end: number) => {
    out.push({ ...t, pos: positionAt(text, start), end });
  };

  const readQuoted = (start: number): [string, number] => {
    const q = text[start]!;
    let j = start + 1;
    let s = '';
    while (j < n && text[j] !== q) {
      if (q === '"' && text[j] === '\\') {
        const e = text[j + 1];
        if (e === undefined) break;
        const map: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'" };
        if (e in map) {
          s += map[e];
          j += 2;
          continue;
        }
        if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(j + 2, j + 6))) {
          s += String.fromCharCode(parseInt(text.slice(j + 2, j + 6), 16));
          j += 6;
          continue;
        }
        err(`invalid escape sequence \\${e}`, j);
      }
      s += text[j];
      j++;
    }
    if (j >= n) err('unterminated string', start);
    return [s, j + 1];
  };

  const readAttrName = (start: number): [string, number] => {
    if (text[start] === '"') return readQuoted(start);
    let j = start;
    while (j < n && !ATTR_END.has(text[j]!)) j++;
    if (j === start) err('attribute name expected', start);
    return [text.slice(start, j), j];
  };

  while (i < n) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const start = i;
    if (c === '"' || c === '`') {
      const [s, j] = readQuoted(i);
      push({ type: 'string', text: s }, start, j);
      i = j;
      continue;
    }
    // `.x` is an unscoped attribute, `.5` a number.
    if (c === '.' && !isDigit(text[i + 1])) {
      const [name, j] = readAttrName(i + 1);
      push({ type: 'attribute', text: name, scope: 'unscoped' }, start, j);
      i = j;
      continue;
    }
    if (isDigit(c) || (c === '.' && isDigit(text[i + 1]))) {
      let j = i;
      while (isDigit(text[j])) j++;
      let isInt = true;
      if (text[j] === '.' && isDigit(text[j + 1])) {
        isInt = false;
        j++;
        while (isDigit(text[j])) j++;
      }
      if ((text[j] === 'e' || text[j] === 'E') && (isDigit(text[j + 1]) || ((text[j + 1] === '+' || text[j + 1] === '-') && isDigit(text[j + 2])))) {
        isInt = false;
        j += 2;
        while (isDigit(text[j])) j++;
      }
      const numText = text.slice(i, j);
      // A unit right after the number makes it a duration; Go-style sequences like 1h30m too.
      if (text[j] !== undefined && (isIdentStart(text[j]) || text[j] === 'µ')) {
        let total = 0;
        let k = i;
        while (k < n && (isDigit(text[k]) || text[k] === '.')) {
          let m = k;
          while (isDigit(text[m]) || text[m] === '.') m++;
          const v = Number(text.slice(k, m));
          let u = m;
          while (u < n && (/[A-Za-z]/.test(text[u]!) || text[u] === 'µ')) u++;
          const unit = text.slice(m, u);
          const mult = DURATION_UNITS[unit];
          if (mult === undefined || Number.isNaN(v)) err(`invalid duration "${text.slice(i, u)}"`, i);
          total += v * mult!;
          k = u;
        }
        if (isIdentPart(text[k])) err(`invalid duration "${text.slice(i, k + 1)}"`, i);
        push({ type: 'duration', text: text.slice(i, k), num: Math.round(total) }, start, k);
        i = k;
        continue;
      }
      push({ type: 'number', text: numText, num: Number(numText), isInt }, start, j);
      i = j;
      continue;
    }
    if (isIdentStart(c)) {
      let j = i;
      while (isIdentPart(text[j])) j++;
      const word = text.slice(i, j);
      if (text[j] === '.' && SCOPES.has(word)) {
        const [name, k] = readAttrName(j + 1);
        push({ type: 'attribute', text: name, scope: word }, start, k);
        i = k;
        continue;
      }
      if (text[j] === ':' && INTRINSIC_PREFIXES.has(word) && isIdentStart(text[j + 1])) {
        let k = j + 1;
        while (isIdentPart(text[k])) k++;
        push({ type: 'intrinsic', text: text.slice(i, k) }, start, k);
        i = k;
        continue;
      }
      push({ type: 'ident', text: word }, start, j);
      i = j;
      continue;
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i));
    if (op) {
      push({ type: 'op', text: op }, start, i + op.length);
      i += op.length;
      continue;
    }
    err(`unexpected character "${c}"`, i);
  }
  push({ type: 'eof', text: '' }, n, n);
  return out;
}
