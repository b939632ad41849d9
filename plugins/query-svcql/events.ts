/** Event queries: a SvcQL search expression over events (no stages). */
import type { LabelMatcher } from '../../kernel/matchers.js';
import type { EventRecord } from '../../kernel/models.js';
import type { SvcQueryAst } from './ast.js';
import { parseSearchOnly } from './parser.js';
import { compileEventSearch, searchPushdown } from './search.js';

export function parseEventQuery(text: string): SvcQueryAst {
  return parseSearchOnly(text);
}

/** Free text matches title or text (case-insensitive), `@x` an attribute, keys labels. */
export function compileEventQuery(q: SvcQueryAst): (e: EventRecord) => boolean {
  return compileEventSearch(q.search) ?? (() => true);
}

/** Label matchers every matching event satisfies: safe to push into EventStore.scan. */
export function eventMatchers(q: SvcQueryAst): LabelMatcher[] {
  return searchPushdown(q.search).matchers;
}
