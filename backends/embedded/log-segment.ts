/**
 * Immutable log segment files: blocks of up to 8,192 records sorted by (timestamp, seq), each
 * stored as deflated columns (timestamps as deltas, seqs, stream ids, messages, facets),
 * followed by an index with per-block time/seq bounds, the streams present (with their record
 * counts, so label-only counts need no column at all) and a trigram bloom filter of the messages.
 * Facets are written one msgpack value per record (format 1) so a reader decodes only the
 * records it returns; format-0 segments (one msgpack array per block) still read.
 *
 *   "LKLSEG01" | column bytes ... | index (msgpack) | f64 indexOffset | u32 indexLength | u32 crc32 | "LKLEND01"
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { promisify } from 'node:util';
import { crc32, deflateRaw, deflateRawSync, inflateRaw, inflateRawSync, type ZlibOptions } from 'node:zlib';

const inflateRawAsync = promisify(inflateRaw);
import type { FacetValue, Labels } from '../../kernel/models.js';
import { bloomOf } from './bloom.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { pack, unpack } from './pack.js';
import { readCovers, type GenRanges } from './segment-merge.js';

const MAGIC = Buffer.from('LKLSEG01');
const END = Buffer.from('LKLEND01');
const FOOTER = 24;
export const BLOCK_RECORDS = 8192;
/** Records per separately deflated page of the message and facets columns. */
export const PAGE_ROWS = 64;

export type Facets = Readonly<Record<string, FacetValue>>;

/** Decoded columns of a block (stream ids are global). */
export interface LogColumns {
  n: number;
  ts: BigInt64Array;
  seq: Float64Array;
  stream: Uint32Array;
  msg: string[];
  facets: (Facets | null)[];
  /**
   * When set, writes record i's `str(msg) + uvar(len) + msgpack(facets)` (len 0: none) and
   * supersedes msg/facets for the record pages (the log head copies its WAL bytes; msg still
   * feeds the bloom).
   */
  writeRecord?: (i: number, w: ByteWriter) => void;
}

export interface BlockMeta {
  n: number;
  minTs: bigint;
  maxTs: bigint;
  minSeq: number;
  maxSeq: number;
  /** Global stream ids present, ascending. */
  streams: Uint32Array;
  /** Records per stream, parallel to `streams` (null in segments written before counts were kept). */
  counts: Uint32Array | null;
  bloom: Uint8Array;
  /** Facets column format: 0 = one msgpack array, 1 = per-record length-prefixed msgpack. */
  fv: number;
  /** Inflated size of each column (null in older files), so inflating is one allocation. */
  raw: number[] | null;
  /** Start offsets (relative to the column) of the PAGE_ROWS-record pages of messages and facets, plus the end; null = unpaged. */
  pages: [Float64Array, Float64Array] | null;
  /** Record pages: message and facets of a record in the same page of column 3. */
  recordPages: boolean;
  /** Records in pages are in stream-clustered order (else in row order). */
  clustered: boolean;
  /** [offset, length] of each column: ts, seq, stream, msg, facets. */
  cols: Array<[number, number]>;
}

interface IndexFile {
  streams: Record<string, string>[];
  lastSeq: number;
  /** Generations a merged segment replaces (absent unless merged). */
  covers?: GenRanges;
  blocks: Array<{
    n: number;
    minTs: bigint;
    maxTs: bigint;
    minSeq: number;
    maxSeq: number;
    streams: number[];
    /** Records per entry of `streams` (absent in older files). */
    sc?: number[];
    bloom: Uint8Array;
    cols: Array<[number, number]>;
    /** Facets column format (absent = 0). */
    fv?: number;
    /** Inflated column sizes (absent in older files). */
    raw?: number[];
    /** Deflated page lengths of the message and facets columns (absent: one stream each). */
    pg?: [number[], number[]];
    /**
     * 1: column 3 holds record pages (message + facets per record) and column 4 is empty;
     * 2: the same with records in stream-clustered order (see streamClusteredOrder).
     */
    rp?: number;
  }>;
}

