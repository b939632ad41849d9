/** Crash-safe file helpers: a file becomes visible under its name only once fully on disk. */
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Writes `parts` to `path` atomically: temp file, fsync, rename, fsync of the directory. */
export function writeFileAtomic(path: string, parts: readonly Uint8Array[]): number {
  const tmp = path + '.tmp';
  const fd = openSync(tmp, 'w');
  let size = 0;
  try {
    for (const p of parts) {
      let off = 0;
      while (off < p.length) off += writeSync(fd, p, off, p.length - off);
      size += p.length;
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  syncDir(dirname(path));
  return size;
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
