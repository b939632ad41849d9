/**
 * Immutable metric segment files: compressed float chunks per series followed by an index
 * (labels, per-series and per-chunk time bounds, side samples) and a checksummed footer.
 *
 *   "LKMSEG03" | chunk bytes ... | index | f64 indexOffset | u32 indexLength | u32 crc32(index) | "LKMEND02"
 *
 * Only the index always stays in memory. Chunk bytes are read from the file on demand, unless
 * the store made the segment resident (`resident`: the whole chunk region held in memory, for
 * the newest segments within `storage.metricsCacheBytes`), in which case reads are subarrays.
 */
import { closeSync, fstatSync, openSync, read as readAt, readSync } from 'node:fs';
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
  /** Holds the chunk's bytes at [off, off + len) (defaults: 0 and to the end of data). */
  data: Uint8Array;
  off?: number;
  len?: number;
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
  /**
   * Present while the chunk's bytes are in memory: before the file is written (its own bytes,
   * off = 0 until encode() assigns file offsets), or set to the segment's resident region, which
   * starts at file offset 0, so [off, off + len) addresses the chunk in both cases.
   */
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

/**
 * The chunks of one series overlapping [mint, maxt]. A series' chunks are in time order and
 * do not overlap, so the first candidate is found by binary search on maxt: after compaction a
 * series has a day of chunks and a short window wants one or two of them.
 */
export function overlappingChunks(cs: readonly SegChunk[], mint: number, maxt: number): SegChunk[] {
  let lo = 0;
  let hi = cs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cs[mid]!.maxt < mint) lo = mid + 1;
    else hi = mid;
  }
  const out: SegChunk[] = [];
  for (let i = lo; i < cs.length; i++) {
    const c = cs[i]!;
    if (c.mint > maxt) break;
    if (c.maxt >= mint) out.push(c);
  }
  return out;
}

/** A chunk's bytes as ChunkData, within `buf` which starts at file offset `base`. */
function sliced(c: SegChunk, buf: Uint8Array, base: number): ChunkData {
  return { mint: c.mint, maxt: c.maxt, count: c.count, enc: c.enc, data: buf, off: c.off - base, len: c.len };
}

/** Points the chunks at the resident region (no copy, no view per chunk). */
function inRegion(want: SegChunk[], region: Uint8Array): ChunkData[] {
  for (const c of want) c.data = region;
  return want as ChunkData[];
}

export class MetricSegment {
  fd = -1;
  bytes = 0;
  mint = Infinity;
  maxt = -Infinity;
  closing = false;
  /** End of the chunk region (= the index offset) in the file. */
  dataEnd = 0;
  /** The chunk region [0, dataEnd) of the file, while the store keeps this segment in memory. */
  resident: Uint8Array | null = null;
  private loading: Promise<void> | null = null;

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
        const data = c.off === undefined && c.len === undefined ? c.data : c.data.subarray(c.off ?? 0, (c.off ?? 0) + (c.len ?? c.data.length));
        return { mint: c.mint, maxt: c.maxt, count: c.count, enc: c.enc ?? 0, off: 0, len: data.length, data };
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
    this.dataEnd = off;
    return parts;
  }

  /**
   * Switches a memory-resident segment to reading from its (now durable) file. With `parts`
   * (what encode() returned and was written), the chunk region stays resident as one buffer.
   */
  attachFile(path: string, parts?: readonly Buffer[]): void {
    this.path = path;
    this.fd = openSync(path, 'r');
    if (parts) {
      const region = Buffer.concat(parts.slice(0, -2) as Buffer[], this.dataEnd);
      this.resident = new Uint8Array(region.buffer, region.byteOffset, region.length);
    }
    for (const s of this.series) for (const c of s.chunks) delete c.data;
  }

  /** Reads the chunk region into memory (on the thread pool; queries go on meanwhile). */
  loadResident(): Promise<void> {
    if (this.resident || this.fd < 0 || this.closing || this.dataEnd === 0) return Promise.resolve();
    if (this.loading) return this.loading;
    const fd = this.fd;
    const buf = new Uint8Array(this.dataEnd);
    const readFrom = (got: number): Promise<number> =>
      new Promise((resolve, reject) => readAt(fd, buf, got, buf.length - got, got, (err, n) => (err ? reject(err) : resolve(n))));
    this.loading = (async () => {
      let got = 0;
      while (got < buf.length) {
        const n = await readFrom(got);
        if (n <= 0) throw new Error(`segment ${this.path}: short read`);
        got += n;
      }
      if (!this.closing && this.fd === fd) this.resident = buf;
    })().finally(() => (this.loading = null));
    return this.loading;
  }

  /**
   * Lets the resident region go. Chunks handed out from it keep pointing at it for a minute
   * (running queries may hold them, as with release()), then the region can be collected.
   */
  dropResident(delayMs = 60_000): void {
    const region = this.resident;
    if (!region) return;
    this.resident = null;
    const t = setTimeout(() => {
      for (const s of this.series) for (const c of s.chunks) if (c.data === region) c.data = undefined;
    }, delayMs);
    t.unref();
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
      seg.dataEnd = indexOff;
      return seg;
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /** Chunks of `s` overlapping [mint, maxt], with their bytes. */
  chunksOf(s: SegSeries, mint: number, maxt: number): ChunkData[] {
    const want = overlappingChunks(s.chunks, mint, maxt);
    if (want.length === 0) return [];
    const mem = this.inMemory(want);
    if (mem) return mem;
    const from = want[0]!.off;
    const buf = this.readRange(from, lastEnd(want));
    return want.map((c) => sliced(c, buf, from));
  }

  /** The chunks' bytes when they are in memory (the resident region, or not yet written). */
  private inMemory(want: SegChunk[]): ChunkData[] | undefined {
    if (this.resident) return inRegion(want, this.resident);
    if (want[0]!.data && this.fd < 0) return want as ChunkData[];
    return undefined;
  }

  /** File bytes [from, end) in one read. */
  private readRange(from: number, end: number): Uint8Array {
    const read = Buffer.allocUnsafe(end - from);
    let got = 0;
    while (got < read.length) {
      const n = readSync(this.fd, read, got, read.length - got, from + got);
      if (n <= 0) throw new Error(`segment ${this.path}: short read`);
      got += n;
    }
    // A plain Uint8Array view: its subarray is a builtin, Buffer's constructs a FastBuffer.
    return new Uint8Array(read.buffer, read.byteOffset, read.length);
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
      const want = overlappingChunks(items[i]!.chunks, mint, maxt);
      wants[i] = want;
      const mem = want.length === 0 ? [] : this.inMemory(want);
      if (mem) out[i] = mem;
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
      const buf = this.readRange(from, end);
      for (; k < j; k++) {
        const i = order[k]!;
        out[i] = wants[i]!.map((c) => sliced(c, buf, from));
      }
    }
    return out;
  }

  /** Closes the file later: queries that already hold this segment may still read it. */
  release(delayMs = 60_000): void {
    if (this.closing) return;
    this.closing = true;
    this.resident = null;
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
