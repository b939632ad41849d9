/**
 * Every user regex goes through RE2 (re2js, linear time); never through RegExp. Errors carry the
 * position of the string that held the pattern.
 */
import { RE2JS } from 're2js';
import { compileRegex, InvalidRegexError } from '../../kernel/matchers.js';
import { invalidArgument, type Pos } from './errors.js';

const searchCache = new Map<string, RE2JS>();

/**
 * Compiles an unanchored (searched) pattern with dot matching newline, as `parse regex` uses it;
 * throws `invalid regex "<re>" at L:C: <why>` when RE2 rejects it.
 */
export function checkRegex(pattern: string, pos: Pos): RE2JS {
  try {
    // flag-free first, so RE2's reason quotes the user's pattern and not a `(?s)` prefix
    compileRegex(pattern);
    return searchRegex(pattern);
  } catch (e) {
    if (e instanceof InvalidRegexError) throw invalidArgument(`invalid regex "${pattern}"`, pos, `: ${e.reason}`);
    throw e;
  }
}

export function searchRegex(pattern: string): RE2JS {
  let re = searchCache.get(pattern);
  if (!re) {
    re = compileRegex(pattern, RE2JS.DOTALL);
    if (searchCache.size > 1000) searchCache.clear();
    searchCache.set(pattern, re);
  }
  return re;
}

/**
 * The regex of `parse "p"`: literal text quoted for RE2, each `*` a lazy group and the last one
 * greedy (so a trailing `*` takes the rest of the value).
 */
export function parsePatternRegex(pattern: string): RE2JS {
  const parts = pattern.split('*');
  let re = '';
  for (let i = 0; i < parts.length; i++) {
    if (parts[i]) re += RE2JS.quote(parts[i]!);
    if (i < parts.length - 1) re += i === parts.length - 2 ? '(.*)' : '(.*?)';
  }
  return searchRegex(re);
}
