/**
 * PromQL lexer: turns query text into tokens with their start/end offsets. Keywords are not
 * resolved here (label names may be keywords); the parser decides by context.
 */
import { PromQLParseError, positionOf } from './errors.js';

export type TokKind =
  | 'ident'
  | 'number'
  | 'duration'
  | 'string'
  | 'op'
  | '('
  | ')'
  | '{'
  | '}'
  | '['
  | ']'
  | ','
  | ':'
  | '@'
  | 'eof';

export interface Token {
  kind: TokKind;
  /** Raw text (for strings: the decoded value). */
  text: string;
  start: number;
  end: number;
  /** Numeric value of number/duration tokens (durations in ms). */
  num?: number;
}

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
  y: 31_536_000_000,
};

const isDigit = (c: string) => c >= '0' && c <= '9';
const isIdentStart = (c: string) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_' || c === ':';
const isIdentChar = (c: string) => isIdentStart(c) || isDigit(c);

const OPS = ['==', '!=', '>=', '<=', '</', '>/', '=~', '!~', '+', '-', '*', '/', '%', '^', '>', '<', '='];

/** Parses a Prometheus duration like `1h30m` or `500ms` into ms; null when invalid. */
export function parseDurationMs(s: string): number | null {
  if (!/^(\d+(ms|s|m|h|d|w|y))+$/.test(s)) return null;
  let total = 0;
  const re = /(\d+)(ms|s|m|h|d|w|y)/g;
  let m: RegExpExecArray | null;
  let lastUnit = Infinity;
  while ((m = re.exec(s))) {
    const unit = UNIT_MS[m[2]!]!;
    if (unit >= lastUnit) return null; // units must be in decreasing order, each once
    lastUnit = unit;
    total += Number(m[1]) * unit;
  }
  return total;
}

export function lex(input: string): Token[] {
  const toks: Token[] = [];
  let i = 0;
  let brackets = 0;
  const n = input.length;
  const err = (pos: number, msg: string): never => {
    throw new PromQLParseError(msg, positionOf(input, pos), pos);
  };
  while (i < n) {
    const c = input[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (c === '#') {
      while (i < n && input[i] !== '\n') i++;
      continue;
    }
    const start = i;
    if (c === '"' || c === "'" || c === '`') {
      i++;
      let out = '';
      if (c === '`') {
        while (i < n && input[i] !== '`') out += input[i++];
        if (i >= n) err(start, 'unterminated raw string');
        i++;
      } else {
        for (;;) {
          if (i >= n || input[i] === '\n') err(start, 'unterminated quoted string');
          const ch = input[i]!;
          if (ch === c) {
            i++;
            break;
          }
          if (ch === '\\') {
            const r = readEscape(input, i + 1, c);
            if (!r) err(i, 'unknown escape sequence');
            out += r!.s;
            i = r!.next;
            continue;
          }
          out += ch;
          i++;
        }
      }
      toks.push({ kind: 'string', text: hasRawBytes(out) ? decodeRawBytes(out) : out, start, end: i });
      continue;
    }
    if (isDigit(c) || (c === '.' && isDigit(input[i + 1] ?? ''))) {
      // Hex literal.
      if (c === '0' && (input[i + 1] === 'x' || input[i + 1] === 'X') && /[0-9a-fA-F]/.test(input[i + 2] ?? '')) {
        i += 2;
        while (i < n && /[0-9a-fA-F]/.test(input[i]!)) i++;
        toks.push({ kind: 'number', text: input.slice(start, i), start, end: i, num: parseInt(input.slice(start + 2, i), 16) });
        continue;
      }
      // Duration?
      const dm = /^(\d+(ms|s|m|h|d|w|y))+/.exec(input.slice(i));
      if (dm && !/[A-Za-z0-9_.]/.test(input[i + dm[0].length] ?? '')) {
        const ms = parseDurationMs(dm[0]);
        if (ms === null) err(start, `bad duration syntax: "${dm[0]}"`);
        i += dm[0].length;
        toks.push({ kind: 'duration', text: dm[0], start, end: i, num: ms! });
        continue;
      }
      const nm = /^(\d*\.?\d*)([eE][+-]?\d+)?/.exec(input.slice(i))!;
      i += nm[0].length;
      if (i < n && isIdentChar(input[i]!)) err(start, `bad number or duration syntax: "${input.slice(start, i + 1)}"`);
      toks.push({ kind: 'number', text: nm[0], start, end: i, num: Number(nm[0]) });
      continue;
    }
    // Inside `[...]` a colon separates subquery range and step.
    if (c === ':' && brackets > 0) {
      toks.push({ kind: ':', text: ':', start, end: i + 1 });
      i++;
      continue;
    }
    if (c === '[') brackets++;
    else if (c === ']' && brackets > 0) brackets--;
    if (isIdentStart(c)) {
      while (i < n && (isIdentChar(input[i]!) || input[i] === '.' && false)) i++;
      const text = input.slice(start, i);
      const lower = text.toLowerCase();
      if (lower === 'inf' || lower === 'nan') {
        toks.push({ kind: 'number', text, start, end: i, num: lower === 'inf' ? Infinity : NaN });
      } else {
        toks.push({ kind: 'ident', text, start, end: i });
      }
      continue;
    }
    switch (c) {
      case '(':
      case ')':
      case '{':
      case '}':
      case '[':
      case ']':
      case ',':
      case ':':
      case '@':
        toks.push({ kind: c, text: c, start, end: i + 1 });
        i++;
        continue;
    }
    const op = OPS.find((o) => input.startsWith(o, i));
    if (op) {
      i += op.length;
      toks.push({ kind: 'op', text: op, start, end: i });
      continue;
    }
    if (c === '!') err(start, 'unexpected character after \'!\'');
    err(start, `unexpected character: ${JSON.stringify(c)}`);
  }
  toks.push({ kind: 'eof', text: '', start: n, end: n });
  return toks;
}

function readEscape(s: string, i: number, quote: string): { s: string; next: number } | null {
  const c = s[i];
  switch (c) {
    case 'a':
      return { s: '\x07', next: i + 1 };
    case 'b':
      return { s: '\b', next: i + 1 };
    case 'f':
      return { s: '\f', next: i + 1 };
    case 'n':
      return { s: '\n', next: i + 1 };
    case 'r':
      return { s: '\r', next: i + 1 };
    case 't':
      return { s: '\t', next: i + 1 };
    case 'v':
      return { s: '\v', next: i + 1 };
    case '\\':
      return { s: '\\', next: i + 1 };
    case '"':
    case "'":
      if (c !== quote) return null;
      return { s: c, next: i + 1 };
    case 'x': {
      const h = s.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(h)) return null;
      return { s: rawByte(parseInt(h, 16)), next: i + 3 };
    }
    case 'u': {
      const h = s.slice(i + 1, i + 5);
      if (!/^[0-9a-fA-F]{4}$/.test(h)) return null;
      return { s: String.fromCharCode(parseInt(h, 16)), next: i + 5 };
    }
    case 'U': {
      const h = s.slice(i + 1, i + 9);
      if (!/^[0-9a-fA-F]{8}$/.test(h)) return null;
      return { s: String.fromCodePoint(parseInt(h, 16)), next: i + 9 };
    }
    default:
      if (c !== undefined && c >= '0' && c <= '7') {
        const o = s.slice(i, i + 3);
        if (!/^[0-7]{3}$/.test(o)) return null;
        return { s: rawByte(parseInt(o, 8)), next: i + 3 };
      }
      return null;
  }
}

