/**
 * The embedded EventStore. Recent events live in a head backed by a WAL; a head flush writes
 * them into an immutable `.eseg` segment (see event-segment.ts) and drops them from memory.
 * Only the head, segment indexes and a bounded block cache are in memory.
 *
 * A scan merges the head and the candidate blocks (those overlapping the time range, after the
 * cursor, and whose label values can satisfy the matchers and scope) in (timestamp, seq) order:
 * blocks are read in order of their time bound and a buffered row is emitted only once no
 * unread block can hold an earlier one (later for `desc`), so a caller that stops early reads
 * only the blocks it needs.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { compileAlternatives, compileMatchers } from '../../kernel/matchers.js';
import type { EventRecord } from '../../kernel/models.js';
import type { EventScanQuery, EventStore } from '../../kernel/storage.js';
import type { DocStoreOptions } from './docs.js';
import { SegmentedDocStore } from './segmented-doc-store.js';
import type { DocSegmentWriter } from './doc-segment-file.js';
import { mergeEventSegments } from './doc-merge.js';
import type { GenRanges } from './segment-merge.js';
import { byTimeSeq, compileBlockLabelTest, EVENT_MAGIC, EventSegment, writeEventSegment, type EventRow } from './event-segment.js';

export interface EventStoreOptions extends DocStoreOptions {
  /** Events in the head before it is flushed into a segment (default 50,000). */
  maxHeadEvents?: number;
  /** Bytes (estimated, decoded) of the block cache (default 16 MiB). */
  cacheBytes?: number;
}

const BATCH = 1024;

/** A source of rows for a scan: the head or one segment block. */
interface Unit {
  minTs: bigint;
  maxTs: bigint;
  rows: () => readonly EventRow[];
}

