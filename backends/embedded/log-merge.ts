/**
 * Merging small log segments (policy and crash safety: segment-merge.ts). The inputs, each
 * sorted by (timestamp, seq), are merged row by row into full 8,192-record blocks; every block
 * gets its index entries (time and seq bounds, streams with record counts, trigram bloom) built
 * afresh, exactly as at a head flush. One output block is encoded per turn of the event loop,
 * so appends and queries run in between; the store keeps reading the inputs until the merged
 * segment is swapped in with one synchronous step.
 */
import { rmSync } from 'node:fs';
import type { Labels } from '../../kernel/models.js';
import type { Logger } from '../../kernel/logger.js';
import { AtomicFile } from './files.js';
import { BLOCK_RECORDS, LogSegment, LogSegmentWriter, type BlockReader, type Facets, type LogColumns } from './log-segment.js';
import { coverOf, MergeAbandoned, planMerge, yieldToLoop, type MergePolicy, type MergeRunner } from './segment-merge.js';

/** What the log store lends a merge. */
export interface LogMergeHost {
  segments(): readonly LogSegment[];
  /** Replaces `inputs` with `merged` in one synchronous step (and forgets cached readers of the inputs). */
  swap(inputs: readonly LogSegment[], merged: LogSegment): void;
  streamsOf(id: number): Labels;
  streamFor(labels: Labels): number;
  runner: MergeRunner;
  logger: Logger;
}

/** Merges groups chosen by `policy` until none is left; returns how many merges were done. */
export async function mergeLogSegments(host: LogMergeHost, policy: MergePolicy): Promise<number> {
  let done = 0;
  for (;;) {
    if (host.runner.stopped) return done;
    const group = planMerge(
      host.segments()
        .filter((seg) => host.runner.eligible(seg))
        .map((seg) => ({ seg, gen: seg.gen, bytes: seg.bytes, newestNs: seg.maxTs })),
      policy,
    );
    if (!group) return done;
    const inputs = group.map((g) => g.seg);
    try {
      await mergeGroup(host, inputs);
      done++;
    } catch (e) {
      if (e instanceof MergeAbandoned) return done;
      host.runner.fail(inputs);
      host.logger.error('log segment merge failed; its inputs are left as they are', { inputs: inputs.map((s) => s.path), err: e });
    }
  }
}

/** A read position in one input: its current block and row. */
class Cursor {
  bi = -1;
  rdr: BlockReader | null = null;
  i = 0;
  streams: Uint32Array | null = null;
  seqs: Float64Array | null = null;
  ts = 0n;
  seq = 0;

  constructor(
    readonly seg: LogSegment,
    /** Counts blocks opened, so the merge yields after reading a few (each is a read and an inflate). */
    private readonly loads: { n: number },
  ) {}

  /** Moves to the next row; false at the end of the segment. */
  next(): boolean {
    if (this.rdr && this.i + 1 < this.rdr.n) {
      this.i++;
    } else {
      do {
        if (++this.bi >= this.seg.blocks.length) return false;
      } while (this.seg.blocks[this.bi]!.n === 0);
      this.rdr = this.seg.reader(this.bi);
      this.loads.n++;
      this.streams = this.rdr.streams();
      this.seqs = this.rdr.seqs();
      this.i = 0;
    }
    this.ts = this.rdr!.tsAt(this.i);
    this.seq = this.seqs![this.i]!;
    return true;
  }
}

/** Input blocks opened, or rows copied, between two yields to the event loop. */
const LOADS_PER_TICK = 8;
const ROWS_PER_TICK = 2048;

const before = (a: Cursor, b: Cursor) => a.ts < b.ts || (a.ts === b.ts && a.seq < b.seq);

async function mergeGroup(host: LogMergeHost, inputs: LogSegment[]): Promise<void> {
  inputs.sort((a, b) => a.gen - b.gen);
  const target = inputs[inputs.length - 1]!;
  const started = performance.now();
  const file = new AtomicFile(target.path);
  try {
    const w = new LogSegmentWriter((id) => host.streamsOf(id), (b) => file.write(b));
    const pending: LogColumns = {
      n: 0,
      ts: new BigInt64Array(BLOCK_RECORDS),
      seq: new Float64Array(BLOCK_RECORDS),
      stream: new Uint32Array(BLOCK_RECORDS),
      msg: [],
      facets: [],
    };
    const check = () => {
      if (host.runner.stopped) throw new MergeAbandoned('store closing');
      const live = new Set(host.segments());
      if (!inputs.every((s) => live.has(s))) throw new MergeAbandoned('an input segment was removed');
    };
    const loads = { n: 0 };
    let rows = 0;
    const tick = async () => {
      loads.n = 0;
      rows = 0;
      await yieldToLoop();
      check();
    };
    const emit = async () => {
      if (pending.n === 0) return;
      // Compression runs on the thread pool; encoding the block is the only synchronous part.
      await w.addBlockAsync(pending, 0, pending.n);
      pending.n = 0;
      pending.msg = [];
      pending.facets = [];
      await tick();
    };
    let live: Cursor[] = [];
    for (const s of inputs) {
      const c = new Cursor(s, loads);
      if (c.next()) live.push(c);
      if (loads.n >= LOADS_PER_TICK) await tick();
    }
    while (live.length > 0) {
      // The input with the earliest row, and the bound up to which it may run alone.
      let m = 0;
      for (let k = 1; k < live.length; k++) if (before(live[k]!, live[m]!)) m = k;
      const c = live[m]!;
      let bound: Cursor | null = null;
      for (let k = 0; k < live.length; k++) if (k !== m && (!bound || before(live[k]!, bound))) bound = live[k]!;
      let more = true;
      do {
        const r = c.rdr!;
        const n = pending.n++;
        pending.ts[n] = c.ts;
        pending.seq[n] = c.seq;
        pending.stream[n] = c.streams![c.i]!;
        pending.msg.push(r.msgAt(c.i));
        pending.facets.push(r.facetsAt(c.i) as Facets | null);
        if (pending.n === BLOCK_RECORDS) await emit();
        more = c.next();
        if (loads.n >= LOADS_PER_TICK || ++rows >= ROWS_PER_TICK) await tick();
      } while (more && (!bound || !before(bound, c)));
      if (!more) live = live.filter((x) => x !== c);
    }
    await emit();
    w.finish(Math.max(...inputs.map((s) => s.lastSeq)), coverOf(inputs));
    file.sync();
    // From here to the swap everything is synchronous: no query or flush interleaves.
    check();
    file.publish();
    const merged = LogSegment.load(target.gen, target.path, (l) => host.streamFor(l));
    host.swap(inputs, merged);
    for (const s of inputs) {
      s.release();
      if (s !== target) rmSync(s.path, { force: true });
    }
    host.logger.info('merged log segments', {
      inputs: inputs.length,
      records: w.records,
      bytes: merged.bytes,
      ms: Math.round(performance.now() - started),
    });
  } catch (e) {
    file.abort();
    throw e;
  }
}
