/**
 * Time-ordered scans over sequenced documents (logs, events): sort by (timestamp, sequence) —
 * later-ingested first among equal timestamps when newest-first — and resume with
 * `search_after` from an opaque position `[timestamp, sequence]`.
 *
 * Timestamps are nanoseconds in a `long` field, sent and read as decimal strings (JSON numbers
 * lose precision above 2^53); the exact value read back comes from `_source`.
 */
import { badRequest } from '../../kernel/errors.js';
import { compileAlternatives, compileMatchers, type LabelMatcher, type MatcherAlternatives } from '../../kernel/matchers.js';
import type { Labels } from '../../kernel/models.js';
import type { Es, Query } from './es.js';
import { MatcherTranslator } from './query.js';

const MAX_PAGE = 5000;
const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

export interface SequencedDoc {
  ts: string;
  seq: number;
  labels: Labels;
}

export interface OrderedScanQuery {
  startNs: bigint;
  endNs: bigint;
  matchers?: readonly LabelMatcher[];
  scope?: MatcherAlternatives;
  order?: 'desc' | 'asc';
  after?: string;
  limit?: number;
  signal?: AbortSignal;
}

export function nsRange(startNs: bigint, endNs: bigint): Query {
  const lo = startNs < LONG_MIN ? LONG_MIN : startNs;
  const hi = endNs > LONG_MAX ? LONG_MAX : endNs;
  return { range: { ts: { gte: lo.toString(), lt: hi.toString() } } };
}

export function nsToMs(ns: bigint): number {
  const ms = ns / 1_000_000n;
  return ms < 0n ? 0 : ms > 8_640_000_000_000_000n ? 8_640_000_000_000_000 : Number(ms);
}

function parsePosition(after: string): [string, number] {
  try {
    const p = JSON.parse(after) as unknown;
    if (Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && /^-?\d+$/.test(p[0]) && Number.isSafeInteger(p[1])) {
      return [p[0], p[1] as number];
    }
  } catch {
    // fall through
  }
  throw badRequest(`invalid position "${after.slice(0, 100)}"`);
}

/**
 * Scans `kind` documents in [startNs, endNs). `extra` are additional prefilter clauses;
 * `accept` is the exact in-process predicate on top of the label matchers and scope.
 */
export async function* orderedScan<D extends SequencedDoc>(
  es: Es,
  kind: 'logs' | 'events',
  q: OrderedScanQuery,
  extra: Query[] = [],
  accept: (d: D) => boolean = () => true,
  /** `_source` fields to read (default: all); must include ts, seq and labels. */
  source?: string[],
): AsyncGenerator<{ docs: D[]; position: string }> {
  if (q.scope !== undefined && q.scope.length === 0) return;
  if (q.endNs <= q.startNs) return;
  const after = q.after !== undefined ? parsePosition(q.after) : undefined;
  const index = es.indicesFor(kind, nsToMs(q.startNs), nsToMs(q.endNs - 1n));
  const range = nsRange(q.startNs, q.endNs);
  const tr = await new MatcherTranslator(es, index, range).build({ matchers: q.matchers, scope: q.scope });
  const query: Query = extra.length ? { bool: { filter: [tr.query, ...extra] } } : tr.query;
  const match = compileMatchers(q.matchers ?? []);
  const inScope = compileAlternatives(q.scope);
  const dir = (q.order ?? 'desc') === 'desc' ? 'desc' : 'asc';
  // A small first page for a small limit; later pages grow (the caller kept reading).
  const size = Math.min(MAX_PAGE, Math.max(100, q.limit ?? MAX_PAGE));
  const afterOf = (h: { _source?: D }) => (h._source ? [h._source.ts, h._source.seq] : undefined);
  for await (const hits of es.pages<D>(index, { query, sort: [{ ts: dir }, { seq: dir }], ...(source ? { _source: source } : {}) }, size, after, q.signal, afterOf, MAX_PAGE)) {
    const docs: D[] = [];
    for (const h of hits) {
      const d = h._source!;
      if (match(d.labels) && inScope(d.labels) && accept(d)) docs.push(d);
    }
    const last = hits[hits.length - 1]!._source!;
    // The position is the last hit read, accepted or not, so a resume never re-reads it.
    if (docs.length) yield { docs, position: JSON.stringify([last.ts, last.seq]) };
  }
}