export class EmbeddedEventStore
  extends SegmentedDocStore<EventRecord, EventSegment, EventRow[]>
  implements EventStore
{
  private head: EventRow[] = [];

  constructor(opts: EventStoreOptions) {
    super(opts, { ext: 'eseg', kind: 'event', maxHead: opts.maxHeadEvents ?? 50_000, cacheBytes: opts.cacheBytes ?? 16 << 20 });
  }

  protected addToHead(doc: EventRecord, seq: number): void {
    this.head.push({ doc, seq });
  }
  protected headSize(): number {
    return this.head.length;
  }
  protected writeHead(path: string, lastSeq: number): void {
    writeEventSegment(path, [...this.head], lastSeq);
  }
  protected writeLegacy(path: string, docs: readonly [number, EventRecord][], lastSeq: number): void {
    writeEventSegment(path, docs.map(([seq, doc]) => ({ seq, doc })), lastSeq);
  }
  protected clearHead(): void {
    this.head = [];
  }
  protected openSegment(gen: number, path: string): EventSegment {
    return new EventSegment(gen, path, this.cache);
  }
  protected newestNs(seg: EventSegment): bigint {
    return seg.index.maxTs;
  }
  protected readonly magic = EVENT_MAGIC;
  protected writeMerged(inputs: readonly EventSegment[], w: DocSegmentWriter, lastSeq: number, covers: GenRanges, tick: () => Promise<void>): Promise<void> {
    return mergeEventSegments(inputs, w, lastSeq, covers, tick);
  }

  append(events: readonly EventRecord[]): Promise<void> {
    return this.appendDocs(events);
  }

  async *scan(q: EventScanQuery): AsyncIterable<{ events: EventRecord[]; seqs: number[]; position: string }> {
    if (q.scope !== undefined && q.scope.length === 0) return;
    const match = compileMatchers(q.matchers ?? []);
    const inScope = compileAlternatives(q.scope);
    const blockOk = compileBlockLabelTest(q.matchers ?? [], q.scope);
    const desc = (q.order ?? 'desc') === 'desc';
    const after = parsePosition(q.after);
    // (t, seq) strictly beyond the cursor in scan order.
    const pastCursor = (t: bigint, seq: number) =>
      !after || (desc ? t < after.t || (t === after.t && seq < after.seq) : t > after.t || (t === after.t && seq > after.seq));
    const keep = (r: EventRow) => {
      const t = r.doc.timestampNs;
      return t >= q.startNs && t < q.endNs && pastCursor(t, r.seq) && match(r.doc.labels) && inScope(r.doc.labels);
    };

    const units: Unit[] = [];
    const headRows = this.head.filter(keep);
    if (headRows.length) {
      let minTs = headRows[0]!.doc.timestampNs;
      let maxTs = minTs;
      for (const r of headRows) {
        if (r.doc.timestampNs < minTs) minTs = r.doc.timestampNs;
        if (r.doc.timestampNs > maxTs) maxTs = r.doc.timestampNs;
      }
      units.push({ minTs, maxTs, rows: () => headRows });
    }
    for (const seg of this.segments) {
      const ix = seg.index;
      if (ix.maxTs < q.startNs || ix.minTs >= q.endNs) continue;
      ix.blocks.forEach((b, i) => {
        if (b.maxTs < q.startNs || b.minTs >= q.endNs) return;
        if (after && (desc ? b.minTs > after.t : b.maxTs < after.t)) return;
        if (!blockOk(b.labels)) return;
        units.push({ minTs: b.minTs, maxTs: b.maxTs, rows: () => seg.block(i).filter(keep) });
      });
    }
    units.sort(desc ? (a, b) => (a.maxTs > b.maxTs ? -1 : a.maxTs < b.maxTs ? 1 : 0) : (a, b) => (a.minTs < b.minTs ? -1 : a.minTs > b.minTs ? 1 : 0));
    const order = desc ? (a: EventRow, b: EventRow) => byTimeSeq(b, a) : byTimeSeq;

    let buf: EventRow[] = [];
    let out: EventRow[] = [];
    const batch = (rows: EventRow[]) => {
      const last = rows[rows.length - 1]!;
      return { events: rows.map((r) => r.doc), seqs: rows.map((r) => r.seq), position: `${last.doc.timestampNs}:${last.seq}` };
    };
    for (let i = 0; i < units.length; ) {
      if (q.signal?.aborted) return;
      for (const r of units[i++]!.rows()) buf.push(r);
      if (i % 16 === 0) await yieldToLoop();
      buf.sort(order);
      // Rows no unread unit can precede in scan order are final.
      const next = units[i];
      let ready = buf.length;
      if (next) {
        ready = 0;
        while (ready < buf.length && (desc ? buf[ready]!.doc.timestampNs > next.maxTs : buf[ready]!.doc.timestampNs < next.minTs)) ready++;
      }
      for (let k = 0; k < ready; k++) out.push(buf[k]!);
      buf = ready === buf.length ? [] : buf.slice(ready);
      while (out.length >= BATCH) {
        yield batch(out.slice(0, BATCH));
        out = out.slice(BATCH);
      }
    }
    if (out.length) yield batch(out);
  }

  stats(): { headEvents: number; segments: number; segmentEvents: number; segmentBytes: number; walBytes: number; cacheBytes: number } {
    let segmentEvents = 0;
    let segmentBytes = 0;
    for (const s of this.segments) {
      segmentEvents += s.index.events;
      segmentBytes += s.file.size;
    }
    return { headEvents: this.head.length, segments: this.segments.length, segmentEvents, segmentBytes, walBytes: this.wal.walBytes, cacheBytes: this.cache.bytes };
  }
}

/** Positions are `<timestampNs>:<seq>`; anything else starts from the beginning. */
function parsePosition(p: string | undefined): { t: bigint; seq: number } | undefined {
  if (!p) return undefined;
  const m = /^(-?\d{1,20}):(\d{1,16})$/.exec(p);
  if (!m) return undefined;
  return { t: BigInt(m[1]!), seq: Number(m[2]) };
}
