/**
 * The search expression: compiled to an exact record predicate, and split into what storage can
 * do for us (AND-ed label matchers and message terms at the top level of the conjunction).
 */
import { compileMatcher, type LabelMatcher } from '../../kernel/matchers.js';
import type { EventRecord, LogRecord } from '../../kernel/models.js';
import type { SearchNode } from './ast.js';

/** What a record looks like to the search expression. */
interface Searchable<R> {
  label(r: R, name: string): string | undefined;
  facet(r: R, name: string): string | undefined;
  /** Lowercased texts free-text terms are searched in (any may match). */
  texts(r: R): readonly string[];
}

type Pred<R> = (r: R, lower: LowerCache<R>) => boolean;

/** Lowercases a record's texts once per record, however many free-text terms there are. */
class LowerCache<R> {
  private rec: R | undefined;
  private value: readonly string[] = [];
  constructor(private readonly src: Searchable<R>) {}
  get(r: R): readonly string[] {
    if (this.rec !== r) {
      this.rec = r;
      this.value = this.src.texts(r);
    }
    return this.value;
  }
}

function compileNode<R>(n: SearchNode, src: Searchable<R>): Pred<R> | null {
  switch (n.kind) {
    case 'all':
      return null;
    case 'text': {
      const needle = n.text.toLowerCase();
      return (r, lc) => {
        for (const t of lc.get(r)) if (t.includes(needle)) return true;
        return false;
      };
    }
    case 'match': {
      const p = compileMatcher({ name: n.key.name, op: n.op, value: n.value });
      const name = n.key.name;
      // A missing key reads as "" (PromQL); facets compare in string form.
      return n.key.facet ? (r) => p(src.facet(r, name) ?? '') : (r) => p(src.label(r, name) ?? '');
    }
    case 'not': {
      const a = compileNode(n.arg, src);
      if (a === null) return () => false;
      return (r, lc) => !a(r, lc);
    }
    case 'and': {
      const parts = n.args.map((a) => compileNode(a, src)).filter((p): p is Pred<R> => p !== null);
      if (parts.length === 0) return null;
      if (parts.length === 1) return parts[0]!;
      return (r, lc) => {
        for (const p of parts) if (!p(r, lc)) return false;
        return true;
      };
    }
    case 'or': {
      const parts = n.args.map((a) => compileNode(a, src));
      if (parts.some((p) => p === null)) return null;
      const ps = parts as Pred<R>[];
      return (r, lc) => {
        for (const p of ps) if (p(r, lc)) return true;
        return false;
      };
    }
  }
}

function compile<R>(n: SearchNode, src: Searchable<R>): ((r: R) => boolean) | null {
  const p = compileNode(n, src);
  if (p === null) return null;
  const lc = new LowerCache(src);
  return (r) => p(r, lc);
}

const logSearchable: Searchable<LogRecord> = {
  label: (r, n) => r.labels[n],
  facet: (r, n) => {
    const v = r.facets[n];
    return v === undefined ? undefined : String(v);
  },
  texts: (r) => [r.message.toLowerCase()],
};

function attributeString(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

const eventSearchable: Searchable<EventRecord> = {
  label: (r, n) => r.labels[n],
  facet: (r, n) => attributeString(r.attributes[n]),
  texts: (r) => [r.title.toLowerCase(), r.text.toLowerCase()],
};

/** Exact predicate over log records; null when the search is `*`. */
export function compileLogSearch(n: SearchNode): ((r: LogRecord) => boolean) | null {
  return compile(n, logSearchable);
}

/** Exact predicate over events: free text in title or text, `@x` an attribute, keys labels. */
export function compileEventSearch(n: SearchNode): ((e: EventRecord) => boolean) | null {
  return compile(n, eventSearchable);
}

export interface SearchPushdown {
  /** Label matchers every result satisfies (top-level conjuncts only). */
  matchers: LabelMatcher[];
  /** Free-text terms every result's message contains (case-insensitive). */
  terms: string[];
  /** True when matchers and terms say everything the search says (so no re-check is needed). */
  exact: boolean;
}

/** The parts of the search that are safe to push into a scan: AND-ed, top-level terms only. */
export function searchPushdown(n: SearchNode): SearchPushdown {
  const conjuncts = n.kind === 'and' ? n.args : [n];
  const out: SearchPushdown = { matchers: [], terms: [], exact: true };
  for (const c of conjuncts) {
    if (c.kind === 'all') continue;
    if (c.kind === 'match' && !c.key.facet) out.matchers.push({ name: c.key.name, op: c.op, value: c.value });
    else if (c.kind === 'text') {
      out.terms.push(c.text);
      out.exact = false; // terms are a prefilter: storage may return a superset
    } else out.exact = false;
  }
  return out;
}
