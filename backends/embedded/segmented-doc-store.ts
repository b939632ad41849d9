/**
 * The lifecycle shared by the trace and event stores: a WAL-backed in-memory head that is
 * flushed into immutable segment files, segment files opened (indexes only) at start, retention
 * by whole segments, and an orderly close. Subclasses decide the head's shape and the segment
 * format; this class owns everything else once.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BlockCache } from './block-cache.js';
import { DocSegmentWriter, dropExpiredSegments, openSegmentFiles, segmentFileName } from './doc-segment-file.js';
import { AtomicFile } from './files.js';
import { coverOf, MergeAbandoned, MergeRunner, planMerge, readCovers, yieldToLoop, type GenRanges, type MergePolicy } from './segment-merge.js';
import { DocWal, type DocStoreOptions } from './docs.js';
import { upgradeLegacySegments } from './legacy-doc-segments.js';

/** Old segment files stay open this long after deletion so running reads can finish. */
const CLOSE_DELAY_MS = 60_000;

export interface StoredSegment {
  readonly gen: number;
  readonly file: { readonly path: string; readonly size: number };
  readonly index: { readonly lastSeq: number; readonly covers?: GenRanges };
  /** Prefix of this object's block-cache keys. */
  readonly cachePrefix: string;
  close(): void;
}

export interface SegmentedStoreSpec {
  /** Segment file extension, e.g. "tseg". */
  ext: string;
  /** Name used in log lines, e.g. "trace". */
  kind: string;
  /** Head size (in the subclass's unit) that triggers a flush. */
  maxHead: number;
  cacheBytes: number;
}

export abstract class SegmentedDocStore<Doc, Seg extends StoredSegment, CacheValue> {
  protected segments: Seg[] = [];
  protected readonly segDir: string;
  readonly wal: DocWal<Doc>;
  readonly cache: BlockCache<CacheValue>;
  private nextGen = 1;
  private flushQueued = false;
  private readonly merger = new MergeRunner();

  constructor(
    protected readonly baseOpts: DocStoreOptions,
    private readonly spec: SegmentedStoreSpec,
  ) {
    this.segDir = join(baseOpts.dir, 'segments');
    this.wal = new DocWal<Doc>(baseOpts);
    this.cache = new BlockCache<CacheValue>(spec.cacheBytes);
  }

  /** Adds one replayed or appended document to the head. */
  protected abstract addToHead(doc: Doc, seq: number): void;
  /** Documents in the head (the flush threshold counts these). */
  protected abstract headSize(): number;
  /** Writes the current head as a segment file at `path`. */
  protected abstract writeHead(path: string, lastSeq: number): void;
  /** Writes documents of a pre-segment-format file (upgrade on first start). */
  protected abstract writeLegacy(path: string, docs: readonly [number, Doc][], lastSeq: number): void;
  protected abstract clearHead(): void;
  protected abstract openSegment(gen: number, path: string): Seg;
  /** Newest timestamp (ns) in a segment, for retention. */
  protected abstract newestNs(seg: Seg): bigint;
  /** Writes the records of `inputs` (generation order) as one segment (see doc-merge.ts). */
  protected abstract writeMerged(inputs: readonly Seg[], w: DocSegmentWriter, lastSeq: number, covers: GenRanges, tick: () => Promise<void>): Promise<void>;
  /** The segment file magic. */
  protected abstract readonly magic: string;

  private readonly onDoc = (doc: Doc, seq: number): void => this.addToHead(doc, seq);

  private segmentPath(gen: number): string {
    return join(this.segDir, segmentFileName(gen, this.spec.ext));
  }

  /** Loads segment indexes (not their documents) and replays the WAL into the head. */
  open(): void {
    mkdirSync(this.segDir, { recursive: true });
    let files = readdirSync(this.segDir);
    for (const f of files) if (f.endsWith('.tmp')) rmSync(join(this.segDir, f), { force: true });
    if (files.some((f) => f.endsWith('.dseg'))) {
      upgradeLegacySegments<Doc>(this.segDir, this.baseOpts.logger, (gen, docs, lastSeq) =>
        this.writeLegacy(this.segmentPath(gen), docs, lastSeq),
      );
      files = readdirSync(this.segDir);
    }
    const opened = openSegmentFiles(
      this.segDir,
      files,
      this.spec.ext,
      (gen, path) => this.openSegment(gen, path),
      this.baseOpts.logger,
      this.spec.kind,
    );
    this.segments.push(...opened.segments);
    this.nextGen = opened.nextGen;
    this.wal.open(opened.persisted, this.onDoc);
  }

  protected appendDocs(docs: readonly Doc[]): Promise<void> {
    const done = this.wal.append(docs, this.onDoc);
    if (this.headSize() >= this.spec.maxHead && !this.flushQueued) {
      this.flushQueued = true;
      void this.wal.serial(() => {
        this.flushQueued = false;
        return this.flushHead();
      });
    }
    return done;
  }

