/**
 * The field-making parsers: `parse`, `parse regex`, `json`, `logfmt`. Each turns one input
 * string into fields, or reports no match (the row is dropped unless `nodrop`).
 */
import type { RE2JS } from 're2js';
import type { Stage } from './ast.js';
import { parsePatternRegex, searchRegex } from './regex.js';
import type { Value } from './values.js';

export type Fields = [string, Value][];
export type Extractor = (input: string) => Fields | null;

type ParserStage = Extract<Stage, { kind: 'parse' | 'parseRegex' | 'json' | 'logfmt' }>;

export function compileExtractor(s: ParserStage): Extractor {
  switch (s.kind) {
    case 'parse':
      return regexExtractor(parsePatternRegex(s.pattern), s.names.map((n, i) => [n, i + 1] as const));
    case 'parseRegex': {
      const re = searchRegex(s.regex);
      const groups = Object.entries(re.namedGroups()).sort((a, b) => a[1] - b[1]);
      return regexExtractor(re, groups);
    }
    case 'json':
      return jsonExtractor(s.paths, s.names);
    case 'logfmt':
      return logfmt;
  }
}

function regexExtractor(re: RE2JS, groups: readonly (readonly [string, number])[]): Extractor {
  return (input) => {
    const m = re.matcher(input);
    if (!m.find()) return null;
    const out: Fields = [];
    for (const [name, idx] of groups) {
      const g = m.group(idx);
      if (g !== null && g !== undefined) out.push([name, g]);
    }
    return out;
  };
}

function jsonValue(v: unknown): Value {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return JSON.stringify(v);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function lookupPath(obj: Record<string, unknown>, path: string): unknown {
  if (Object.prototype.hasOwnProperty.call(obj, path)) return obj[path];
  let cur: unknown = obj;
  for (const seg of path.split('.')) {
    if (!isObject(cur) || !Object.prototype.hasOwnProperty.call(cur, seg)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

function jsonExtractor(paths: readonly string[] | null, names: readonly string[] | null): Extractor {
  return (input) => {
    const t = input.trimStart();
    if (t[0] !== '{') return null;
    let obj: unknown;
    try {
      obj = JSON.parse(input);
    } catch {
      return null;
    }
    if (!isObject(obj)) return null;
    const out: Fields = [];
    if (paths === null) {
      const walk = (o: Record<string, unknown>, prefix: string) => {
        for (const [k, v] of Object.entries(o)) {
          if (isObject(v) && Object.keys(v).length > 0) walk(v, prefix + k + '.');
          else out.push([prefix + k, jsonValue(v)]);
        }
      };
      walk(obj, '');
    } else {
      paths.forEach((p, i) => out.push([names ? names[i]! : p, jsonValue(lookupPath(obj as Record<string, unknown>, p))]));
    }
    return out;
  };
}

/** `k=v` / `k="v"` pairs; words without `=` are skipped. */
export function logfmt(input: string): Fields | null {
  const out: Fields = [];
  const n = input.length;
  let i = 0;
  while (i < n) {
    while (i < n && isSpace(input.charCodeAt(i))) i++;
    const ks = i;
    while (i < n && !isSpace(input.charCodeAt(i)) && input[i] !== '=' && input[i] !== '"') i++;
    const key = input.slice(ks, i);
    if (i < n && input[i] === '=' && key.length > 0) {
      i++;
      let value = '';
      if (input[i] === '"') {
        i++;
        while (i < n && input[i] !== '"') {
          if (input[i] === '\\' && i + 1 < n) {
            const c = input[i + 1]!;
            value += c === 'n' ? '\n' : c === 't' ? '\t' : c;
            i += 2;
          } else value += input[i++];
        }
        i++;
      } else {
        const vs = i;
        while (i < n && !isSpace(input.charCodeAt(i))) i++;
        value = input.slice(vs, i);
      }
      out.push([key, value]);
    } else {
      // not a pair: skip the rest of this word (a quoted run included)
      while (i < n && !isSpace(input.charCodeAt(i))) {
        if (input[i] === '"') {
          i++;
          while (i < n && input[i] !== '"') i += input[i] === '\\' ? 2 : 1;
        }
        i++;
      }
    }
  }
  return out.length > 0 ? out : null;
}

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;
