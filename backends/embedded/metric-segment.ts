/**
 * Immutable metric segment files: compressed float chunks per series followed by an index
 * (labels, per-series and per-chunk time bounds, side samples) and a checksummed footer.
 *
 *   "LKMSEG03" | chunk bytes ... | index | f64 indexOffset | u32 indexLength | u32 crc32(index) | "LKMEND02"
 *
 * Chunk bytes are read from the file on demand; only the index stays in memory.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import type { Labels, Sample } from '../../kernel/models.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { readLabels, readSample, writeLabels, writeSample } from './sample-codec.js';

/**
 * Format 3 (LKMSEG03 / LKMEND02) may hold packed chunks (ENC_PACKED); the index is unchanged
 * from format 2, which is still read. The footer changed too, so that a binary from before
 * format 3 skips these files ("segment footer missing") instead of decoding packed chunks as
 * Gorilla chunks.
 */
const MAGIC = Buffer.from('LKMSEG03');
const END = Buffer.from('LKMEND02');
const END_V2 = Buffer.from('LKMEND01');
const FOOTER = 8 + 4 + 4 + 8;

export interface ChunkData {
  mint: number;
  maxt: number;
  count: number;
  data: Uint8Array;
  /** ENC_XOR (default), ENC_INT (format 2 segments) or ENC_PACKED. */
  enc?: number;
}

export interface SegChunk {
  mint: number;
  maxt: number;
  count: number;
  enc: number;
  off: number;
  len: number;
  /** Present while the segment is still memory-resident. */
  data?: Uint8Array;
}

export interface SegSeries {
  labels: Labels;
  mint: number;
  maxt: number;
  chunks: SegChunk[];
  /** Samples outside the float chunks (histograms, start timestamps); sorted, unique t. */
  side: Sample[] | null;
}

export interface SegmentInput {
  labels: Labels;
  chunks: ChunkData[];
  side: Sample[] | null;
}

/**
 * Gap (bytes) between two series' chunks below which chunksOfMany reads through it. Small: a
 * short window wants one chunk per series, and reading through each series' other chunks
 * (a day of them after compaction) cost more than the extra reads from the page cache.
 */
const READ_GAP = 2 << 10;
/** Largest single read of chunksOfMany. */
const READ_MAX = 8 << 20;

function lastEnd(cs: readonly SegChunk[]): number {
  const c = cs[cs.length - 1]!;
  return c.off + c.len;
}

export class MetricSegment {
  fd = -1;
  bytes = 0;
  mint = Infinity;
  maxt = -Infinity;
  closing = false;

  constructor(
    readonly gen: number,
    public path: string,
    readonly series: SegSeries[],
  ) {
    for (const s of series) {
      if (s.mint < this.mint) this.mint = s.mint;
      if (s.maxt > this.maxt) this.maxt = s.maxt;
    }
  }

  /** A memory-resident segment (before or while its file is written). */
  static fromInput(gen: number, path: string, input: readonly SegmentInput[]): MetricSegment {
    const series: SegSeries[] = [];
    for (const s of input) {
      let mint = Infinity;
      let maxt = -Infinity;
      const chunks: SegChunk[] = s.chunks.map((c) => {
        if (c.mint < mint) mint = c.mint;
        if (c.maxt > maxt) maxt = c.maxt;
        return { mint: c.mint, maxt: c.maxt, count: c.count, enc: c.enc ?? 0, off: 0, len: c.data.length, data: c.data };
      });
      if (s.side) {
        for (const x of s.side) {
          if (x.t < mint) mint = x.t;
          if (x.t > maxt) maxt = x.t;
        }
      }
      series.push({ labels: s.labels, mint, maxt, chunks, side: s.side && s.side.length ? s.side : null });
    }
    return new MetricSegment(gen, path, series);
  }

  /** Serializes the segment; assigns chunk file offsets. */
  encode(): Buffer[] {
    const parts: Buffer[] = [MAGIC];
    let off = MAGIC.length;
    for (const s of this.series) {
      for (const c of s.chunks) {
        const d = c.data!;
        parts.push(Buffer.from(d.buffer, d.byteOffset, d.byteLength));
        c.off = off;
        c.len = d.byteLength;
        off += d.byteLength;
      }
    }
    const w = new ByteWriter(1 << 16);
    w.uvar(this.series.length);
    for (const s of this.series) {
      writeLabels(w, s.labels);
      w.f64(s.mint);
      w.f64(s.maxt);
      w.uvar(s.chunks.length);
      for (const c of s.chunks) {
        w.f64(c.mint);
        w.f64(c.maxt);
        w.uvar(c.count);
        w.u8(c.enc);
        w.uvar(c.off);
        w.uvar(c.len);
      }
      const side = s.side ?? [];
      w.uvar(side.length);
      for (const x of side) writeSample(w, x);
    }
    const index = w.take();
    const footer = Buffer.alloc(FOOTER);
    footer.writeDoubleLE(off, 0);
    footer.writeUInt32LE(index.length, 8);
    footer.writeUInt32LE(crc32(index), 12);
    END.copy(footer, 16);
    parts.push(index, footer);
    this.bytes = off + index.length + FOOTER;
    return parts;
  }

