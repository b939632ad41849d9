/**
 * The write-ahead side of the document signals (spans, events): a WAL of msgpack batches that
 * numbers every document with a sequence. Segment files record the last sequence they hold, so
 * a crash between writing a segment and deleting the WAL files it covers never duplicates
 * records on replay: documents at or below the persisted sequence are skipped.
 */
import { join } from 'node:path';
import type { Logger } from '../../kernel/logger.js';
import { pack, unpack } from './pack.js';
import { Wal, type FsyncPolicy } from './wal.js';

export interface DocStoreOptions {
  dir: string;
  name: string;
  fsync: FsyncPolicy;
  fsyncIntervalMs: number;
  logger: Logger;
}

export class DocWal<T> {
  private wal: Wal | undefined;
  /** The last sequence assigned. */
  seq = 0;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: DocStoreOptions) {}

  /** Replays documents newer than `persistedSeq` (what segments already hold) through `onDoc`. */
  open(persistedSeq: number, onDoc: (doc: T, seq: number) => void): { replayed: number } {
    this.seq = persistedSeq;
    let replayed = 0;
    const { wal } = Wal.open(
      { dir: join(this.opts.dir, 'wal'), fsync: this.opts.fsync, fsyncIntervalMs: this.opts.fsyncIntervalMs, logger: this.opts.logger, name: this.opts.name },
      (payload) => {
        const [first, docs] = unpack<[number, T[]]>(payload);
        let seq = first;
        for (const doc of docs) {
          seq++;
          if (seq <= persistedSeq) continue;
          onDoc(doc, seq);
          replayed++;
          if (seq > this.seq) this.seq = seq;
        }
      },
    );
    this.wal = wal;
    return { replayed };
  }

  /**
   * Numbers `docs` (the first gets `seq + 1`), hands each to `onDoc` at once (reads see it
   * immediately) and resolves when the batch is durable per the fsync policy.
   */
  append(docs: readonly T[], onDoc: (doc: T, seq: number) => void): Promise<void> {
    if (!this.wal) return Promise.reject(new Error(`${this.opts.name} store is not open`));
    if (docs.length === 0) return Promise.resolve();
    const payload = pack([this.seq, docs]);
    for (const doc of docs) onDoc(doc, ++this.seq);
    return this.wal.append(payload);
  }

  /**
   * Moves what the head holds into a segment: rotates the WAL, runs `write(lastSeq)` (which
   * must write the segment synchronously, so no append interleaves), then deletes the WAL
   * files the segment covers.
   */
  async checkpoint(write: (lastSeq: number) => void): Promise<void> {
    const wal = this.wal!;
    const cut = wal.rotate();
    write(this.seq);
    await wal.removeBefore(cut);
  }

  /** Runs maintenance one at a time (flushes, retention). */
  serial<R>(fn: () => Promise<R> | R): Promise<R> {
    const p = this.chain.then(fn, fn);
    this.chain = p.catch((e) => this.opts.logger.error(`${this.opts.name} maintenance failed`, { err: e }));
    return p;
  }

  get walBytes(): number {
    return this.wal?.bytes ?? 0;
  }

  async flush(): Promise<void> {
    await this.wal?.flush();
  }

  async idle(): Promise<void> {
    await this.chain;
  }

  async close(): Promise<void> {
    await this.chain;
    await this.wal?.close();
  }
}
