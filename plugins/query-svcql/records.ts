/**
 * Record queries (getLogsWithSvcQl and live tail): the search plus filter-only stages; records
 * come back unchanged, newest first, with an opaque cursor.
 *
 * A cursor is (scan position, records consumed after it): scan batches end at positions the
 * store understands, while pages end anywhere inside a batch.
 */
import { LookoutError } from '../../kernel/errors.js';
import { compileAlternatives } from '../../kernel/matchers.js';
import type { LogRecord } from '../../kernel/models.js';
import type { SvcQueryAst } from './ast.js';
import { checkBudget, type ExecContext } from './executor.js';
import { ExtractOp, WhereOp, type Operator } from './operators.js';
import { stageNotAllowed } from './parser.js';
import type { TimeRangeNs } from './planner.js';
import { Row } from './row.js';
import { compileLogSearch, searchPushdown } from './search.js';

const FILTER_STAGES = new Set(['where', 'parse', 'parseRegex', 'json', 'logfmt']);

/** Only where/parse/json/logfmt may follow the search in a record query. */
export function assertRecordQuery(q: SvcQueryAst): void {
  for (const s of q.stages) if (!FILTER_STAGES.has(s.kind)) throw stageNotAllowed(s);
}

function filterOps(q: SvcQueryAst): Operator[] {
  return q.stages.map((s) => {
    if (s.kind === 'where') return new WhereOp(s);
    if (s.kind === 'parse' || s.kind === 'parseRegex' || s.kind === 'json' || s.kind === 'logfmt') return new ExtractOp(s);
    throw stageNotAllowed(s);
  });
}

/** True when a record passes the search and the filter stages (live tail). */
export function compileRecordFilter(q: SvcQueryAst): (r: LogRecord) => boolean {
  assertRecordQuery(q);
  const pred = compileLogSearch(q.search);
  const ops = filterOps(q);
  return (r) => {
    if (pred !== null && !pred(r)) return false;
    let rows = [new Row(r, r.timestampNs, 0)];
    for (const op of ops) {
      rows = op.push(rows);
      if (rows.length === 0) return false;
    }
    return true;
  };
}

interface Cursor {
  /** Store position the resume starts after (null = the beginning). */
  p: string | null;
  /** Records consumed after `p`. */
  s: number;
}

function fingerprint(q: SvcQueryAst, range: TimeRangeNs): string {
  let h = 0x811c9dc5;
  const text = `${q.text}\u0000${range.startNs}\u0000${range.endNs}`;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(36);
}

const invalidCursor = () => new LookoutError('bad_request', 'invalid cursor', { code: 'BAD_USER_INPUT' });

function encodeCursor(c: Cursor, fp: string): string {
  return Buffer.from(JSON.stringify({ v: 1, p: c.p, s: c.s, h: fp })).toString('base64url');
}

function decodeCursor(text: string, fp: string): Cursor {
  let o: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(text)) throw invalidCursor();
    o = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (typeof o !== 'object' || o === null) throw invalidCursor();
  const c = o as { v?: unknown; p?: unknown; s?: unknown; h?: unknown };
  if (c.v !== 1 || c.h !== fp || !(c.p === null || typeof c.p === 'string')) throw invalidCursor();
  if (typeof c.s !== 'number' || !Number.isSafeInteger(c.s) || c.s < 0) throw invalidCursor();
  return { p: c.p, s: c.s };
}

export async function pageRecords(
  q: SvcQueryAst,
  range: TimeRangeNs,
  page: { limit: number; cursor?: string | null },
  ctx: ExecContext,
): Promise<{ records: LogRecord[]; cursor: string | null }> {
  assertRecordQuery(q);
  const fp = fingerprint(q, range);
  const start: Cursor = page.cursor ? decodeCursor(page.cursor, fp) : { p: null, s: 0 };
  const limit = Math.max(1, Math.floor(page.limit));
  const push = searchPushdown(q.search);
  const pred = compileLogSearch(q.search);
  const ops = filterOps(q);
  const inScope = ctx.scope === undefined ? null : compileAlternatives(ctx.scope);
  const exact = push.exact && ops.length === 0;
  const records: LogRecord[] = [];
  let next: Cursor | null = null;
  let more = false;
  let anchor = start.p;
  let toSkip = start.s;
  for await (const batch of ctx.logs.scan({
    startNs: range.startNs,
    endNs: range.endNs,
    matchers: push.matchers,
    terms: push.terms,
    scope: ctx.scope,
    order: 'desc',
    after: start.p ?? undefined,
    // one more than the page, to know whether anything is left
    limit: exact ? start.s + limit + 1 : undefined,
    signal: ctx.signal,
  })) {
    checkBudget(ctx);
    const recs = batch.records;
    const from = Math.min(toSkip, recs.length);
    toSkip -= from;
    let rows: Row[] = [];
    for (let i = from; i < recs.length; i++) {
      const r = recs[i]!;
      if (inScope !== null && !inScope(r.labels)) continue;
      if (pred !== null && !pred(r)) continue;
      const row = new Row(r, r.timestampNs, batch.seqs[i] ?? 0);
      row.ord = i;
      rows.push(row);
    }
    for (const op of ops) rows = op.push(rows);
    for (const row of rows) {
      if (records.length < limit) {
        records.push(row.rec!);
        next = { p: anchor, s: row.ord + 1 };
      } else {
        more = true;
        break;
      }
    }
    if (more) break;
    anchor = batch.position;
  }
  return { records, cursor: more && next ? encodeCursor(next, fp) : null };
}
