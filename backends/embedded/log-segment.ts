/**
 * Immutable log segment files: blocks of up to 8,192 records sorted by (timestamp, seq), each
 * stored as deflated columns (timestamps as deltas, seqs, stream ids, messages, facets),
 * followed by an index with per-block time/seq bounds, the streams present and a trigram bloom
 * filter of the messages.
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
  /** Global stream ids present. */
  streams: Uint32Array;
  bloom: Uint8Array;
  /** [offset, length] of each column: ts, seq, stream, msg, facets. */
  cols: Array<[number, number]>;
}

interface IndexFile {
  streams: Record<string, string>[];
  lastSeq: number;
  blocks: Array<{ n: number; minTs: bigint; maxTs: bigint; minSeq: number; maxSeq: number; streams: number[]; bloom: Uint8Array; cols: Array<[number, number]> }>;
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
  private cache = new Map<number, LogColumns>();
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
      const present = new Set<number>();
      let prevSeq = 0;
      let minSeq = Infinity;
      let maxSeq = 0;
      const facets: (Facets | null)[] = [];
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
        present.add(l);
        stW.uvar(l);
        msgW.str(cols.msg[i]!);
        const f = cols.facets[i] ?? null;
        if (f) anyFacets = true;
        facets.push(f);
      }
      const colBufs = [
        deflateRawSync(encodeTs(cols.ts, from, to), { level: 6 }),
        deflateRawSync(seqW.view(), { level: 6 }),
        deflateRawSync(stW.view(), { level: 6 }),
        deflateRawSync(msgW.view(), { level: 6 }),
        anyFacets ? deflateRawSync(pack(facets), { level: 6 }) : Buffer.alloc(0),
      ];
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
        streams: [...present].sort((a, b) => a - b),
        bloom: bloomOf(cols.msg.slice(from, to)),
        cols: at,
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
        seg.blocks.push({
          n: b.n,
          minTs: b.minTs,
          maxTs: b.maxTs,
          minSeq: b.minSeq,
          maxSeq: b.maxSeq,
          streams: Uint32Array.from(b.streams.map((l) => globalOf[l]!)),
          bloom: b.bloom,
          cols: b.cols,
        });
      }
      seg.fd = fd;
      seg.bytes = size;
      seg.bounds();
      (seg as unknown as { globalOf: number[] }).globalOf = globalOf;
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

  /** Decoded columns of block `i` (a small cache keeps recently read blocks). */
  columns(i: number): LogColumns {
    const hit = this.cache.get(i);
    if (hit) return hit;
    const b = this.blocks[i]!;
    const globalOf = (this as unknown as { globalOf: number[] }).globalOf;
    const [ts, seq, st, msg, fac] = b.cols.map(([o, l]) => (l === 0 ? Buffer.alloc(0) : inflateRawSync(this.read(o, l))));
    const seqR = new ByteReader(seq!);
    const seqs = new Float64Array(b.n);
    let prev = 0;
    for (let k = 0; k < b.n; k++) seqs[k] = prev += seqR.svar();
    const stR = new ByteReader(st!);
    const streams = new Uint32Array(b.n);
    for (let k = 0; k < b.n; k++) streams[k] = globalOf[stR.uvar()]!;
    const msgR = new ByteReader(msg!);
    const msgs: string[] = new Array(b.n);
    for (let k = 0; k < b.n; k++) msgs[k] = msgR.str();
    const facets = fac!.length ? unpack<(Facets | null)[]>(fac!) : new Array<Facets | null>(b.n).fill(null);
    const cols: LogColumns = { n: b.n, ts: decodeTs(ts!, b.n), seq: seqs, stream: streams, msg: msgs, facets };
    if (this.cache.size >= 16) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(i, cols);
    return cols;
  }

  release(delayMs = 60_000): void {
    if (this.closing) return;
    this.closing = true;
    const fd = this.fd;
    this.cache.clear();
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
