/**
 * Upgrade path for data directories written before span/event segments existed: `.dseg` files
 * (one deflated msgpack `{ lastSeq, docs: [seq, doc][] }` per head flush, loaded whole into
 * memory). On open each is rewritten in the current format by the caller and then deleted, so
 * the upgrade is crash-safe: a crash before the delete converts the file again, and the new
 * segment of the same generation simply replaces the earlier copy.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import type { Logger } from '../../kernel/logger.js';
import { unpack } from './pack.js';

interface LegacyFile<T> {
  lastSeq: number;
  docs: Array<[number, T]>;
}

/**
 * Calls `convert(gen, docs, lastSeq)` for each legacy segment in `segDir` (oldest first), then
 * deletes it. `convert` must write the replacement durably before returning.
 */
export function upgradeLegacySegments<T>(segDir: string, logger: Logger, convert: (gen: number, docs: Array<[number, T]>, lastSeq: number) => void): number {
  const gens = readdirSync(segDir)
    .filter((f) => /^\d{10}\.dseg$/.test(f))
    .map((f) => Number(f.slice(0, 10)))
    .sort((a, b) => a - b);
  for (const gen of gens) {
    const path = join(segDir, String(gen).padStart(10, '0') + '.dseg');
    try {
      const file = unpack<LegacyFile<T>>(inflateRawSync(readFileSync(path)));
      convert(gen, file.docs, file.lastSeq);
      rmSync(path, { force: true });
      logger.info('converted a legacy segment', { path, docs: file.docs.length });
    } catch (e) {
      logger.error('legacy segment unreadable; left in place', { path, err: e });
    }
  }
  return gens.length;
}
