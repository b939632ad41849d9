/**
 * The `fs` archive source: an archive is a directory (config `path`, relative to the working
 * directory; default `<dataDir>/archives/<name>`) laid out as OPERATIONS.md "Archive layout".
 */
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import type { ArchiveConfig } from '../../kernel/config.js';
import type { Archive, ArchiveObject } from '../../kernel/extension-points.js';
import { definePlugin } from '../../kernel/plugin.js';
import { OBJECT_SUFFIX, hourPartition } from './layout.js';
import { stat } from 'node:fs/promises';

export class FsArchive implements Archive {
  private tmpSeq = 0;
  constructor(
    readonly name: string,
    readonly root: string,
  ) {}

  async *listHour(hourStartMs: number): AsyncIterable<ArchiveObject> {
    const part = hourPartition(hourStartMs);
    const dir = join(this.root, part);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (e) {
      // A missing partition is an hour with no data, not an error.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    for (const n of names.filter((x) => x.endsWith(OBJECT_SUFFIX)).sort()) {
      const st = await stat(join(dir, n)).catch(() => undefined);
      if (st?.isFile()) yield { key: part + n, size: st.size };
    }
  }

  async read(key: string): Promise<Readable> {
    const file = this.pathOf(key);
    const stream = createReadStream(file);
    // Surface ENOENT and friends as a rejected promise rather than a late stream error.
    await new Promise<void>((res, rej) => {
      stream.once('open', () => res());
      stream.once('error', rej);
    });
    return stream;
  }

  async write(key: string, body: Buffer): Promise<void> {
    const file = this.pathOf(key);
    await mkdir(dirname(file), { recursive: true });
    // Write then rename, so a reader never sees a half-written object.
    const tmp = `${file}.tmp-${process.pid}-${++this.tmpSeq}`;
    await writeFile(tmp, body);
    await rename(tmp, file);
  }

  /** Resolves a key inside the root; keys that escape it are refused. */
  private pathOf(key: string): string {
    const file = resolve(this.root, key);
    if (!file.startsWith(this.root + sep)) throw new Error(`archive key "${key}" is outside the archive`);
    return file;
  }
}

export function openFsArchive(cfg: ArchiveConfig, dataDir: string): FsArchive {
  const base = cfg.path
    ? isAbsolute(cfg.path)
      ? cfg.path
      : resolve(process.cwd(), cfg.path)
    : resolve(dataDir, 'archives', cfg.name);
  return new FsArchive(cfg.name, resolve(base));
}

export default definePlugin({
  name: 'archive-fs',
  description: 'Filesystem archive source (a directory in the archive layout).',
  register(ctx) {
    ctx.extensions.archiveSource({ type: 'fs', open: (cfg, { dataDir }) => openFsArchive(cfg, dataDir) });
  },
});
