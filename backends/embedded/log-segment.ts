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
import { crc32, deflateRawSync, inflateRawSync } from 'node:zlib';
import type { FacetValue, Labels } from '../../kernel/models.js';
import { bloomOf } from './bloom.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { pack, unpack } from './pack.js';

const MAGIC = Buffer.from('LKLSEG01');
const END = Buffer.from('LKLEND01');
const FOOTER = 24;
export const BLOCK_RECORDS = 8192;

export type Facets = Readonly<Record<string, FacetValue>>;

/** Decoded columns of a block (stream ids are global). */
export interface LogColumns {
  n: number;
  ts: BigInt64Array;
  seq: Float64Array;
  stream: Uint32Array;
  msg: string[];
  facets: (Facets | null)[];
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
  /** [offset, length] of each column: ts, seq, stream, msg, facets. */
  cols: Array<[number, number]>;
}

interface IndexFile {
  streams: Record<string, string>[];
  lastSeq: number;
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

  constructor(
    readonly gen: number,
    readonly path: string,
  ) {}

  /**
   * Builds the file for `cols` (already sorted by ts, seq). `streams` maps global ids to labels.
   * Returns the file parts; `lastSeq` is the WAL cut this segment covers.
   */
  static build(cols: LogColumns, streamsOf: (id: number) => Labels, lastSeq: number): Buffer[] {
    const local = new Map<number, number>();
    const streamTable: Record<string, string>[] = [];
    const parts: Buffer[] = [MAGIC];
    let off = MAGIC.length;
    const index: IndexFile = { streams: streamTable, lastSeq, blocks: [] };
    for (let from = 0; from < cols.n; from += BLOCK_RECORDS) {
      const to = Math.min(cols.n, from + BLOCK_RECORDS);
      const seqW = new ByteWriter((to - from) * 2 + 16);
      const stW = new ByteWriter((to - from) * 2 + 16);
      const msgW = new ByteWriter(1 << 16);
      const present = new Map<number, number>();
      let prevSeq = 0;
      let minSeq = Infinity;
      let maxSeq = 0;
      const facW = new ByteWriter(1 << 16);
      let anyFacets = false;
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
          streamTable.push({ ...streamsOf(g) });
        }
        present.set(l, (present.get(l) ?? 0) + 1);
        stW.uvar(l);
        msgW.str(cols.msg[i]!);
        const f = cols.facets[i] ?? null;
        if (f) {
          anyFacets = true;
          const b = pack(f);
          facW.uvar(b.length);
          facW.ensure(b.length);
          b.copy(facW.buf, facW.pos);
          facW.pos += b.length;
        } else facW.uvar(0);
      }
      const rawCols = [encodeTs(cols.ts, from, to), seqW.view(), stW.view(), msgW.view(), anyFacets ? facW.view() : Buffer.alloc(0)];
      const colBufs = rawCols.map((b) => (b.length === 0 ? b : deflateRawSync(b, { level: 6 })));
      const at: Array<[number, number]> = [];
      for (const b of colBufs) {
        at.push([off, b.length]);
        parts.push(b);
        off += b.length;
      }
      let minTs = cols.ts[from]!;
      let maxTs = cols.ts[from]!;
      for (let i = from; i < to; i++) {
        if (cols.ts[i]! < minTs) minTs = cols.ts[i]!;
        if (cols.ts[i]! > maxTs) maxTs = cols.ts[i]!;
      }
      index.blocks.push({
        n: to - from,
        minTs,
        maxTs,
        minSeq,
        maxSeq,
        streams: [...present.keys()],
        sc: [...present.values()],
        bloom: bloomOf(cols.msg.slice(from, to)),
        cols: at,
        fv: 1,
        raw: rawCols.map((b) => b.length),
      });
    }
    const idx = pack(index);
    const footer = Buffer.alloc(FOOTER);
    footer.writeDoubleLE(off, 0);
    footer.writeUInt32LE(idx.length, 8);
    footer.writeUInt32LE(crc32(idx), 12);
    END.copy(footer, 16);
    parts.push(idx, footer);
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
      for (const b of index.blocks) {
        // Global ids ascending (with their counts) so a query can probe a block by binary search.
        const order = b.streams.map((_, k) => k).sort((x, y) => globalOf[b.streams[x]!]! - globalOf[b.streams[y]!]!);
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
  const r = new ByteReader(b);
  const off = new Float64Array(n);
  if (r.svar() !== 0) return null;
  const base = r.i64();
  let prev = 0;
  for (let i = 1; i < n; i++) {
    const z = r.svar();
    if (z === 0) {
      const d = r.i64() - base;
      if (d >= BigInt(SAFE_SPAN) || d <= -BigInt(SAFE_SPAN)) return null;
      prev = Number(d);
    } else prev += z > 0 ? z - 1 : z;
    if (prev >= SAFE_SPAN || prev <= -SAFE_SPAN) return null;
    off[i] = prev;
  }
  return { base, off };
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
    const r = new ByteReader(this.seg.column(this.bi, 2));
    const g = this.seg.globalOf;
    const out = new Uint32Array(this.n);
    for (let k = 0; k < this.n; k++) out[k] = g[r.uvar()]!;
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

  msgAt(k: number): string {
    if (!this._msg) {
      const b = (this._msg = this.seg.column(this.bi, 3));
      const at = (this._msgAt = new Uint32Array(this.n * 2));
      const r = new ByteReader(b);
      for (let i = 0; i < this.n; i++) {
        const len = r.uvar();
        at[2 * i] = r.pos;
        at[2 * i + 1] = len;
        r.pos += len;
      }
    }
    const start = this._msgAt![2 * k]!;
    return this._msg.toString('utf8', start, start + this._msgAt![2 * k + 1]!);
  }

  facetsAt(k: number): Facets | null {
    if (this.meta.cols[4]![1] === 0) return null;
    if (this.meta.fv === 0) {
      this._facArr ??= unpack<(Facets | null)[]>(this.seg.column(this.bi, 4));
      return this._facArr[k] ?? null;
    }
    if (!this._fac) {
      const b = (this._fac = this.seg.column(this.bi, 4));
      const at = (this._facAt = new Uint32Array(this.n * 2));
      const r = new ByteReader(b);
      for (let i = 0; i < this.n; i++) {
        const len = r.uvar();
        at[2 * i] = r.pos;
        at[2 * i + 1] = len;
        r.pos += len;
      }
    }
    const len = this._facAt![2 * k + 1]!;
    if (len === 0) return null;
    const start = this._facAt![2 * k]!;
    return unpack<Facets>(this._fac.subarray(start, start + len));
  }
}