function encodeTs(ts: BigInt64Array, from: number, to: number): Buffer {
  const w = new ByteWriter((to - from) * 3 + 16);
  let prev = 0n;
  for (let i = from; i < to; i++) {
    const d = ts[i]! - prev;
    prev = ts[i]!;
    if (i > from && d < 4503599627370496n && d > -4503599627370496n) w.svar(Number(d) + (d >= 0n ? 1 : 0));
    else {
      w.u8(0);
      w.i64(ts[i]!);
    }
  }
  return w.take();
}

function decodeTs(b: Buffer, n: number): BigInt64Array {
  const r = new ByteReader(b);
  const out = new BigInt64Array(n);
  let prev = 0n;
  for (let i = 0; i < n; i++) {
    const z = r.svar();
    if (z === 0) prev = r.i64();
    else prev += BigInt(z > 0 ? z - 1 : z);
    out[i] = prev;
  }
  return out;
}

/** Default compression of segment columns and pages. */
export const SEGMENT_DEFLATE: ZlibOptions = { level: 6 };
/**
 * Compression for head flushes (on the ingest thread, hundreds of thousands of records at a
 * time): level 3 with an 8 KB window deflates pages about twice as fast as level 6 for ~3%
 * more bytes (pages are ~10 KB, so the smaller window loses little); merges rewrite at level 6.
 */
export const HEAD_FLUSH_DEFLATE: ZlibOptions = { level: 3, windowBits: 13 };

const deflateRawAsync = promisify(deflateRaw);

/** A block encoded but not yet compressed (see LogSegmentWriter.addBlockAsync). */
interface EncodedBlock {
  meta: Omit<IndexFile['blocks'][number], 'cols' | 'raw' | 'pg'>;
  /** Raw message/facets pages, then the raw ts, seq and stream columns. */
  pages: Buffer[];
  cols: Buffer[];
  recBytes: number;
}

/**
 * Writes a segment block by block into `sink` (the merge writes blocks as it produces them and
 * yields in between); `finish` appends the index and footer.
 */
export class LogSegmentWriter {
  private readonly local = new Map<number, number>();
  private readonly index: IndexFile = { streams: [], lastSeq: 0, blocks: [] };
  private off = MAGIC.length;
  records = 0;

  constructor(
    private readonly streamsOf: (id: number) => Labels,
    private readonly sink: (b: Buffer) => void,
    private readonly deflate: ZlibOptions = SEGMENT_DEFLATE,
  ) {
    sink(MAGIC);
  }

  /** Adds rows [from, to) of `cols` (sorted by ts, seq; at most BLOCK_RECORDS) as one block. */
  addBlock(cols: LogColumns, from: number, to: number): void {
    const b = this.encode(cols, from, to);
    const opts = this.deflate;
    this.commit(b, b.pages.map((p) => deflateRawSync(p, opts)), b.cols.map((c) => deflateRawSync(c, opts)));
  }

  /**
   * As addBlock, with the compression on the libuv thread pool (a background merge: the event
   * loop stays free for requests meanwhile). One deflate at a time, so a merge takes at most one
   * core from ingest and queries. Calls must not overlap.
   */
  async addBlockAsync(cols: LogColumns, from: number, to: number): Promise<void> {
    const b = this.encode(cols, from, to);
    const opts = this.deflate;
    const pages: Buffer[] = [];
    for (const p of b.pages) pages.push(await deflateRawAsync(p, opts));
    const cz: Buffer[] = [];
    for (const c of b.cols) cz.push(await deflateRawAsync(c, opts));
    this.commit(b, pages, cz);
  }

