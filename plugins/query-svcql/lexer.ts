/**
 * SvcQL's lexer. The language has two lexical contexts — the search expression (Sumo-style bare
 * words such as `web-1` or `/api/users`) and stage expressions (where `-` and `/` are operators) —
 * so the parser asks for the next token in the mode it expects.
 */
import { syntaxError, type Pos } from './errors.js';

export type LexMode = 'search' | 'expr' | 'dur';

export type TokKind =
  | 'eof'
  | 'str' // "…", value unescaped
  | 'word' // search-mode bare word
  | 'name' // expr-mode name or `quoted name`
  | 'key' // @name or @`name`, value = name
  | 'num'
  | 'dur'
  | 'op'; // punctuation and operators, value = text

export interface Token {
  readonly kind: TokKind;
  /** Raw source text (what error messages quote). */
  readonly text: string;
  /** Unescaped string, name without backticks/@, or the operator. */
  readonly value: string;
  /** True for backtick-quoted names: never keywords. */
  readonly quoted: boolean;
  readonly start: number;
  readonly end: number;
  readonly pos: Pos;
}

const isWordChar = (c: number) =>
  (c >= 48 && c <= 58) || // 0-9 and ':'
  (c >= 65 && c <= 90) ||
  (c >= 97 && c <= 122) ||
  c === 95 || // _
  c === 46 || // .
  c === 47 || // /
  c === 45; // -
const isNameStart = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isNameChar = (c: number) => isNameStart(c) || (c >= 48 && c <= 57) || c === 46;
const isDigit = (c: number) => c >= 48 && c <= 57;
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;

const SEARCH_OPS = ['=~', '!~', '!=', '=', '(', ')', '*', '|', ','];
const EXPR_OPS = ['==', '!=', '<=', '>=', '=', '<', '>', '+', '-', '*', '/', '%', '(', ')', ',', '|'];

export class Lexer {
  private offset = 0;
  private readonly lineStarts: number[] = [0];
  private cache: { mode: LexMode; offset: number; tok: Token } | null = null;

  constructor(readonly text: string) {
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) this.lineStarts.push(i + 1);
  }

  /** 1-based line:column (UTF-16 units) of an offset. */
  posAt(offset: number): Pos {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - this.lineStarts[lo]! + 1, offset };
  }

  /** Current offset, to look further ahead and come back with {@link reset}. */
  mark(): number {
    return this.offset;
  }

  reset(offset: number): void {
    this.offset = offset;
  }

  peek(mode: LexMode): Token {
    if (this.cache && this.cache.mode === mode && this.cache.offset === this.offset) return this.cache.tok;
    const tok = this.scan(mode);
    this.cache = { mode, offset: this.offset, tok };
    return tok;
  }

  next(mode: LexMode): Token {
    const tok = this.peek(mode);
    this.offset = tok.end;
    return tok;
  }

  private make(kind: TokKind, start: number, end: number, value: string, quoted = false): Token {
    return { kind, text: this.text.slice(start, end), value, quoted, start, end, pos: this.posAt(start) };
  }

  private scan(mode: LexMode): Token {
    const s = this.text;
    let i = this.offset;
    while (i < s.length && isSpace(s.charCodeAt(i))) i++;
    if (i >= s.length) return this.make('eof', s.length, s.length, '');
    const c = s.charCodeAt(i);
    if (c === 34) return this.scanString(i);
    if (c === 96) {
      const [name, end] = this.scanBacktick(i);
      return this.make('name', i, end, name, true);
    }
    if (c === 64 /* @ */) {
      const n = i + 1 < s.length ? s.charCodeAt(i + 1) : -1;
      if (n === 96) {
        const [name, end] = this.scanBacktick(i + 1);
        return this.make('key', i, end, name, true);
      }
      if (n !== -1 && isNameStart(n)) {
        let j = i + 2;
        while (j < s.length && isNameChar(s.charCodeAt(j))) j++;
        return this.make('key', i, j, s.slice(i + 1, j));
      }
      return this.make('op', i, i + 1, '@');
    }
    if (mode === 'dur') {
      let j = i;
      while (j < s.length && isNameChar(s.charCodeAt(j))) j++;
      if (j > i) return this.make('dur', i, j, s.slice(i, j));
    } else if (mode === 'search') {
      if (isWordChar(c)) {
        let j = i + 1;
        while (j < s.length && isWordChar(s.charCodeAt(j))) j++;
        return this.make('word', i, j, s.slice(i, j));
      }
      for (const op of SEARCH_OPS) if (s.startsWith(op, i)) return this.make('op', i, i + op.length, op);
    } else {
      if (isNameStart(c)) {
        let j = i + 1;
        while (j < s.length && isNameChar(s.charCodeAt(j))) j++;
        return this.make('name', i, j, s.slice(i, j));
      }
      if (isDigit(c)) return this.scanNumber(i);
      for (const op of EXPR_OPS) if (s.startsWith(op, i)) return this.make('op', i, i + op.length, op);
    }
    // Anything else is a one-character token the parser will reject with its position.
    const cp = s.codePointAt(i)!;
    const len = cp > 0xffff ? 2 : 1;
    return this.make('op', i, i + len, s.slice(i, i + len));
  }

  private scanNumber(i: number): Token {
    const s = this.text;
    let j = i;
    while (j < s.length && isDigit(s.charCodeAt(j))) j++;
    if (s.charCodeAt(j) === 46 && isDigit(s.charCodeAt(j + 1))) {
      j += 1;
      while (j < s.length && isDigit(s.charCodeAt(j))) j++;
    }
    const e = s.charCodeAt(j);
    if (e === 101 || e === 69) {
      let k = j + 1;
      const sign = s.charCodeAt(k);
      if (sign === 43 || sign === 45) k++;
      if (isDigit(s.charCodeAt(k))) {
        while (k < s.length && isDigit(s.charCodeAt(k))) k++;
        j = k;
      }
    }
    return this.make('num', i, j, s.slice(i, j));
  }

  /** `"…"` with `\" \\ \n \t`; other escapes are kept verbatim so regexes like `"\d+"` read naturally. */
  private scanString(i: number): Token {
    const s = this.text;
    let out = '';
    let j = i + 1;
    while (j < s.length) {
      const c = s[j]!;
      if (c === '"') return this.make('str', i, j + 1, out);
      if (c === '\\' && j + 1 < s.length) {
        const n = s[j + 1]!;
        if (n === '"' || n === '\\') out += n;
        else if (n === 'n') out += '\n';
        else if (n === 't') out += '\t';
        else out += '\\' + n;
        j += 2;
        continue;
      }
      out += c;
      j++;
    }
    throw syntaxError('unterminated string', this.posAt(i));
  }

  private scanBacktick(i: number): [string, number] {
    const end = this.text.indexOf('`', i + 1);
    if (end < 0 || end === i + 1) throw syntaxError('unterminated string', this.posAt(i));
    return [this.text.slice(i + 1, end), end + 1];
  }
}
