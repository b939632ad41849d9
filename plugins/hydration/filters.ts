/**
 * Hydration filters (SPEC.md "Filter semantics", OPERATIONS.md "Archive layout"), compiled once
 * per job into one predicate over archived lines. All filters must pass (AND).
 *
 * type labels looks up `field` in both the label map and the facet map (facet values compared
 * as their string form: 200 → "200", true → "true"). A missing key makes a negative operation
 * hold and a positive one fail in that map. Positive operations (eq, contains, regex) pass when
 * they hold in either map; negative ones (neq, ncontains, nregex) only when they hold in both.
 * type message compares the raw message. Regexes are RE2, anchored to the whole value.
 */
import { badRequest } from '../../kernel/errors.js';
import { compileAnchoredRegex, InvalidRegexError } from '../../kernel/matchers.js';
import type { ArchivedLine } from '../../backends/archive-fs/layout.js';
import type { HydrationFilter } from './model.js';

export type LinePredicate = (line: ArchivedLine) => boolean;

/** A value test for a present value; `positive` says how a missing key counts. */
interface ValueTest {
  positive: boolean;
  holds(value: string): boolean;
}

function valueTest(f: HydrationFilter, index: number): ValueTest {
  const v = f.value;
  switch (f.operation) {
    case 'eq':
      return { positive: true, holds: (x) => x === v };
    case 'neq':
      return { positive: false, holds: (x) => x !== v };
    case 'contains':
      return { positive: true, holds: (x) => x.includes(v) };
    case 'ncontains':
      return { positive: false, holds: (x) => !x.includes(v) };
    case 'regex':
    case 'nregex': {
      let re;
      try {
        re = compileAnchoredRegex(v);
      } catch (e) {
        if (e instanceof InvalidRegexError) throw badRequest(`filters[${index}]: ${e.message}`);
        throw e;
      }
      return f.operation === 'regex'
        ? { positive: true, holds: (x) => re.matches(x) }
        : { positive: false, holds: (x) => !re.matches(x) };
    }
  }
}

function facetString(v: string | number | boolean | undefined): string | undefined {
  return v === undefined ? undefined : typeof v === 'string' ? v : String(v);
}

function compileOne(f: HydrationFilter, index: number): LinePredicate {
  const t = valueTest(f, index);
  if (f.type === 'message') return (line) => t.holds(line.message);
  const key = f.field;
  // In one map: a missing key satisfies a negative test and fails a positive one.
  const inMap = (x: string | undefined): boolean => (x === undefined ? !t.positive : t.holds(x));
  const hasOwn = Object.prototype.hasOwnProperty;
  const label = (l: ArchivedLine) => (hasOwn.call(l.labels, key) ? l.labels[key] : undefined);
  const facet = (l: ArchivedLine) => (hasOwn.call(l.facets, key) ? facetString(l.facets[key]) : undefined);
  return t.positive
    ? (l) => inMap(label(l)) || inMap(facet(l))
    : (l) => inMap(label(l)) && inMap(facet(l));
}

/** Compiles the filters; throws a 400 LookoutError for an invalid regex. */
export function compileFilters(filters: readonly HydrationFilter[]): LinePredicate {
  const preds = filters.map(compileOne);
  if (preds.length === 0) return () => true;
  return (line) => {
    for (const p of preds) if (!p(line)) return false;
    return true;
  };
}
