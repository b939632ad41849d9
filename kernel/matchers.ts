import { RE2JS } from 're2js';
import type { Labels } from './models.js';

/** A Prometheus-style label matcher. Regexes are RE2 and anchored to the whole value. */
export type MatchOp = '=' | '!=' | '=~' | '!~';

export interface LabelMatcher {
  readonly name: string;
  readonly op: MatchOp;
  readonly value: string;
}

/**
 * A set of alternatives, each a conjunction of matchers: `[[a, b], [c]]` means (a AND b) OR c.
 * This is how an RBAC scope reaches storage. `undefined` means unrestricted; `[]` means nothing.
 */
export type MatcherAlternatives = readonly (readonly LabelMatcher[])[];

export class InvalidRegexError extends Error {
  constructor(
    readonly pattern: string,
    readonly reason: string,
  ) {
    super(`invalid regex "${pattern}": ${reason}`);
  }
}

const regexCache = new Map<string, RE2JS>();

/**
 * Compiles an RE2 pattern anchored as `^(?:re)$` on a linear-time engine. Never uses RegExp:
 * patterns come from users. A leading `(?i)` is honoured by RE2 itself.
 */
export function compileAnchoredRegex(pattern: string): RE2JS {
  let re = regexCache.get(pattern);
  if (re) return re;
  try {
    re = RE2JS.compile(`^(?:${pattern})$`, RE2JS.DOTALL);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new InvalidRegexError(pattern, msg.replace(/^error parsing regexp: /, ''));
  }
  if (regexCache.size > 10_000) regexCache.clear();
  regexCache.set(pattern, re);
  return re;
}

/** Compiles an unanchored RE2 pattern (for `find`-style searches). */
export function compileRegex(pattern: string, flags = 0): RE2JS {
  try {
    return RE2JS.compile(pattern, flags);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new InvalidRegexError(pattern, msg.replace(/^error parsing regexp: /, ''));
  }
}

export type ValuePredicate = (value: string) => boolean;

/** A predicate over one label value; a missing label reads as "" (PromQL semantics). */
export function compileMatcher(m: LabelMatcher): ValuePredicate {
  switch (m.op) {
    case '=': {
      const v = m.value;
      return (x) => x === v;
    }
    case '!=': {
      const v = m.value;
      return (x) => x !== v;
    }
    case '=~': {
      const lit = literalAlternatives(m.value);
      if (lit) return (x) => lit.has(x);
      const re = compileAnchoredRegex(m.value);
      return (x) => re.matches(x);
    }
    case '!~': {
      const lit = literalAlternatives(m.value);
      if (lit) return (x) => !lit.has(x);
      const re = compileAnchoredRegex(m.value);
      return (x) => !re.matches(x);
    }
  }
}

/** `a|b|c` of plain literals: matched by set lookup instead of the regex engine. */
function literalAlternatives(pattern: string): Set<string> | null {
  if (!/^[A-Za-z0-9_\-:/ ,@]*(\|[A-Za-z0-9_\-:/ ,@]*)*$/.test(pattern)) return null;
  return new Set(pattern.split('|'));
}

export type LabelsPredicate = (labels: Labels) => boolean;

/** Conjunction of matchers over a label set. */
export function compileMatchers(ms: readonly LabelMatcher[]): LabelsPredicate {
  const preds = ms.map((m) => {
    const p = compileMatcher(m);
    const n = m.name;
    return (l: Labels) => p(l[n] ?? '');
  });
  if (preds.length === 0) return () => true;
  if (preds.length === 1) return preds[0]!;
  return (l) => {
    for (const p of preds) if (!p(l)) return false;
    return true;
  };
}

/** Disjunction of conjunctions. `undefined` alternatives: everything passes. */
export function compileAlternatives(alts: MatcherAlternatives | undefined): LabelsPredicate {
  if (alts === undefined) return () => true;
  if (alts.length === 0) return () => false;
  const preds = alts.map(compileMatchers);
  if (preds.length === 1) return preds[0]!;
  return (l) => {
    for (const p of preds) if (p(l)) return true;
    return false;
  };
}

/** True when the matcher accepts the empty string (so it also matches series without the label). */
export function matchesEmpty(m: LabelMatcher): boolean {
  return compileMatcher(m)('');
}