  /** Switches a memory-resident segment to reading from its (now durable) file. */
  attachFile(path: string): void {
    this.path = path;
    this.fd = openSync(path, 'r');
    for (const s of this.series) for (const c of s.chunks) delete c.data;
  }

  static load(gen: number, path: string): MetricSegment {
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size < MAGIC.length + FOOTER) throw new Error('segment too short');
      const footer = Buffer.alloc(FOOTER);
      readSync(fd, footer, 0, FOOTER, size - FOOTER);
      if (!footer.subarray(16).equals(END) && !footer.subarray(16).equals(END_V2)) throw new Error('segment footer missing');
      const indexOff = footer.readDoubleLE(0);
      const indexLen = footer.readUInt32LE(8);
      const index = Buffer.alloc(indexLen);
      readSync(fd, index, 0, indexLen, indexOff);
      if (crc32(index) !== footer.readUInt32LE(12)) throw new Error('segment index checksum mismatch');
      const r = new ByteReader(index);
      const n = r.uvar();
      const series: SegSeries[] = [];
      for (let i = 0; i < n; i++) {
        const labels = readLabels(r);
        const mint = r.f64();
        const maxt = r.f64();
        const nc = r.uvar();
        const chunks: SegChunk[] = [];
        for (let j = 0; j < nc; j++) chunks.push({ mint: r.f64(), maxt: r.f64(), count: r.uvar(), enc: r.u8(), off: r.uvar(), len: r.uvar() });
        const ns = r.uvar();
        let side: Sample[] | null = null;
        if (ns > 0) {
          side = [];
          for (let j = 0; j < ns; j++) side.push(readSample(r));
        }
        series.push({ labels, mint, maxt, chunks, side });
      }
      const seg = new MetricSegment(gen, path, series);
      seg.fd = fd;
      seg.bytes = size;
      return seg;
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /** Chunks of `s` overlapping [mint, maxt], with their bytes. */
  chunksOf(s: SegSeries, mint: number, maxt: number): ChunkData[] {
    const want = s.chunks.filter((c) => c.maxt >= mint && c.mint <= maxt);
    if (want.length === 0) return [];
    if (want[0]!.data) return want as ChunkData[];
    const first = want[0]!.off;
    const last = want[want.length - 1]!;
    const read = Buffer.allocUnsafe(last.off + last.len - first);
    let got = 0;
    while (got < read.length) {
      const n = readSync(this.fd, read, got, read.length - got, first + got);
      if (n <= 0) throw new Error(`segment ${this.path}: short read`);
      got += n;
    }
    const buf = new Uint8Array(read.buffer, read.byteOffset, read.length); // as in chunksOfMany
    return want.map((c) => ({ mint: c.mint, maxt: c.maxt, count: c.count, enc: c.enc, data: buf.subarray(c.off - first, c.off - first + c.len) }));
  }

  /**
   * Chunks of many series overlapping [mint, maxt] at once (one entry per item, in order):
   * the byte ranges are read in file order and neighbours closer than READ_GAP are merged
   * into one read, so a query over many series does a few large reads, not one per series.
   */
  chunksOfMany(items: readonly SegSeries[], mint: number, maxt: number): ChunkData[][] {
    const out: ChunkData[][] = new Array(items.length);
    const wants: SegChunk[][] = new Array(items.length);
    const order: number[] = [];
    for (let i = 0; i < items.length; i++) {
      const want = items[i]!.chunks.filter((c) => c.maxt >= mint && c.mint <= maxt);
      wants[i] = want;
      if (want.length === 0) out[i] = [];
      else if (want[0]!.data) out[i] = want as ChunkData[];
      else order.push(i);
    }
    order.sort((a, b) => wants[a]![0]!.off - wants[b]![0]!.off);
    let k = 0;
    while (k < order.length) {
      // One read for a run of items whose byte ranges are close together.
      const from = wants[order[k]!]![0]!.off;
      let end = lastEnd(wants[order[k]!]!);
      let j = k + 1;
      while (j < order.length) {
        const w = wants[order[j]!]!;
        const start = w[0]!.off;
        const e = lastEnd(w);
        if (start - end > READ_GAP || Math.max(e, end) - from > READ_MAX) break;
        if (e > end) end = e;
        j++;
      }
      const read = Buffer.allocUnsafe(end - from);
      let got = 0;
      while (got < read.length) {
        const n = readSync(this.fd, read, got, read.length - got, from + got);
        if (n <= 0) throw new Error(`segment ${this.path}: short read`);
        got += n;
      }
      // A plain Uint8Array view: its subarray is a builtin, Buffer's constructs a FastBuffer.
      const buf = new Uint8Array(read.buffer, read.byteOffset, read.length);
      for (; k < j; k++) {
        const i = order[k]!;
        out[i] = wants[i]!.map((c) => ({ mint: c.mint, maxt: c.maxt, count: c.count, enc: c.enc, data: buf.subarray(c.off - from, c.off - from + c.len) }));
      }
    }
    return out;
  }

  /** Closes the file later: queries that already hold this segment may still read it. */
  release(delayMs = 60_000): void {
    if (this.closing) return;
    this.closing = true;
    const fd = this.fd;
    if (fd < 0) return;
    const t = setTimeout(() => {
      try {
        closeSync(fd);
      } catch {
        /* already closed */
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
