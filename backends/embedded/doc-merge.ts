/**
 * The record-level part of merging span and event segments (the policy, the temp file and the
 * swap are in segment-merge.ts and segmented-doc-store.ts). Both read their inputs block by
 * block past the block cache and build the output with the same builders a head flush uses,
 * so every index (time bounds, id blooms and id table, block summaries, attribute blooms, label
 * values) is computed afresh for the merged blocks. `tick` is awaited after every output block:
 * it yields to the event loop and throws MergeAbandoned when the merge must stop.
 */
import type { Span } from '../../kernel/models.js';
import type { DocSegmentWriter } from './doc-segment-file.js';
import { byTimeSeq, EVENT_BLOCK, EventSegmentBuilder, type EventRow, type EventSegment } from './event-segment.js';
import { bloomHasHash, hash2 } from './hash-bloom.js';
import { unpack } from './pack.js';
import type { GenRanges } from './segment-merge.js';
import { minStart, TraceSegmentBuilder, type TraceSegment } from './trace-segment.js';

/** Traces merged between two yields to the event loop (besides one per output block). */
const TRACES_PER_TICK = 128;

/** One trace of an input, in the input's order (first span start). */
interface TraceItem {
  id: string;
  spans: Span[];
  min: bigint;
}

/** Iterates the traces of a span segment in file order (sorted by first start time). */
class TraceCursor {
  private b = -1;
  private t = 0;
  private block: ReturnType<TraceSegment['uncachedBlock']> | null = null;
  cur: TraceItem | null = null;
  /** Traces of this input already written with an earlier input's part of them. */
  readonly taken = new Set<string>();

  constructor(readonly seg: TraceSegment) {}

  next(): boolean {
    for (;;) {
      if (!this.block || this.t >= this.block.sum.traces) {
        if (++this.b >= this.seg.index.blocks.length) {
          this.cur = null;
          return false;
        }
        this.block = this.seg.uncachedBlock(this.b);
        this.t = 0;
        continue;
      }
      const { sum, data } = this.block;
      const t = this.t++;
      const spans = unpack<Span[]>(data.subarray(sum.offs[t]!, sum.offs[t + 1]!));
      if (spans.length === 0) continue;
      const id = spans[0]!.traceId.toLowerCase();
      if (this.taken.delete(id)) continue;
      this.cur = { id, spans, min: minStart(spans) };
      return true;
    }
  }
}

/**
 * Writes the traces of `inputs` (generation order) as one segment: a trace held by several
 * inputs becomes one group, its spans in input order (as trace-by-id returned them before).
 */
export async function mergeTraceSegments(
  inputs: readonly TraceSegment[],
  w: DocSegmentWriter,
  lastSeq: number,
  covers: GenRanges,
  tick: () => Promise<void>,
): Promise<void> {
  const b = new TraceSegmentBuilder(w);
  const cursors = inputs.map((s) => new TraceCursor(s));
  let live = cursors.filter((c) => c.next());
  let blocks = 0;
  let traces = 0;
  while (live.length > 0) {
    let m = live[0]!;
    for (const c of live) if (c.cur!.min < m.cur!.min) m = c;
    const { id } = m.cur!;
    let spans = m.cur!.spans;
    // Later parts of this trace in other inputs come later in their order: take them now.
    const mi = cursors.indexOf(m);
    const [h1, h2] = hash2(id);
    let parts: Span[][] | null = null;
    const advance: TraceCursor[] = [m];
    for (let k = 0; k < cursors.length; k++) {
      const c = cursors[k]!;
      if (k === mi) continue;
      // The trace may be the one this input is positioned on (equal first start times); else
      // the id bloom filter rules out most inputs without touching their id tables.
      const more = c.cur?.id === id ? c.cur.spans : bloomHasHash(c.seg.index.idBloom, h1, h2) ? c.seg.lookup(id) : [];
      if (more.length === 0) continue;
      if (c.cur?.id === id) advance.push(c);
      else c.taken.add(id);
      parts ??= cursors.map(() => []);
      parts[k] = more;
    }
    if (parts) {
      parts[mi] = spans;
      spans = parts.flat();
    }
    b.add(id, spans);
    for (const c of advance) if (!c.next()) live = live.filter((x) => x !== c);
    if (b.blocks !== blocks || ++traces % TRACES_PER_TICK === 0) {
      blocks = b.blocks;
      await tick();
    }
  }
  b.finish(lastSeq, covers);
}

/** Iterates the rows of an event segment in (timestamp, seq) order. */
class EventCursor {
  private b = -1;
  private rows: EventRow[] = [];
  private i = 0;
  cur: EventRow | null = null;

  constructor(readonly seg: EventSegment) {}

  next(): boolean {
    while (this.i >= this.rows.length) {
      if (++this.b >= this.seg.index.blocks.length) {
        this.cur = null;
        return false;
      }
      this.rows = this.seg.uncachedBlock(this.b);
      this.i = 0;
    }
    this.cur = this.rows[this.i++]!;
    return true;
  }
}

/** Writes the events of `inputs` as one segment, merged in (timestamp, seq) order. */
export async function mergeEventSegments(
  inputs: readonly EventSegment[],
  w: DocSegmentWriter,
  lastSeq: number,
  covers: GenRanges,
  tick: () => Promise<void>,
): Promise<void> {
  const b = new EventSegmentBuilder(w);
  let live = inputs.map((s) => new EventCursor(s)).filter((c) => c.next());
  let part: EventRow[] = [];
  while (live.length > 0) {
    let m = live[0]!;
    for (const c of live) if (byTimeSeq(c.cur!, m.cur!) < 0) m = c;
    part.push(m.cur!);
    if (!m.next()) live = live.filter((c) => c !== m);
    if (part.length === EVENT_BLOCK) {
      b.addBlock(part);
      part = [];
      await tick();
    }
  }
  b.addBlock(part);
  b.finish(lastSeq, covers);
}