  private encode(cols: LogColumns, from: number, to: number): EncodedBlock {
    const { local, index } = this;
    const streamTable = index.streams;
    const seqW = new ByteWriter((to - from) * 2 + 16);
    const stW = new ByteWriter((to - from) * 2 + 16);
    const present = new Map<number, number>();
    let prevSeq = 0;
    let minSeq = Infinity;
    let maxSeq = 0;
    // Message and facets of each record sit together in pages of PAGE_ROWS records, each
    // page deflated alone, records ordered by stream within the block (stable): a selective
    // query inflates only the pages holding its streams' records, one call per page (costs
    // ~15% size on short messages against whole-block deflate).
    const recW = new ByteWriter(1 << 20);
    const cuts: number[] = [];
    const localIds = new Int32Array(to - from);
    for (let i = from; i < to; i++) {
      const s = cols.seq[i]!;
      seqW.svar(s - prevSeq);
      prevSeq = s;
      if (s < minSeq) minSeq = s;
      if (s > maxSeq) maxSeq = s;
      const g = cols.stream[i]!;
      let l = local.get(g);
      if (l === undefined) {
        l = streamTable.length;
        local.set(g, l);
        streamTable.push({ ...this.streamsOf(g) });
      }
      present.set(l, (present.get(l) ?? 0) + 1);
      stW.uvar(l);
      localIds[i - from] = l;
    }
    const order = streamClusteredOrder(localIds);
    for (let q = 0; q < order.length; q++) {
      const i = from + order[q]!;
      if (q % PAGE_ROWS === 0) cuts.push(recW.pos);
      if (cols.writeRecord) {
        cols.writeRecord(i, recW);
        continue;
      }
      recW.str(cols.msg[i]!);
      const f = cols.facets[i] ?? null;
      if (f) {
        const b = pack(f);
        recW.uvar(b.length);
        recW.ensure(b.length);
        b.copy(recW.buf, recW.pos);
        recW.pos += b.length;
      } else recW.uvar(0);
    }
    const rec = recW.view();
    const pages: Buffer[] = [];
    for (let p = 0; p < cuts.length; p++) pages.push(rec.subarray(cuts[p]!, p + 1 < cuts.length ? cuts[p + 1]! : rec.length));
    let minTs = cols.ts[from]!;
    let maxTs = cols.ts[from]!;
    for (let i = from; i < to; i++) {
      if (cols.ts[i]! < minTs) minTs = cols.ts[i]!;
      if (cols.ts[i]! > maxTs) maxTs = cols.ts[i]!;
    }
    return {
      meta: {
        n: to - from,
        minTs,
        maxTs,
        minSeq,
        maxSeq,
        streams: [...present.keys()],
        sc: [...present.values()],
        bloom: bloomOf(cols.msg.slice(from, to)),
        fv: 1,
        rp: 2,
      },
      pages,
      cols: [encodeTs(cols.ts, from, to), seqW.view(), stW.view()],
      recBytes: rec.length,
    };
  }

  /** Writes a block's compressed pages and columns and adds its index entry. */
  private commit(b: EncodedBlock, pageParts: Buffer[], colz: Buffer[]): void {
    const colBufs = [colz[0]!, colz[1]!, colz[2]!, Buffer.concat(pageParts), Buffer.alloc(0)];
    const at: Array<[number, number]> = [];
    for (const c of colBufs) {
      at.push([this.off, c.length]);
      this.sink(c);
      this.off += c.length;
    }
    this.index.blocks.push({
      ...b.meta,
      cols: at,
      raw: [b.cols[0]!.length, b.cols[1]!.length, b.cols[2]!.length, b.recBytes, 0],
      pg: [pageParts.map((p) => p.length), []],
    });
    this.records += b.meta.n;
  }

  /** Appends the index and footer; `covers` lists the generations a merged segment replaces. */
  finish(lastSeq: number, covers?: GenRanges): void {
    this.index.lastSeq = lastSeq;
    if (covers && covers.length > 0) this.index.covers = covers;
    const idx = pack(this.index);
    const footer = Buffer.alloc(FOOTER);
    footer.writeDoubleLE(this.off, 0);
    footer.writeUInt32LE(idx.length, 8);
    footer.writeUInt32LE(crc32(idx), 12);
    END.copy(footer, 16);
    this.sink(idx);
    this.sink(footer);
  }
}

let nextUid = 1;

