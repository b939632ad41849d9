/**
 * The container shared by span and event segment files: deflated blocks, then an index, then a
 * checksummed footer. Opening reads only the footer and the index; blocks are read on demand.
 *
 *   magic(8) | block bytes ... | index (msgpack) | f64 indexOffset | u32 indexLength | u32 crc32(index) | end(8)
 */
import { closeSync, fstatSync, openSync, readSync, rmSync } from 'node:fs';
import { crc32, deflateRawSync, inflateRawSync } from 'node:zlib';
import { join } from 'node:path';
import { AtomicFile } from './files.js';
import { readCovers, supersededGens, type GenRanges } from './segment-merge.js';
import { pack, unpack } from './pack.js';

const FOOTER = 24;

/** Where a block lives in its file. */
export interface BlockRef {
  off: number;
  len: number;
  /** Uncompressed length (a proxy for decoded size in the cache). */
  raw: number;
}

/**
 * Writes a segment atomically. `blocks` are uncompressed payloads; `index` receives their
 * positions and returns the index object to store. Returns the file size.
 */
export function writeDocSegment<I>(path: string, magic: string, blocks: readonly Uint8Array[], index: (refs: BlockRef[]) => I): number {
  const file = new AtomicFile(path);
  try {
    const w = new DocSegmentWriter(file, magic);
    const refs = blocks.map((b) => w.add(b));
    w.finish(index(refs));
  } catch (e) {
    file.abort();
    throw e;
  }
  return file.commit();
}

/**
 * Writes a segment block by block into `out` (a merge adds blocks as it produces them and
 * yields in between); `finish` appends the index and the footer.
 */
export class DocSegmentWriter {
  private pos = 8;

  constructor(
    private readonly out: { write(b: Uint8Array): void },
    private readonly magic: string,
  ) {
    out.write(Buffer.from(magic.slice(0, 8).padEnd(8, '0')));
  }

  /** Deflates and appends one block; returns where it went. */
  add(b: Uint8Array): BlockRef {
    const z = deflateRawSync(b, { level: 6 });
    const ref = { off: this.pos, len: z.length, raw: b.length };
    this.out.write(z);
    this.pos += z.length;
    return ref;
  }

  finish(index: unknown): void {
    const idx = pack(index);
    const footer = Buffer.alloc(FOOTER);
    footer.writeDoubleLE(this.pos, 0);
    footer.writeUInt32LE(idx.length, 8);
    footer.writeUInt32LE(crc32(idx), 12);
    Buffer.from(endOf(this.magic)).copy(footer, 16);
    this.out.write(idx);
    this.out.write(footer);
  }
}

const endOf = (magic: string) => magic.slice(0, 3) + 'END' + magic.slice(6, 8);

/** An open segment file: its index, and block reads by position. */
export class DocSegmentFile<I> {
  private fd: number;
  readonly index: I;
  readonly size: number;

  constructor(
    readonly path: string,
    magic: string,
  ) {
    this.fd = openSync(path, 'r');
    try {
      this.size = fstatSync(this.fd).size;
      if (this.size < 8 + FOOTER) throw new Error('segment too short');
      const head = this.read(0, 8);
      if (head.toString('latin1') !== magic) throw new Error('bad segment magic');
      const footer = this.read(this.size - FOOTER, FOOTER);
      if (footer.toString('latin1', 16, 24) !== endOf(magic)) throw new Error('bad segment footer');
      const off = footer.readDoubleLE(0);
      const len = footer.readUInt32LE(8);
      if (off + len + FOOTER !== this.size) throw new Error('bad segment index position');
      const idx = this.read(off, len);
      if (crc32(idx) !== footer.readUInt32LE(12)) throw new Error('segment index checksum mismatch');
      this.index = unpack<I>(idx);
    } catch (e) {
      closeSync(this.fd);
      throw e;
    }
  }

  private read(off: number, len: number): Buffer {
    const buf = Buffer.allocUnsafe(len);
    let n = 0;
    while (n < len) {
      const r = readSync(this.fd, buf, n, len - n, off + n);
      if (r === 0) throw new Error('unexpected end of segment');
      n += r;
    }
    return buf;
  }

  /** The uncompressed payload of a block. */
  block(ref: BlockRef): Buffer {
    return inflateRawSync(this.read(ref.off, ref.len));
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

/** Name of segment generation `gen` with extension `ext` (e.g. `0000000042.tseg`). */
export function segmentFileName(gen: number, ext: string): string {
  return String(gen).padStart(10, '0') + '.' + ext;
}

export interface OpenedSegments<S> {
  segments: S[];
  /** Highest sequence number already in a segment (the WAL replays what comes after). */
  persisted: number;
  /** Next free generation number. */
  nextGen: number;
}

/**
 * Opens every `<10 digits>.<ext>` segment among `files`, oldest first. An unreadable segment is
 * logged and skipped rather than failing the start.
 */
export function openSegmentFiles<S extends { gen: number; index: { lastSeq: number; covers?: GenRanges }; close(): void }>(
  dir: string,
  files: readonly string[],
  ext: string,
  open: (gen: number, path: string) => S,
  logger: { error(msg: string, fields?: Record<string, unknown>): void; info?(msg: string, fields?: Record<string, unknown>): void },
  kind: string,
): OpenedSegments<S> {
  const pattern = /^\d{10}\.[a-z]+$/;
  const gens = files
    .filter((f) => pattern.test(f) && f.endsWith('.' + ext))
    .map((f) => Number(f.slice(0, 10)))
    .sort((a, b) => a - b);
  const out: OpenedSegments<S> = { segments: [], persisted: 0, nextGen: 1 };
  for (const gen of gens) {
    const path = join(dir, segmentFileName(gen, ext));
    try {
      const seg = open(gen, path);
      out.segments.push(seg);
      if (seg.index.lastSeq > out.persisted) out.persisted = seg.index.lastSeq;
    } catch (e) {
      logger.error(`${kind} segment unreadable; skipped`, { path, err: e });
    }
    out.nextGen = gen + 1;
  }
  // Inputs of a merge that a crash left next to its output (see segment-merge.ts): the output
  // has every record they hold.
  const gone = supersededGens(gens, out.segments.map((s) => ({ gen: s.gen, covers: readCovers(s.index.covers) })));
  if (gone.size > 0) {
    for (const s of out.segments) if (gone.has(s.gen)) s.close();
    out.segments = out.segments.filter((s) => !gone.has(s.gen));
    for (const gen of gone) rmSync(join(dir, segmentFileName(gen, ext)), { force: true });
    logger.info?.(`removed ${kind} segments replaced by a merge`, { gens: [...gone] });
  }
  return out;
}

/**
 * Retention for segment lists: removes segments whose newest timestamp (ns) is before `cutoffNs`,
 * deletes their files, drops their cached blocks and closes them after `closeDelayMs` (a scan that
 * already holds one may still be reading it). Returns the segments to keep and how many went.
 */
export function dropExpiredSegments<S extends { cachePrefix: string; file: { path: string }; close(): void }>(
  segments: readonly S[],
  newestNs: (s: S) => bigint,
  cutoffNs: bigint,
  cache: { dropPrefix(prefix: string): void },
  closeDelayMs: number,
): { kept: S[]; expired: number } {
  const kept: S[] = [];
  let expired = 0;
  for (const s of segments) {
    if (newestNs(s) >= cutoffNs) {
      kept.push(s);
      continue;
    }
    expired++;
    rmSync(s.file.path, { force: true });
    cache.dropPrefix(s.cachePrefix);
    setTimeout(() => s.close(), closeDelayMs).unref();
  }
  return { kept, expired };
}