  /** Writes the head into a new segment and empties it; returns the documents flushed. */
  async flushHead(): Promise<number> {
    const n = this.headSize();
    if (n === 0) return 0;
    await this.wal.checkpoint((lastSeq) => {
      const gen = this.nextGen++;
      const path = this.segmentPath(gen);
      this.writeHead(path, lastSeq);
      // Swap in the segment and the empty head in one synchronous step: no read sees neither.
      this.segments = [...this.segments, this.openSegment(gen, path)];
      this.clearHead();
    });
    return n;
  }

  /** Deletes whole segments whose newest document is older than now − retention. */
  applyRetention(nowMs: number, retentionMs: number): number {
    if (retentionMs <= 0) return 0;
    const cutoff = BigInt(Math.floor(nowMs - retentionMs)) * 1_000_000n;
    const { kept, expired } = dropExpiredSegments(this.segments, (s) => this.newestNs(s), cutoff, this.cache, CLOSE_DELAY_MS);
    if (expired > 0) this.segments = kept;
    return expired;
  }

  /**
   * Merges small segments per `policy` (see segment-merge.ts) until nothing qualifies; returns
   * the merges done. Runs beside appends, flushes and queries: only the swap is synchronous.
   */
  mergeSegments(policy: MergePolicy): Promise<number> {
    return this.merger.run(async () => {
      let done = 0;
      for (;;) {
        if (this.merger.stopped) return done;
        const group = planMerge(
          this.segments
            .filter((seg) => this.merger.eligible(seg))
            .map((seg) => ({ seg, gen: seg.gen, bytes: seg.file.size, newestNs: this.newestNs(seg) })),
          policy,
        );
        if (!group) return done;
        const inputs = group.map((g) => g.seg);
        try {
          await this.mergeGroup(inputs);
          done++;
        } catch (e) {
          if (e instanceof MergeAbandoned) return done;
          this.merger.fail(inputs);
          this.baseOpts.logger.error(`${this.spec.kind} segment merge failed; its inputs are left as they are`, {
            inputs: inputs.map((s) => s.file.path),
            err: e,
          });
        }
      }
    });
  }

  /** Stops background merging (a merge in progress is abandoned at its next yield). */
  stopMerging(): Promise<void> {
    return this.merger.stop();
  }

  private async mergeGroup(inputs: Seg[]): Promise<void> {
    inputs.sort((a, b) => a.gen - b.gen);
    const target = inputs[inputs.length - 1]!;
    const started = performance.now();
    const check = () => {
      if (this.merger.stopped) throw new MergeAbandoned('store closing');
      const live = new Set(this.segments);
      if (!inputs.every((s) => live.has(s))) throw new MergeAbandoned('an input segment was removed');
    };
    // The merged file is renamed over the newest input and lists what it covers (crash safety).
    const file = new AtomicFile(target.file.path);
    try {
      const lastSeq = Math.max(...inputs.map((s) => s.index.lastSeq));
      const covers = coverOf(inputs.map((s) => ({ gen: s.gen, covers: readCovers(s.index.covers) })));
      await this.writeMerged(inputs, new DocSegmentWriter(file, this.magic), lastSeq, covers, async () => {
        await yieldToLoop();
        check();
      });
      file.sync();
      // Synchronous from here to the swap: no query, flush or retention interleaves.
      check();
      file.publish();
      const merged = this.openSegment(target.gen, target.file.path);
      const gone = new Set(inputs);
      this.segments = [...this.segments.filter((s) => !gone.has(s)), merged].sort((a, b) => a.gen - b.gen);
      for (const s of inputs) {
        this.cache.dropPrefix(s.cachePrefix);
        if (s !== target) rmSync(s.file.path, { force: true });
        // Queries that started before the swap may still read the inputs.
        setTimeout(() => s.close(), CLOSE_DELAY_MS).unref();
      }
      this.baseOpts.logger.info(`merged ${this.spec.kind} segments`, {
        inputs: inputs.length,
        bytes: merged.file.size,
        ms: Math.round(performance.now() - started),
      });
    } catch (e) {
      file.abort();
      throw e;
    }
  }

  /** Bytes on disk: segments plus WAL. */
  bytes(): number {
    let n = this.wal.walBytes;
    for (const s of this.segments) n += s.file.size;
    return n;
  }

  flush(): Promise<void> {
    return this.wal.flush();
  }

  async close(opts: { flushHead: boolean }): Promise<void> {
    await this.merger.stop();
    await this.wal.idle();
    if (opts.flushHead) await this.wal.serial(() => this.flushHead());
    await this.wal.close();
    for (const s of this.segments) s.close();
    this.segments = [];
  }
}