export class LogSegment {
  fd = -1;
  bytes = 0;
  blocks: BlockMeta[] = [];
  minTs = 0n;
  maxTs = 0n;
  lastSeq = 0;
  minSeq = Infinity;
  /** Segment-local stream id → global stream id. */
  globalOf: number[] = [];
  closing = false;
  /** Generations this segment replaced (a merge output); see segment-merge.ts. */
  covers: GenRanges = [];
  /** Unique per opened object: cache keys must not confuse a merged segment with its input of the same gen. */
  readonly uid = nextUid++;

  constructor(
    readonly gen: number,
    readonly path: string,
  ) {}

  /**
   * Builds the file for `cols` (already sorted by ts, seq). `streams` maps global ids to labels.
   * Returns the file parts; `lastSeq` is the WAL cut this segment covers.
   */
  static build(cols: LogColumns, streamsOf: (id: number) => Labels, lastSeq: number, deflate?: ZlibOptions): Buffer[] {
    const parts: Buffer[] = [];
    const w = new LogSegmentWriter(streamsOf, (b) => parts.push(b), deflate);
    for (let from = 0; from < cols.n; from += BLOCK_RECORDS) w.addBlock(cols, from, Math.min(cols.n, from + BLOCK_RECORDS));
    w.finish(lastSeq);
    return parts;
  }

  /** Opens a segment file; `streamId` maps a label set to a global stream id. */
  static load(gen: number, path: string, streamId: (labels: Labels) => number): LogSegment {
    const seg = new LogSegment(gen, path);
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size < MAGIC.length + FOOTER) throw new Error('segment too short');
      const footer = Buffer.alloc(FOOTER);
      readSync(fd, footer, 0, FOOTER, size - FOOTER);
      if (!footer.subarray(16).equals(END)) throw new Error('segment footer missing');
      const idx = Buffer.alloc(footer.readUInt32LE(8));
      readSync(fd, idx, 0, idx.length, footer.readDoubleLE(0));
      if (crc32(idx) !== footer.readUInt32LE(12)) throw new Error('segment index checksum mismatch');
      const index = unpack<IndexFile>(idx);
      const globalOf = index.streams.map((l) => streamId(Object.freeze(l)));
      seg.lastSeq = index.lastSeq;
      seg.covers = readCovers(index.covers);
      for (const b of index.blocks) {
        // Global ids ascending (with their counts) so a query can probe a block by binary search.
        // (global id, position) packed in one number: a typed-array sort, no comparator calls.
        const keys = new Float64Array(b.streams.length);
        for (let k = 0; k < keys.length; k++) keys[k] = globalOf[b.streams[k]!]! * 65536 + k;
        keys.sort();
        const order = Array.from(keys, (x) => x % 65536);
        seg.blocks.push({
          n: b.n,
          minTs: b.minTs,
          maxTs: b.maxTs,
          minSeq: b.minSeq,
          maxSeq: b.maxSeq,
          streams: Uint32Array.from(order, (k) => globalOf[b.streams[k]!]!),
          counts: b.sc && b.sc.length === b.streams.length ? Uint32Array.from(order, (k) => b.sc![k]!) : null,
          bloom: b.bloom,
          cols: b.cols,
          fv: b.fv ?? 0,
          raw: b.raw && b.raw.length === b.cols.length ? b.raw : null,
          pages: b.pg ? [prefixSums(b.pg[0]), prefixSums(b.pg[1])] : null,
          recordPages: (b.rp === 1 || b.rp === 2) && !!b.pg,
          clustered: b.rp === 2 && !!b.pg,
        });
      }
      seg.fd = fd;
      seg.bytes = size;
      seg.bounds();
      seg.globalOf = globalOf;
      return seg;
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  private bounds(): void {
    if (this.blocks.length === 0) return;
    this.minTs = this.blocks[0]!.minTs;
    this.maxTs = this.blocks[0]!.maxTs;
    for (const b of this.blocks) {
      if (b.minTs < this.minTs) this.minTs = b.minTs;
      if (b.maxTs > this.maxTs) this.maxTs = b.maxTs;
      if (b.minSeq < this.minSeq) this.minSeq = b.minSeq;
    }
  }

