/**
 * Label matchers and RBAC scopes as Elasticsearch queries over a `labels` flattened field.
 *
 * User regexes never reach Elasticsearch (its regexp dialect is Lucene's, not RE2, and its cost
 * is not linear): a regex matcher is resolved the way Prometheus' index does it — the label's
 * distinct values in the queried indices come from a composite aggregation, RE2 picks the
 * matching ones, and the query becomes a `terms` filter. When a label has too many distinct
 * values the matcher is not pushed down (`exact: false`) and the caller filters in process.
 *
 * A missing label reads as "" (PromQL semantics), so `l=""` means "no non-empty value".
 */
import { compileMatcher, type LabelMatcher, type MatcherAlternatives } from '../../kernel/matchers.js';
import type { Es, Query } from './es.js';

/** Beyond this many matching values a regex matcher is filtered in process instead. */
const MAX_PUSHED_VALUES = 10_000;

export interface Translation {
  query: Query;
  /** False when some matcher was not pushed down: the query is then a superset. */
  exact: boolean;
}

const MATCH_ALL: Query = { match_all: {} };
export const MATCH_NONE: Query = { match_none: {} };

const field = (name: string) => `labels.${name}`;

function nonEmpty(name: string): Query {
  return { bool: { filter: [{ exists: { field: field(name) } }], must_not: [{ term: { [field(name)]: '' } }] } };
}

function not(q: Query): Query {
  return { bool: { must_not: [q] } };
}

export class MatcherTranslator {
  private readonly values = new Map<string, string[] | null>();

  /**
   * @param index indices whose distinct label values a regex is resolved against
   * @param base the time-range filter of the query, so only relevant values are listed
   */
  constructor(
    private readonly es: Es,
    private readonly index: string,
    private readonly base: Query,
  ) {}

  /** Distinct non-empty values of a label, or null when there are too many to push down. */
  private async distinct(name: string): Promise<string[] | null> {
    const cached = this.values.get(name);
    if (cached !== undefined) return cached;
    const out: string[] = [];
    let result: string[] | null = out;
    for await (const b of this.es.composite(this.index, this.base, [{ v: { terms: { field: field(name) } } }])) {
      const v = String(b.key.v);
      if (v !== '') out.push(v);
      if (out.length > 20 * MAX_PUSHED_VALUES) {
        result = null;
        break;
      }
    }
    this.values.set(name, result);
    return result;
  }

  async matcher(m: LabelMatcher): Promise<Translation> {
    const pred = compileMatcher(m);
    const emptyMatches = pred('');
    switch (m.op) {
      case '=':
        return { query: m.value === '' ? not(nonEmpty(m.name)) : { term: { [field(m.name)]: m.value } }, exact: true };
      case '!=':
        return { query: m.value === '' ? nonEmpty(m.name) : not({ term: { [field(m.name)]: m.value } }), exact: true };
      case '=~':
      case '!~': {
        const all = await this.distinct(m.name);
        if (all === null) return { query: MATCH_ALL, exact: false };
        // Values (non-empty) the matcher accepts; for !~ express it through the rejected ones.
        const accepted = all.filter(pred);
        let valueQuery: Query;
        if (accepted.length <= MAX_PUSHED_VALUES) {
          valueQuery = accepted.length ? { terms: { [field(m.name)]: accepted } } : MATCH_NONE;
        } else {
          const rejected = all.filter((v) => !pred(v));
          if (rejected.length > MAX_PUSHED_VALUES) return { query: MATCH_ALL, exact: false };
          valueQuery = rejected.length
            ? { bool: { filter: [nonEmpty(m.name)], must_not: [{ terms: { [field(m.name)]: rejected } }] } }
            : nonEmpty(m.name);
        }
        const query: Query = emptyMatches
          ? { bool: { should: [valueQuery, not(nonEmpty(m.name))], minimum_should_match: 1 } }
          : valueQuery;
        return { query, exact: true };
      }
    }
  }

  /** AND of matchers. */
  async matchers(ms: readonly LabelMatcher[]): Promise<Translation> {
    if (ms.length === 0) return { query: MATCH_ALL, exact: true };
    const parts = await Promise.all(ms.map((m) => this.matcher(m)));
    return { query: { bool: { filter: parts.map((p) => p.query) } }, exact: parts.every((p) => p.exact) };
  }

  /** OR of ANDs (matcher sets, RBAC scopes). `[]` matches nothing. */
  async alternatives(alts: MatcherAlternatives | readonly (readonly LabelMatcher[])[]): Promise<Translation> {
    if (alts.length === 0) return { query: MATCH_NONE, exact: true };
    const parts = await Promise.all(alts.map((a) => this.matchers(a)));
    if (parts.length === 1) return parts[0]!;
    return { query: { bool: { should: parts.map((p) => p.query), minimum_should_match: 1 } }, exact: parts.every((p) => p.exact) };
  }

  /** Matchers AND optional matcher sets (OR) AND optional scope. */
  async build(opts: {
    matchers?: readonly LabelMatcher[];
    sets?: readonly (readonly LabelMatcher[])[];
    scope?: MatcherAlternatives;
  }): Promise<Translation> {
    const filter: Query[] = [this.base];
    let exact = true;
    if (opts.matchers?.length) {
      const t = await this.matchers(opts.matchers);
      filter.push(t.query);
      exact &&= t.exact;
    }
    if (opts.sets?.length) {
      const t = await this.alternatives(opts.sets);
      filter.push(t.query);
      exact &&= t.exact;
    }
    if (opts.scope !== undefined) {
      const t = await this.alternatives(opts.scope);
      filter.push(t.query);
      exact &&= t.exact;
    }
    return { query: { bool: { filter } }, exact };
  }
}