/*
 * Go strings are bytes: `\xNN` and octal escapes are raw bytes, which together with the other
 * characters must be read as UTF-8 ("\xc3\x85" is "Å"). While lexing, a byte >= 0x80 is kept as
 * the lone surrogate U+DC00+byte; afterwards the bytes are decoded, and bytes that are not valid
 * UTF-8 stay as such surrogates (so messages can print them as Go does, `\xc5`).
 */
const RAW_BASE = 0xdc00;

function rawByte(b: number): string {
  return b < 0x80 ? String.fromCharCode(b) : String.fromCharCode(RAW_BASE + b);
}

function hasRawBytes(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= RAW_BASE + 0x80 && c <= RAW_BASE + 0xff) return true;
  }
  return false;
}

const utf8Strict = new TextDecoder('utf-8', { fatal: true });
const utf8Enc = new TextEncoder();

function decodeRawBytes(s: string): string {
  const bytes: number[] = [];
  let run = '';
  const flush = () => {
    for (const b of utf8Enc.encode(run)) bytes.push(b);
    run = '';
  };
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= RAW_BASE + 0x80 && c <= RAW_BASE + 0xff) {
      flush();
      bytes.push(c - RAW_BASE);
    } else run += s[i];
  }
  flush();
  const buf = Uint8Array.from(bytes);
  try {
    return utf8Strict.decode(buf);
  } catch {
    // Decode sequence by sequence; an invalid byte stays a raw byte.
    let out = '';
    let i = 0;
    while (i < buf.length) {
      const b = buf[i]!;
      const len = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
      if (len > 0 && i + len <= buf.length) {
        try {
          out += utf8Strict.decode(buf.subarray(i, i + len));
          i += len;
          continue;
        } catch {
          // fall through
        }
      }
      out += rawByte(b);
      i++;
    }
    return out;
  }
}

/** Go's %q: like JSON quoting, but raw (invalid UTF-8) bytes print as \xNN. */
export function goQuote(s: string): string {
  return JSON.stringify(s).replace(/\\udc([89a-f][0-9a-f])/g, (_m, h: string) => `\\x${h}`);
}