  private read(off: number, len: number): Buffer {
    const buf = Buffer.allocUnsafe(len);
    let got = 0;
    while (got < len) {
      const n = readSync(this.fd, buf, got, len - got, off + got);
      if (n <= 0) throw new Error(`segment ${this.path}: short read`);
      got += n;
    }
    return buf;
  }

  /** The inflated bytes of column `c` (0 ts, 1 seq, 2 stream, 3 msg, 4 facets) of block `i`. */
  column(i: number, c: number): Buffer {
    const b = this.blocks[i]!;
    const [o, l] = b.cols[c]!;
    if (l === 0) return Buffer.alloc(0);
    // One output chunk of the known size: no chunk list to concatenate.
    const chunkSize = Math.max(1024, b.raw ? b.raw[c]! + 64 : Math.min(l * 8, 4 << 20));
    return inflateRawSync(this.read(o, l), { chunkSize });
  }

  /** Page `p` (of PAGE_ROWS records) of paged column `c` (3 messages, 4 facets) of block `i`. */
  page(i: number, c: 3 | 4, p: number): Buffer {
    const b = this.blocks[i]!;
    const at = b.pages![c - 3];
    const start = at[p]!;
    const len = at[p + 1]! - start;
    if (len === 0) return Buffer.alloc(0);
    // Output buffer sized from the column's average page (small pages: a 64 KiB default would
    // make most of each allocation garbage).
    const pagesN = at.length - 1;
    const avg = b.raw ? b.raw[c]! / pagesN : 16 << 10;
    const chunkSize = Math.min(64 << 10, Math.max(4 << 10, Math.ceil(avg * 1.25) + 256));
    return inflateRawSync(this.read(b.cols[c]![0] + start, len), { chunkSize });
  }

  /** As `column`, inflated on the libuv thread pool (so several blocks inflate in parallel). */
  async columnAsync(i: number, c: number): Promise<Buffer> {
    const b = this.blocks[i]!;
    const [o, l] = b.cols[c]!;
    if (l === 0) return Buffer.alloc(0);
    const chunkSize = Math.max(1024, b.raw ? b.raw[c]! + 64 : Math.min(l * 8, 4 << 20));
    return inflateRawAsync(this.read(o, l), { chunkSize });
  }

  /** A lazy reader of block `i`: each column is inflated on first use only. */
  reader(i: number): BlockReader {
    return new BlockReader(this, i);
  }

  release(delayMs = 60_000): void {
    if (this.closing) return;
    this.closing = true;
    const fd = this.fd;
    const t = setTimeout(() => {
      try {
        closeSync(fd);
      } catch {
        /* ignore */
      }
    }, delayMs);
    t.unref();
  }

  closeNow(): void {
    if (this.fd >= 0) {
      try {
        closeSync(this.fd);
      } catch {
        /* ignore */
      }
      this.fd = -1;
    }
  }
}

/** Timestamps of a block as Number offsets (ns) from its first one; null when they don't fit. */
export interface TsOffsets {
  base: bigint;
  off: Float64Array;
}

const SAFE_SPAN = 2 ** 52;

/** Decodes the ts column into offsets from the first timestamp without a BigInt per record. */
export function decodeTsOffsets(b: Buffer, n: number): TsOffsets | null {
  if (n === 0) return { base: 0n, off: new Float64Array(0) };
  const off = new Float64Array(n);
  if (b.length < 9 || b[0] !== 0) return null;
  const base = b.readBigInt64LE(1);
  let pos = 9;
  let prev = 0;
  const len = b.length;
  // Hand-inlined zig-zag LEB128 (this loop runs once per record of every scanned block).
  for (let i = 1; i < n; i++) {
    if (pos >= len) return null;
    let byte = b[pos++]!;
    let u = byte & 0x7f;
    if (byte >= 0x80) {
      let mul = 0x80;
      do {
        if (pos >= len) return null;
        byte = b[pos++]!;
        u += (byte & 0x7f) * mul;
        mul *= 0x80;
      } while (byte >= 0x80);
    }
    if (u === 0) {
      if (pos + 8 > len) return null;
      const d = b.readBigInt64LE(pos) - base;
      pos += 8;
      if (d >= BigInt(SAFE_SPAN) || d <= -BigInt(SAFE_SPAN)) return null;
      prev = Number(d);
    } else {
      const z = u % 2 === 1 ? -(u + 1) / 2 : u / 2;
      prev += z > 0 ? z - 1 : z;
    }
    if (prev >= SAFE_SPAN || prev <= -SAFE_SPAN) return null;
    off[i] = prev;
  }
  return { base, off };
}

