/**
 * Immutable event segment files (`.eseg`), written at each event head flush: events sorted by
 * (timestamp, sequence) in blocks of up to 1,024. The in-memory index keeps per block the time
 * and sequence bounds and, per label name, the distinct values present ("" when some event
 * lacks the label; `null` past 64 values, meaning "anything"), so a scan evaluates its matchers
 * and scope against the block's values and skips blocks no event of which can match.
 */
import type { LabelMatcher, ValuePredicate } from '../../kernel/matchers.js';
import { compileMatcher } from '../../kernel/matchers.js';
import type { EventRecord } from '../../kernel/models.js';
import type { BlockCache } from './block-cache.js';
import { DocSegmentFile, DocSegmentWriter, type BlockRef } from './doc-segment-file.js';
import { AtomicFile } from './files.js';
import type { GenRanges } from './segment-merge.js';
import { pack, unpack } from './pack.js';

export const EVENT_MAGIC = 'LKESEG01';
export const EVENT_BLOCK = 1024;
const MAX_VALUES = 64;

export interface EventRow {
  doc: EventRecord;
  seq: number;
}

export interface EventBlockMeta {
  ref: BlockRef;
  n: number;
  minTs: bigint;
  maxTs: bigint;
  minSeq: number;
  maxSeq: number;
  labels: Record<string, string[] | null>;
}

export interface EventSegmentIndex {
  lastSeq: number;
  events: number;
  minTs: bigint;
  maxTs: bigint;
  blocks: EventBlockMeta[];
  /** Generations a merged segment replaces (absent unless merged). */
  covers?: GenRanges;
}

export const byTimeSeq = (a: EventRow, b: EventRow): number =>
  a.doc.timestampNs < b.doc.timestampNs ? -1 : a.doc.timestampNs > b.doc.timestampNs ? 1 : a.seq - b.seq;

function labelValues(rows: readonly EventRow[]): Record<string, string[] | null> {
  const sets = new Map<string, { vals: Set<string>; count: number }>();
  for (const { doc } of rows) {
    for (const k in doc.labels) {
      let e = sets.get(k);
      if (!e) sets.set(k, (e = { vals: new Set(), count: 0 }));
      e.count++;
      if (e.vals.size <= MAX_VALUES) e.vals.add(doc.labels[k]!);
    }
  }
  const out: Record<string, string[] | null> = {};
  for (const [k, e] of sets) {
    if (e.count < rows.length) e.vals.add('');
    out[k] = e.vals.size > MAX_VALUES ? null : [...e.vals];
  }
  return out;
}

/** Writes `rows` as a segment (sorting them); returns its index and size. */
export function writeEventSegment(path: string, rows: EventRow[], lastSeq: number): { index: EventSegmentIndex; bytes: number } {
  rows.sort(byTimeSeq);
  const file = new AtomicFile(path);
  let index: EventSegmentIndex;
  try {
    const b = new EventSegmentBuilder(new DocSegmentWriter(file, EVENT_MAGIC));
    for (let i = 0; i < rows.length; i += EVENT_BLOCK) b.addBlock(rows.slice(i, i + EVENT_BLOCK));
    index = b.finish(lastSeq);
  } catch (e) {
    file.abort();
    throw e;
  }
  return { index, bytes: file.commit() };
}

/** Builds an event segment from blocks of rows given in (timestamp, seq) order. */
export class EventSegmentBuilder {
  private readonly blocks: EventBlockMeta[] = [];
  private events = 0;
  private minTs = 0n;
  private maxTs = 0n;

  constructor(private readonly w: DocSegmentWriter) {}

  /** Adds one block (at most EVENT_BLOCK rows, sorted, after every row added before). */
  addBlock(part: readonly EventRow[]): void {
    if (part.length === 0) return;
    let minSeq = Infinity;
    let maxSeq = 0;
    for (const r of part) {
      if (r.seq < minSeq) minSeq = r.seq;
      if (r.seq > maxSeq) maxSeq = r.seq;
    }
    const minTs = part[0]!.doc.timestampNs;
    const maxTs = part[part.length - 1]!.doc.timestampNs;
    const ref = this.w.add(pack(part.map((r) => [r.seq, r.doc])));
    this.blocks.push({ n: part.length, minTs, maxTs, minSeq, maxSeq, labels: labelValues(part), ref });
    if (this.events === 0) this.minTs = minTs;
    this.maxTs = maxTs;
    this.events += part.length;
  }

  /** Writes the index; `covers` marks a merge output. */
  finish(lastSeq: number, covers?: GenRanges): EventSegmentIndex {
    const index: EventSegmentIndex = { lastSeq, events: this.events, minTs: this.minTs, maxTs: this.maxTs, blocks: this.blocks };
    if (covers && covers.length > 0) index.covers = covers;
    this.w.finish(index);
    return index;
  }
}

let nextUid = 1;

export class EventSegment {
  readonly file: DocSegmentFile<EventSegmentIndex>;
  /** Cache key prefix, unique per opened object (a merged segment takes its newest input's gen). */
  readonly cachePrefix: string;

  constructor(
    readonly gen: number,
    path: string,
    private readonly cache: BlockCache<EventRow[]>,
  ) {
    this.file = new DocSegmentFile<EventSegmentIndex>(path, EVENT_MAGIC);
    this.cachePrefix = `${gen}.${nextUid++}:`;
  }

  get index(): EventSegmentIndex {
    return this.file.index;
  }

  /** Rows of block `i` in (timestamp, seq) order (shared with the cache: do not mutate). */
  block(i: number): EventRow[] {
    const ref = this.index.blocks[i]!.ref;
    return this.cache.get(`${this.cachePrefix}${i}`, () => ({ value: this.uncachedBlock(i), weight: ref.raw * 4 }));
  }

  /** Rows of block `i` read past the cache (for a merge, which reads every block once). */
  uncachedBlock(i: number): EventRow[] {
    return unpack<Array<[number, EventRecord]>>(this.file.block(this.index.blocks[i]!.ref)).map(([seq, doc]) => ({ seq, doc }));
  }

  close(): void {
    this.file.close();
  }
}

/**
 * A block test for matchers and an RBAC scope: false when no event of a block with these
 * label values can satisfy every matcher of `matchers` and one alternative of `scope`.
 */
export function compileBlockLabelTest(matchers: readonly LabelMatcher[], scope: readonly (readonly LabelMatcher[])[] | undefined): (labels: EventBlockMeta['labels']) => boolean {
  const compile = (ms: readonly LabelMatcher[]) => ms.map((m) => [m.name, compileMatcher(m)] as [string, ValuePredicate]);
  const must = compile(matchers);
  const alts = scope?.map(compile);
  const may = (labels: EventBlockMeta['labels'], [name, p]: [string, ValuePredicate]) => {
    const vals = labels[name];
    if (vals === null) return true;
    if (vals === undefined) return p('');
    return vals.some(p);
  };
  return (labels) => {
    for (const m of must) if (!may(labels, m)) return false;
    if (alts === undefined) return true;
    return alts.some((alt) => alt.every((m) => may(labels, m)));
  };
}
