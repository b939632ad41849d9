/**
 * Event queries (GRAPHQL.md "Events"): a SvcQL search expression over the EventStore, label
 * matchers pushed down, the rest filtered here; always inside the caller's `events` scope.
 * Cursors are backend-neutral: the (timestamp, sequence) of the last event returned, since
 * stores order by timestamp desc and, on ties, later-ingested (higher sequence) first.
 */
import { badRequest } from '../../kernel/errors.js';
import type { MatcherAlternatives } from '../../kernel/matchers.js';
import type { AttributeValue, EventRecord } from '../../kernel/models.js';
import type { EventStore } from '../../kernel/storage.js';
import { compileEventFilter, eventPushdown, type SvcQuery } from '../query-svcql/index.js';

export interface EventRange {
  startNs: bigint;
  endNs: bigint;
}

export interface EventQueryContext {
  events: EventStore;
  scope: MatcherAlternatives | undefined;
  signal?: AbortSignal;
}

export interface GraphQLEvent {
  id: string;
  timestamp: string;
  title: string;
  text: string;
  labels: Record<string, string>;
  attributes: Record<string, AttributeValue>;
}

export function toGraphQLEvent(e: EventRecord): GraphQLEvent {
  return {
    id: e.id,
    timestamp: e.timestampNs.toString(),
    title: e.title,
    text: e.text,
    labels: { ...e.labels },
    attributes: { ...e.attributes },
  };
}

interface Position {
  t: bigint;
  s: number;
}

export function encodeCursor(p: Position): string {
  return Buffer.from(JSON.stringify({ t: p.t.toString(), s: p.s })).toString('base64url');
}

export function decodeCursor(cursor: string): Position {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { t?: unknown; s?: unknown };
    if (typeof v.t === 'string' && /^-?[0-9]{1,20}$/.test(v.t) && typeof v.s === 'number' && Number.isSafeInteger(v.s)) {
      return { t: BigInt(v.t), s: v.s };
    }
  } catch {
    // fall through: any undecodable cursor is the caller's error
  }
  throw badRequest('invalid cursor');
}

function checkAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

/** Matching events in store order (newest first), resuming strictly after `after`. */
async function* matching(q: SvcQuery, range: EventRange, ctx: EventQueryContext, after?: Position) {
  const filter = compileEventFilter(q);
  const { matchers } = eventPushdown(q);
  const endNs = after && after.t + 1n < range.endNs ? after.t + 1n : range.endNs;
  for await (const batch of ctx.events.scan({
    startNs: range.startNs,
    endNs,
    matchers,
    scope: ctx.scope,
    order: 'desc',
    signal: ctx.signal,
  })) {
    checkAborted(ctx.signal);
    for (let i = 0; i < batch.events.length; i++) {
      const e = batch.events[i]!;
      const seq = batch.seqs[i]!;
      if (after && e.timestampNs === after.t && seq >= after.s) continue;
      if (after && e.timestampNs > after.t) continue;
      if (filter(e)) yield { e, seq };
    }
  }
}

export async function pageEvents(
  q: SvcQuery,
  range: EventRange,
  page: { limit: number; cursor: string | null },
  ctx: EventQueryContext,
): Promise<{ events: GraphQLEvent[]; cursor: string | null }> {
  const after = page.cursor ? decodeCursor(page.cursor) : undefined;
  const out: { e: EventRecord; seq: number }[] = [];
  let more = false;
  for await (const m of matching(q, range, ctx, after)) {
    if (out.length === page.limit) {
      more = true;
      break;
    }
    out.push(m);
  }
  const last = out[out.length - 1];
  return {
    events: out.map((m) => toGraphQLEvent(m.e)),
    cursor: more && last ? encodeCursor({ t: last.e.timestampNs, s: last.seq }) : null,
  };
}

/** String form of a facet value, as SvcQL compares facets. */
function stringForm(v: AttributeValue | undefined): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** `facet`: a label name, or `@name` for an attribute. Count desc, then value asc. */
export async function eventFacetValues(
  facet: string,
  q: SvcQuery,
  range: EventRange,
  limit: number,
  ctx: EventQueryContext,
): Promise<{ value: string; count: number }[]> {
  const isAttr = facet.startsWith('@');
  const name = isAttr ? facet.slice(1) : facet;
  if (name === '') throw badRequest('facet must name a label or an @attribute');
  const counts = new Map<string, number>();
  for await (const { e } of matching(q, range, ctx)) {
    const v = isAttr ? stringForm(e.attributes[name]) : e.labels[name];
    if (v === undefined) continue;
    counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  return [...counts]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
    .slice(0, limit);
}