/**
 * The ts column straight to Unix ms, floor(ns / 1e6), for every record (the columnar scan's
 * timeslice path: one pass, no offsets array). False when it does not fit Number offsets.
 */
export function decodeTsMsInto(b: Buffer, n: number, out: Float64Array): boolean {
  if (n === 0) return true;
  if (b.length < 9 || b[0] !== 0) return false;
  const base = b.readBigInt64LE(1);
  const baseMs = floorMs(base);
  const rem = Number(base - BigInt(baseMs) * 1_000_000n); // in [0, 1e6)
  let pos = 9;
  let prev = 0;
  const len = b.length;
  out[0] = baseMs;
  for (let i = 1; i < n; i++) {
    if (pos >= len) return false;
    let byte = b[pos++]!;
    let u = byte & 0x7f;
    if (byte >= 0x80) {
      let mul = 0x80;
      do {
        if (pos >= len) return false;
        byte = b[pos++]!;
        u += (byte & 0x7f) * mul;
        mul *= 0x80;
      } while (byte >= 0x80);
    }
    if (u === 0) return false; // an absolute timestamp: let the general path handle the block
    const z = u % 2 === 1 ? -(u + 1) / 2 : u / 2;
    prev += z > 0 ? z - 1 : z;
    if (prev >= SAFE_SPAN || prev <= -SAFE_SPAN) return false;
    const x = rem + prev;
    let q = Math.floor(x / 1e6);
    if (q * 1e6 > x) q--;
    else if ((q + 1) * 1e6 <= x) q++;
    out[i] = baseMs + q;
  }
  return true;
}

/** floor(ns / 1e6) of a BigInt timestamp, as a Number of ms. */
export function floorMs(ns: bigint): number {
  const q = ns / 1_000_000n;
  return Number(ns < 0n && q * 1_000_000n !== ns ? q - 1n : q);
}

/** Unix ms of every record from offsets: floor((base + off) / 1e6) in exact integer steps. */
export function offsetsToMs(t: TsOffsets, rows: ArrayLike<number> | null, n: number, out: Float64Array): void {
  const baseMs = floorMs(t.base);
  const rem = Number(t.base - BigInt(baseMs) * 1_000_000n); // in [0, 1e6)
  for (let k = 0; k < n; k++) {
    const x = rem + t.off[rows === null ? k : rows[k]!]!;
    let q = Math.floor(x / 1e6);
    if (q * 1e6 > x) q--;
    else if ((q + 1) * 1e6 <= x) q++;
    out[k] = baseMs + q;
  }
}

/**
 * Rows of a block ordered by segment-local stream id, ties in row order (a counting sort):
 * the order records take in stream-clustered pages. Writer and reader both derive it from the
 * stream column.
 */
export function streamClusteredOrder(localIds: Int32Array): Int32Array {
  let max = 0;
  for (let i = 0; i < localIds.length; i++) if (localIds[i]! > max) max = localIds[i]!;
  const start = new Int32Array(max + 2);
  for (let i = 0; i < localIds.length; i++) start[localIds[i]! + 1]!++;
  for (let v = 1; v < start.length; v++) start[v]! += start[v - 1]!;
  const order = new Int32Array(localIds.length);
  for (let i = 0; i < localIds.length; i++) order[start[localIds[i]!]!++] = i;
  return order;
}

function prefixSums(lens: readonly number[]): Float64Array {
  const out = new Float64Array(lens.length + 1);
  for (let i = 0; i < lens.length; i++) out[i + 1] = out[i]! + lens[i]!;
  return out;
}

