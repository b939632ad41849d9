/** Crash-safe file helpers: a file becomes visible under its name only once fully on disk. */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Writes `parts` to `path` atomically: temp file, fsync, rename, fsync of the directory. */
export function writeFileAtomic(path: string, parts: readonly Uint8Array[]): number {
  const f = new AtomicFile(path);
  try {
    for (const p of parts) f.write(p);
  } catch (e) {
    f.abort();
    throw e;
  }
  return f.commit();
}

/**
 * A file written piece by piece into `<path>.tmp` (so a long write, e.g. a segment merge, can
 * yield between pieces) that appears under `path` only at `commit`: fsync, rename, fsync of the
 * directory. `abort` removes the temp file.
 */
export class AtomicFile {
  readonly tmp: string;
  private fd: number;
  size = 0;

  constructor(readonly path: string) {
    this.tmp = path + '.tmp';
    this.fd = openSync(this.tmp, 'w');
  }

  write(p: Uint8Array): void {
    let off = 0;
    while (off < p.length) off += writeSync(this.fd, p, off, p.length - off);
    this.size += p.length;
  }

  /** Makes the file durable under its temp name (before a rename that must not expose a partial file). */
  sync(): void {
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = -1;
  }

  /** Renames the (synced) temp file over `path`. */
  publish(): void {
    if (this.fd >= 0) this.sync();
    renameSync(this.tmp, this.path);
    syncDir(dirname(this.path));
  }

  commit(): number {
    try {
      this.sync();
    } catch (e) {
      this.abort();
      throw e;
    }
    this.publish();
    return this.size;
  }

  abort(): void {
    if (this.fd >= 0) {
      try {
        closeSync(this.fd);
      } catch {
        /* already closed */
      }
      this.fd = -1;
    }
    rmSync(this.tmp, { force: true });
  }
}

export function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    /* some filesystems refuse fsync on directories; the rename is still atomic */
  }
}
