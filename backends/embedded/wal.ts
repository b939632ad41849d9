/**
 * A write-ahead log: numbered files of checksummed records with group commit.
 *
 * Framing: `[u32 length][u32 crc32(payload)][payload]`, little-endian. Appends queued while a
 * write is in flight are written together (group commit). With fsync `always` an append resolves
 * after fdatasync; with `interval` it resolves once the bytes are handed to the OS (they survive
 * a process kill) and a timer fdatasyncs at most `fsyncIntervalMs` later (bounding what a power
 * loss can take). On open, a torn or corrupt tail is truncated at the last good record.
 */
import { closeSync, fdatasync, fdatasyncSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, write, writev } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Logger } from '../../kernel/logger.js';

export type FsyncPolicy = 'always' | 'interval';

export interface WalOptions {
  dir: string;
  fsync: FsyncPolicy;
  fsyncIntervalMs: number;
  logger: Logger;
  /** Signal name for log lines. */
  name: string;
}

const HEADER = 8;
const fileName = (n: number) => String(n).padStart(8, '0') + '.wal';

interface Pending {
  kind: 'data';
  /** The payload, or its parts in order (one record, written without joining them). */
  buf: Uint8Array | readonly Uint8Array[];
  resolve: () => void;
  reject: (e: Error) => void;
}
interface RotateMarker {
  kind: 'rotate';
  file: number;
  resolve: () => void;
}

export interface ReplayStats {
  files: number;
  records: number;
  bytes: number;
  droppedBytes: number;
}

export class Wal {
  private fd = -1;
  private fileNo = 0;
  /** The file the next appended record lands in (ahead of fileNo while a rotation is queued). */
  private target = 0;
  private queue: Array<Pending | RotateMarker> = [];
  private writing = false;
  private dirty = false;
  private syncing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private lastRotation: Promise<void> = Promise.resolve();
  /** Bytes in WAL files on disk (approximate while writes are in flight). */
  bytes = 0;
  private frame = Buffer.allocUnsafe(HEADER);

  private constructor(private readonly opts: WalOptions) {}

  /** Replays every record in order through `onRecord`, repairs the tail, opens a fresh file. */
  static open(opts: WalOptions, onRecord: (payload: Buffer, file: number) => void): { wal: Wal; stats: ReplayStats } {
    mkdirSync(opts.dir, { recursive: true });
    const wal = new Wal(opts);
    const stats = wal.replay(onRecord);
    wal.openFile(wal.fileNo + 1);
    if (opts.fsync === 'interval') {
      wal.timer = setInterval(() => void wal.sync().catch(() => undefined), opts.fsyncIntervalMs);
      wal.timer.unref();
    }
    return { wal, stats };
  }

  /** Number of the file appends currently go to. */
  get currentFile(): number {
    return this.target;
  }

  private files(): number[] {
    return readdirSync(this.opts.dir)
      .filter((f) => /^\d{8}\.wal$/.test(f))
      .map((f) => Number(f.slice(0, 8)))
      .sort((a, b) => a - b);
  }

  private replay(onRecord: (payload: Buffer, file: number) => void): ReplayStats {
    const stats: ReplayStats = { files: 0, records: 0, bytes: 0, droppedBytes: 0 };
    const files = this.files();
    let corruptAt = -1;
    for (let i = 0; i < files.length; i++) {
      const n = files[i]!;
      this.fileNo = n;
      const path = join(this.opts.dir, fileName(n));
      if (corruptAt >= 0) {
        // Everything after a corrupt record was written after it: never acknowledged safely.
        const size = statSync(path).size;
        stats.droppedBytes += size;
        rmSync(path, { force: true });
        continue;
      }
      const buf = readFileSync(path);
      stats.files++;
      let pos = 0;
      while (pos < buf.length) {
        if (pos + HEADER > buf.length) break;
        const len = buf.readUInt32LE(pos);
        const sum = buf.readUInt32LE(pos + 4);
        if (pos + HEADER + len > buf.length) break;
        const payload = buf.subarray(pos + HEADER, pos + HEADER + len);
        if (crc32(payload) !== sum) break;
        try {
          onRecord(payload, n);
        } catch (e) {
          // A checksummed but undecodable record is a bug, not a torn write; stop here too.
          this.opts.logger.error('wal record could not be applied', { signal: this.opts.name, file: fileName(n), offset: pos, err: e });
          break;
        }
        stats.records++;
        pos += HEADER + len;
      }
      stats.bytes += pos;
      if (pos < buf.length) {
        corruptAt = n;
        stats.droppedBytes += buf.length - pos;
        const fd = openSync(path, 'r+');
        ftruncateSync(fd, pos);
        fdatasyncSync(fd);
        closeSync(fd);
      }
    }
    if (stats.droppedBytes > 0) {
      this.opts.logger.warn('wal: truncated a torn or corrupt tail', {
        signal: this.opts.name,
        file: corruptAt >= 0 ? fileName(corruptAt) : undefined,
        droppedBytes: stats.droppedBytes,
        keptRecords: stats.records,
      });
    }
    this.bytes = stats.bytes;
    return stats;
  }