/** [start, length] of each of `n` LEB128-length-prefixed items in `b` (hand-inlined: hot). */
function lengthPrefixed(b: Buffer, n: number): Uint32Array {
  const at = new Uint32Array(n * 2);
  let pos = 0;
  for (let i = 0; i < n; i++) {
    let byte = b[pos++]!;
    let len = byte & 0x7f;
    let mul = 0x80;
    while (byte >= 0x80) {
      byte = b[pos++]!;
      len += (byte & 0x7f) * mul;
      mul *= 0x80;
    }
    at[2 * i] = pos;
    at[2 * i + 1] = len;
    pos += len;
  }
  if (pos > b.length) throw new RangeError('truncated column');
  return at;
}

/**
 * One block, read column by column on demand: a query that filters by stream and time touches
 * the small columns only, and inflates messages and facets just for blocks with survivors
 * (and parses facets just for the records it returns).
 */
export class BlockReader {
  readonly n: number;
  readonly meta: BlockMeta;
  private _streams: Uint32Array | null = null;
  private _seq: Float64Array | null = null;
  private _ts: BigInt64Array | null = null;
  private _off: TsOffsets | null | undefined;
  private _msg: Buffer | null = null;
  private _msgAt: Uint32Array | null = null;
  private _fac: Buffer | null = null;
  private _facAt: Uint32Array | null = null;
  private _facArr: (Facets | null)[] | null = null;
  private _prefetch: Promise<void> | null = null;
  private _locals: Int32Array | null = null;
  /** Position of each row in the page order (stream-clustered blocks). */
  private _pos: Int32Array | null = null;
  private _msgPages: ({ b: Buffer; at: Uint32Array } | undefined)[] | null = null;
  private _facPages: ({ b: Buffer; at: Uint32Array } | undefined)[] | null = null;

  constructor(
    private readonly seg: LogSegment,
    private readonly bi: number,
  ) {
    this.meta = seg.blocks[bi]!;
    this.n = this.meta.n;
  }

  /** Global stream id of every record. */
  streams(): Uint32Array {
    if (this._streams) return this._streams;
    const b = this.seg.column(this.bi, 2);
    const g = this.seg.globalOf;
    const out = new Uint32Array(this.n);
    const locals = new Int32Array(this.n);
    let pos = 0;
    for (let k = 0; k < this.n; k++) {
      // Hand-inlined LEB128 (local stream ids are small: one or two bytes).
      let byte = b[pos++]!;
      let v = byte & 0x7f;
      let mul = 0x80;
      while (byte >= 0x80) {
        byte = b[pos++]!;
        v += (byte & 0x7f) * mul;
        mul *= 0x80;
      }
      if (pos > b.length) throw new RangeError('truncated stream column');
      locals[k] = v;
      out[k] = g[v]!;
    }
    this._locals = locals;
    return (this._streams = out);
  }

  seqs(): Float64Array {
    if (this._seq) return this._seq;
    const r = new ByteReader(this.seg.column(this.bi, 1));
    const out = new Float64Array(this.n);
    let prev = 0;
    for (let k = 0; k < this.n; k++) out[k] = prev += r.svar();
    return (this._seq = out);
  }

  /** Every record's Unix ms into `out` when the fused decoder applies (see decodeTsMsInto). */
  msInto(out: Float64Array): boolean {
    return decodeTsMsInto(this.seg.column(this.bi, 0), this.n, out);
  }

  /** Offsets form of the timestamps (null when the block spans more than 2^52 ns). */
  offsets(): TsOffsets | null {
    if (this._off === undefined) {
      this._off = decodeTsOffsets(this.seg.column(this.bi, 0), this.n);
      if (this._off === null) this._ts = decodeTs(this.seg.column(this.bi, 0), this.n);
    }
    return this._off;
  }

  tsAt(k: number): bigint {
    const o = this.offsets();
    return o ? o.base + BigInt(o.off[k]!) : this._ts![k]!;
  }

