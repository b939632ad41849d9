/**
 * Persistence for signals kept wholly in memory (spans and events, small next to logs and
 * samples): a WAL of msgpack batches, flushed into compressed segment files that carry the WAL
 * cut (last seq) so a crash between segment write and WAL deletion never duplicates records.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Logger } from '../../kernel/logger.js';
import { writeFileAtomic } from './files.js';
import { pack, unpack } from './pack.js';
import { Wal, type FsyncPolicy } from './wal.js';

export interface DocEntry<T> {
  doc: T;
  seq: number;
  /** Segment generation holding it; 0 while only in the WAL. */
  gen: number;
}

export interface DocStoreOptions {
  dir: string;
  name: string;
  fsync: FsyncPolicy;
  fsyncIntervalMs: number;
  logger: Logger;
  maxHeadDocs?: number;
}

interface SegmentFile<T> {
  lastSeq: number;
  docs: Array<[number, T]>;
}

const segName = (gen: number) => String(gen).padStart(10, '0') + '.dseg';

export class DocLog<T> {
  private wal!: Wal;
  private seq = 0;
  private nextGen = 1;
  private head: DocEntry<T>[] = [];
  /** Live segments: gen → [entries, time bound]. */
  private readonly segments = new Map<number, { maxTs: bigint; entries: DocEntry<T>[]; bytes: number }>();
  private chain: Promise<unknown> = Promise.resolve();
  private readonly segDir: string;

  constructor(
    private readonly opts: DocStoreOptions,
    private readonly timeOf: (doc: T) => bigint,
    private readonly onAdd: (e: DocEntry<T>) => void,
    private readonly onRemove: (es: readonly DocEntry<T>[]) => void,
  ) {
    this.segDir = join(opts.dir, 'segments');
  }

  open(): void {
    mkdirSync(this.segDir, { recursive: true });
    const files = readdirSync(this.segDir);
    for (const f of files) if (f.endsWith('.tmp')) rmSync(join(this.segDir, f), { force: true });
    let persisted = 0;
    for (const gen of files.filter((f) => /^\d{10}\.dseg$/.test(f)).map((f) => Number(f.slice(0, 10))).sort((a, b) => a - b)) {
      const path = join(this.segDir, segName(gen));
      try {
        const raw = readFileSync(path);
        const file = unpack<SegmentFile<T>>(inflateRawSync(raw));
        const entries = file.docs.map(([seq, doc]) => ({ doc, seq, gen }));
        this.addSegment(gen, entries, raw.length);
        for (const e of entries) this.onAdd(e);
        if (file.lastSeq > persisted) persisted = file.lastSeq;
        if (file.lastSeq > this.seq) this.seq = file.lastSeq;
      } catch (e) {
        this.opts.logger.error(`${this.opts.name} segment unreadable; skipped`, { path, err: e });
      }
      this.nextGen = gen + 1;
    }
    const { wal } = Wal.open(
      { dir: join(this.opts.dir, 'wal'), fsync: this.opts.fsync, fsyncIntervalMs: this.opts.fsyncIntervalMs, logger: this.opts.logger, name: this.opts.name },
      (payload) => {
        const [first, docs] = unpack<[number, T[]]>(payload);
        let seq = first;
        for (const doc of docs) {
          seq++;
          if (seq <= persisted) continue;
          const e = { doc, seq, gen: 0 };
          this.head.push(e);
          this.onAdd(e);
          if (seq > this.seq) this.seq = seq;
        }
      },
    );
    this.wal = wal;
  }

  private addSegment(gen: number, entries: DocEntry<T>[], bytes: number): void {
    let maxTs = -(2n ** 63n);
    for (const e of entries) {
      const t = this.timeOf(e.doc);
      if (t > maxTs) maxTs = t;
    }
    this.segments.set(gen, { maxTs, entries, bytes });
  }

  append(docs: readonly T[]): Promise<void> {
    if (docs.length === 0) return Promise.resolve();
    const payload = pack([this.seq, docs]);
    for (const doc of docs) {
      const e = { doc, seq: ++this.seq, gen: 0 };
      this.head.push(e);
      this.onAdd(e);
    }
    const done = this.wal.append(payload);
    if (this.head.length >= (this.opts.maxHeadDocs ?? 200_000)) void this.serial(() => this.flushHead());
    return done;
  }

  serial<R>(fn: () => Promise<R> | R): Promise<R> {
    const p = this.chain.then(fn, fn);
    this.chain = p.catch((e) => this.opts.logger.error(`${this.opts.name} maintenance failed`, { err: e }));
    return p;
  }

  async flushHead(): Promise<number> {
    if (this.head.length === 0) return 0;
    const cut = this.wal.rotate();
    const entries = this.head;
    this.head = [];
    const gen = this.nextGen++;
    const body = deflateRawSync(pack({ lastSeq: this.seq, docs: entries.map((e) => [e.seq, e.doc]) } satisfies SegmentFile<T>));
    writeFileAtomic(join(this.segDir, segName(gen)), [body]);
    for (const e of entries) e.gen = gen;
    this.addSegment(gen, entries, body.length);
    await this.wal.removeBefore(cut);
    return entries.length;
  }

  /** Deletes segments whose newest record is older than the cutoff. */
  applyRetention(nowMs: number, retentionMs: number): number {
    if (retentionMs <= 0) return 0;
    const cutoff = BigInt(Math.floor(nowMs - retentionMs)) * 1_000_000n;
    let n = 0;
    for (const [gen, s] of [...this.segments]) {
      if (s.maxTs >= cutoff) continue;
      rmSync(join(this.segDir, segName(gen)), { force: true });
      this.segments.delete(gen);
      this.onRemove(s.entries);
      n++;
    }
    return n;
  }

  bytes(): number {
    let b = this.wal.bytes;
    for (const s of this.segments.values()) b += s.bytes;
    return b;
  }

  async flush(): Promise<void> {
    await this.wal.flush();
  }

  async close(opts: { flushHead: boolean }): Promise<void> {
    await this.chain;
    if (opts.flushHead) await this.serial(() => this.flushHead());
    await this.wal.close();
  }
}