  private openFile(n: number): void {
    this.fileNo = n;
    if (n > this.target) this.target = n;
    this.fd = openSync(join(this.opts.dir, fileName(n)), 'a');
  }

  /**
   * Queues a record; resolves when it is written (and fsynced when the policy is `always`). The
   * payload may be given as parts (written back to back as one record, never joined in memory);
   * its bytes must not change until the promise settles.
   */
  append(payload: Uint8Array | readonly Uint8Array[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error('storage is closed'));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ kind: 'data', buf: payload, resolve, reject });
      if (!this.writing) {
        this.writing = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  /**
   * Makes later appends go to a new file; returns its number. Records appended before the call
   * stay in earlier files, which {@link removeBefore} deletes once they are persisted elsewhere.
   */
  rotate(): number {
    const next = ++this.target;
    this.lastRotation = new Promise<void>((resolve) => {
      this.queue.push({ kind: 'rotate', file: next, resolve });
    });
    if (!this.writing) {
      this.writing = true;
      setImmediate(() => void this.drain());
    }
    return next;
  }

  /** Deletes WAL files numbered below `file` (after the rotation to it completed). */
  async removeBefore(file: number): Promise<void> {
    await this.lastRotation;
    for (const n of this.files()) {
      if (n >= file || n === this.fileNo) continue;
      const path = join(this.opts.dir, fileName(n));
      try {
        this.bytes -= statSync(path).size;
      } catch {
        /* already gone */
      }
      rmSync(path, { force: true });
    }
    if (this.bytes < 0) this.bytes = 0;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      if (head.kind === 'rotate') {
        this.queue.shift();
        await this.sync();
        closeSync(this.fd);
        this.openFile(head.file);
        head.resolve();
        continue;
      }
      let n = 0;
      let size = 0;
      while (n < this.queue.length && this.queue[n]!.kind === 'data' && size < 64 << 20) {
        size += HEADER + payloadLength((this.queue[n] as Pending).buf);
        n++;
      }
      const batch = this.queue.splice(0, n) as Pending[];
      // One header buffer for the batch; payloads are written from where they are (writev), not
      // copied into one buffer first.
      const headers = Buffer.allocUnsafe(HEADER * batch.length);
      const iov: Uint8Array[] = [];
      for (let i = 0; i < batch.length; i++) {
        const b = batch[i]!.buf;
        const h = i * HEADER;
        headers.writeUInt32LE(payloadLength(b), h);
        iov.push(headers.subarray(h, h + HEADER));
        if (b instanceof Uint8Array) {
          headers.writeUInt32LE(crc32(b), h + 4);
          iov.push(b);
        } else {
          let sum = 0;
          for (const part of b) {
            sum = crc32(part, sum);
            iov.push(part);
          }
          headers.writeUInt32LE(sum, h + 4);
        }
      }
      try {
        await writeAllv(this.fd, iov, size);
        this.bytes += size;
        this.dirty = true;
        if (this.opts.fsync === 'always') await this.sync();
        for (const p of batch) p.resolve();
      } catch (e) {
        for (const p of batch) p.reject(e as Error);
      }
    }
    this.writing = false;
  }

  /** fdatasyncs the current file if anything was written since the last sync. */
  sync(): Promise<void> {
    if (this.syncing) return this.syncing.then(() => (this.dirty ? this.sync() : undefined));
    if (!this.dirty || this.fd < 0) return Promise.resolve();
    this.dirty = false;
    const fd = this.fd;
    this.syncing = new Promise<void>((resolve, reject) => {
      fdatasync(fd, (err) => {
        this.syncing = undefined;
        if (err) {
          this.dirty = true;
          reject(err);
        } else resolve();
      });
    });
    return this.syncing;
  }

  /** Waits for queued appends, then fsyncs. */
  async flush(): Promise<void> {
    while (this.writing || this.queue.length > 0) await new Promise((r) => setImmediate(r));
    await this.sync();
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

function payloadLength(b: Uint8Array | readonly Uint8Array[]): number {
  if (b instanceof Uint8Array) return b.length;
  let n = 0;
  for (const part of b) n += part.length;
  return n;
}

/** Writes the buffers back to back; a short write continues with what is left. */
function writeAllv(fd: number, iov: Uint8Array[], total: number): Promise<void> {
  return new Promise((resolve, reject) => {
    writev(fd, iov, null, (err, n) => {
      if (err) return reject(err);
      if (n >= total) return resolve();
      // Rare: join what was not written and finish with plain writes.
      const rest = Buffer.concat(iov, total).subarray(n);
      writeAll(fd, rest).then(resolve, reject);
    });
  });
}

function writeAll(fd: number, buf: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    let off = 0;
    const step = () => {
      write(fd, buf, off, buf.length - off, null, (err, n) => {
        if (err) return reject(err);
        off += n;
        if (off < buf.length) step();
        else resolve();
      });
    };
    step();
  });
}