  /**
   * Inflates the message and facets columns in the background; `msgAt`/`facetsAt` then find
   * them ready. A scan calls this for the next few surviving blocks.
   */
  prefetch(): Promise<void> {
    // Paged blocks inflate just the pages asked for, synchronously: nothing to prefetch.
    if (this.meta.pages) return Promise.resolve();
    this._prefetch ??= (async () => {
      const [m, f] = await Promise.all([
        this._msg ? null : this.seg.columnAsync(this.bi, 3),
        this._fac || this._facArr || this.meta.cols[4]![1] === 0 ? null : this.seg.columnAsync(this.bi, 4),
      ]);
      if (m && !this._msg) this.setMsg(m);
      if (f && !this._fac && !this._facArr) this.setFacets(f);
    })();
    return this._prefetch;
  }

  private setMsg(b: Buffer): void {
    this._msgAt = lengthPrefixed(b, this.n);
    this._msg = b;
  }

  private setFacets(b: Buffer): void {
    if (this.meta.fv === 0) {
      this._facArr = unpack<(Facets | null)[]>(b);
      return;
    }
    this._facAt = lengthPrefixed(b, this.n);
    this._fac = b;
  }

  /**
   * Decoded page of a paged column: its bytes and, per record, [start, length] (record pages:
   * [message start, length, facets start, length]).
   */
  private pageOf(c: 3 | 4, p: number): { b: Buffer; at: Uint32Array } {
    const cache = c === 3 ? (this._msgPages ??= []) : (this._facPages ??= []);
    let pg = cache[p];
    if (!pg) {
      const b = this.seg.page(this.bi, c, p);
      const rows = Math.min(PAGE_ROWS, this.n - p * PAGE_ROWS);
      pg = cache[p] = { b, at: lengthPrefixed(b, this.meta.recordPages ? rows * 2 : rows) };
    }
    return pg;
  }

  /** Where row k sits in the paged columns. */
  private pagePos(k: number): number {
    if (!this.meta.clustered) return k;
    if (!this._pos) {
      if (!this._locals) this.streams();
      const order = streamClusteredOrder(this._locals!);
      const pos = new Int32Array(this.n);
      for (let q = 0; q < order.length; q++) pos[order[q]!] = q;
      this._pos = pos;
    }
    return this._pos[k]!;
  }

  msgAt(k: number): string {
    if (this.meta.pages && !this._msg) {
      const at = this.pagePos(k);
      const pg = this.pageOf(3, Math.floor(at / PAGE_ROWS));
      const j = (at % PAGE_ROWS) * (this.meta.recordPages ? 2 : 1);
      const start = pg.at[2 * j]!;
      return pg.b.toString('utf8', start, start + pg.at[2 * j + 1]!);
    }
    if (!this._msg) this.setMsg(this.seg.column(this.bi, 3));
    const start = this._msgAt![2 * k]!;
    return this._msg!.toString('utf8', start, start + this._msgAt![2 * k + 1]!);
  }

  facetsAt(k: number): Facets | null {
    if (this.meta.recordPages) {
      const at = this.pagePos(k);
      const pg = this.pageOf(3, Math.floor(at / PAGE_ROWS));
      const j = (at % PAGE_ROWS) * 2 + 1;
      const len = pg.at[2 * j + 1]!;
      if (len === 0) return null;
      const start = pg.at[2 * j]!;
      return unpack<Facets>(pg.b.subarray(start, start + len));
    }
    if (this.meta.cols[4]![1] === 0) return null;
    if (this.meta.pages && !this._fac) {
      const pg = this.pageOf(4, Math.floor(k / PAGE_ROWS));
      const j = k % PAGE_ROWS;
      const len = pg.at[2 * j + 1]!;
      if (len === 0) return null;
      const start = pg.at[2 * j]!;
      return unpack<Facets>(pg.b.subarray(start, start + len));
    }
    if (!this._fac && !this._facArr) this.setFacets(this.seg.column(this.bi, 4));
    if (this._facArr) return this._facArr[k] ?? null;
    const len = this._facAt![2 * k + 1]!;
    if (len === 0) return null;
    const start = this._facAt![2 * k]!;
    return unpack<Facets>(this._fac!.subarray(start, start + len));
  }
}
