/**
 * The search engine's `_bulk` NDJSON: action/metadata lines (`index`, `create`, `delete`,
 * `update`) each followed by a source line for index/create/update. Index and create documents
 * become log records; delete and update are answered with a per-item error (logs are
 * append-only). A malformed line fails the whole request, naming the line, before anything is
 * written.
 */
import { randomBytes } from 'node:crypto';
import { badRequest } from '../../kernel/errors.js';
import type { LogRecord } from '../../kernel/models.js';
import { isRecord } from '../ingest-forwarder/log-fields.js';
import { documentToLog, nowNs, scannedDocumentToLog } from './documents.js';

export type BulkOp = 'index' | 'create' | 'delete' | 'update';

export interface BulkItem {
  op: BulkOp;
  index: string;
  id: string;
  /**
   * True when the id is generated here: drawn from ParsedBulk.nextId when the response is
   * written (base64url: safe to embed in JSON as is); `id` is then empty. Such items are shared
   * by every document of the same action line (nothing per document but the record).
   */
  generated?: boolean;
  /** Set for refused items. */
  error?: { type: string; reason: string };
}

export interface ParsedBulk {
  logs: LogRecord[];
  items: BulkItem[];
  /** The ids of generated items, in item order. */
  nextId: () => string;
}

/** An action line's meaning, cached while the same line repeats. */
interface Action {
  op: BulkOp;
  index: string | undefined;
  id: string | undefined;
  /** The item of every successful document of this action when its id is generated. */
  generatedItem?: BulkItem;
}

/** ES-style 20-character base64url ids, drawn in one batch per request. */
class IdSource {
  private pool = '';
  private pos = 0;
  constructor(private readonly expected: number) {}
  next(): string {
    if (this.pos + 20 > this.pool.length) {
      this.pool = randomBytes(Math.max(15, 15 * Math.min(this.expected, 65536))).toString('base64url');
      this.pos = 0;
    }
    const id = this.pool.slice(this.pos, this.pos + 20);
    this.pos += 20;
    return id;
  }
}

const OPS = new Set<string>(['index', 'create', 'delete', 'update']);

function parseLine(text: string, line: number, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw badRequest(`malformed ${what} on line ${line}: ${(e as Error).message}`, { code: 'parse_exception' });
  }
}

/**
 * One pass over the body's bytes: lines are found with a native byte search and never joined
 * or re-split; a repeated action line is recognised by comparing bytes (parsed once); index and
 * create documents are read straight into facets by the scanner (doc-scan.ts), with JSON.parse
 * only for what it declines. Lines not starting with `{` (blank lines, BOMs) are decoded and
 * judged as text, as before.
 */
export function parseBulk(body: Buffer, defaultIndex: string | undefined): ParsedBulk {
  const len = body.length;
  const logs: LogRecord[] = [];
  const items: BulkItem[] = [];
  const ids = new IdSource(len >>> 8);
  const now = nowNs();
  let pos = 0;
  let line = 0;
  // The last action line parsed (byte range) and its meaning.
  let lastStart = -1;
  let lastEnd = -1;
  let lastAction: Action | undefined;
  // The action awaiting its source line (and the line it was on).
  let pending: Action | undefined;
  let pendingLine = 0;
  while (pos < len) {
    const start = pos;
    let end = body.indexOf(10, pos);
    if (end < 0) end = len;
    line++;
    pos = end + 1;
    if (body[start] !== 123 /* { */ && body.toString('utf8', start, end).trim() === '') continue;
    if (end > start && body[end - 1] === 13) end--;
    if (pending) {
      const p = pending;
      pending = undefined;
      const index = p.index ?? defaultIndex ?? '';
      if (p.op !== 'update') {
        const log = scannedDocumentToLog(body, start, end, index || undefined, now);
        if (log) {
          logs.push(log);
          items.push(p.id === undefined ? (p.generatedItem ??= { op: p.op, index, id: '', generated: true }) : { op: p.op, index, id: p.id });
          continue;
        }
      }
      const doc = parseLine(body.toString('utf8', start, end), line, 'document');
      if (p.op === 'update') {
        items.push({ op: p.op, index, id: p.id ?? ids.next(), error: { type: 'illegal_argument_exception', reason: 'update is not supported: logs are append-only' } });
        continue;
      }
      if (!isRecord(doc)) throw badRequest(`document on line ${line} is not a JSON object`, { code: 'mapper_parsing_exception' });
      logs.push(documentToLog(doc, index || undefined, now));
      items.push(p.id === undefined ? (p.generatedItem ??= { op: p.op, index, id: '', generated: true }) : { op: p.op, index, id: p.id });
      continue;
    }
    // Bulk bodies repeat the same action line: parse and check it once.
    if (lastAction && end - start === lastEnd - lastStart && body.compare(body, lastStart, lastEnd, start, end) === 0) {
      if (lastAction.op === 'delete') items.push(deleteItem(lastAction, defaultIndex));
      else {
        pending = lastAction;
        pendingLine = line;
      }
      continue;
    }
    const action = parseLine(body.toString('utf8', start, end), line, 'action/metadata line');
    const keys = isRecord(action) ? Object.keys(action) : [];
    const op = keys[0];
    if (keys.length !== 1 || !op || !OPS.has(op)) {
      throw badRequest(
        `malformed action/metadata line [${line}], expected one of [create, delete, index, update] but found [${op ?? typeof action}]`,
        { code: 'illegal_argument_exception' },
      );
    }
    const meta = (action as Record<string, unknown>)[op];
    if (meta !== undefined && meta !== null && !isRecord(meta)) {
      throw badRequest(`malformed action/metadata line [${line}]: the ${op} metadata must be an object`, { code: 'illegal_argument_exception' });
    }
    const index = typeof meta?._index === 'string' ? meta._index : undefined;
    const id = typeof meta?._id === 'string' ? meta._id : typeof meta?._id === 'number' ? String(meta._id) : undefined;
    lastStart = start;
    lastEnd = end;
    lastAction = { op: op as BulkOp, index, id };
    if (op === 'delete') {
      items.push(deleteItem(lastAction, defaultIndex));
      continue;
    }
    pending = lastAction;
    pendingLine = line;
  }
  if (pending) throw badRequest(`action/metadata line [${pendingLine}] has no source line after it`, { code: 'illegal_argument_exception' });
  return { logs, items, nextId: () => ids.next() };
}

function deleteItem(a: Action, defaultIndex: string | undefined): BulkItem {
  return {
    op: 'delete',
    index: a.index ?? defaultIndex ?? '',
    id: a.id ?? '',
    error: { type: 'illegal_argument_exception', reason: 'delete is not supported: logs are append-only' },
  };
}
