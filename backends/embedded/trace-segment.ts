/**
 * Immutable span segment files (`.tseg`), written at each trace head flush.
 *
 * Spans are grouped by trace (a trace's spans in one segment are contiguous, in one block) and
 * traces are ordered by their first start time, so blocks cover narrow time ranges. The index,
 * held in memory while the segment is live, is small next to the spans:
 *   - per segment: time bounds, a bloom filter of the trace ids (a segment without the trace is
 *     skipped without I/O) and the position of the trace-id table;
 *   - per block: time bounds, min/max span duration, the span statuses present and a bloom
 *     filter of `key=value` for span/resource attributes and `name=<span name>`, so a search
 *     skips blocks that cannot hold a matching span.
 * A block has two separately deflated sections. The summary (per trace: byte range and spans;
 * per span: start, end, status and indexes into the block's service-name and span-name
 * dictionaries — typed arrays, read without decoding spans) lets a search check time, status,
 * duration, `service.name` and `name` and then inflate the data section (one msgpack array per
 * trace) only for blocks with a candidate, and decode only candidate traces. The trace-id table
 * (sorted 64-bit id hashes → block, offset and length of the trace's bytes) stays on disk and is
 * cached on use, so trace-by-id costs one bloom probe per segment, then one table search, one
 * data-section read and the decoding of that trace only.
 *
 * Summary layout (little-endian): u32 nTraces | u32 nSpans | u32[nTraces+1] trace byte offsets |
 * u32[nTraces+1] first span of each trace | pad to 8 | i64[nSpans] start | i64[nSpans] end |
 * u16[nSpans] service | u16[nSpans] name | u8[nSpans] status bit | msgpack [services, names].
 * Index 0xffff means "not summarized" (the span also has an attribute of that key): decode it.
 */
import type { AttributeValue, Span, SpanStatusCode } from '../../kernel/models.js';
import type { BlockCache } from './block-cache.js';
import { DocSegmentFile, DocSegmentWriter, type BlockRef } from './doc-segment-file.js';
import { AtomicFile } from './files.js';
import type { GenRanges } from './segment-merge.js';
import { bloomHas, hash2, stringBloom } from './hash-bloom.js';
import { pack, unpack } from './pack.js';

export const TRACE_MAGIC = 'LKTSEG01';
/** Spans per block (a block closes at the first trace boundary past this). */
export const TRACE_BLOCK_SPANS = 1024;

export interface TraceBlockMeta {
  /** The data section (trace msgpack bytes) and the summary section. */
  ref: BlockRef;
  sref: BlockRef;
  n: number;
  minStart: bigint;
  maxEnd: bigint;
  minDur: number;
  maxDur: number;
  /** Bit per status present: 1 unset, 2 ok, 4 error. */
  status: number;
  bloom: Uint8Array;
}

export interface TraceSegmentIndex {
  lastSeq: number;
  spans: number;
  traces: number;
  minStart: bigint;
  maxEnd: bigint;
  idBloom: Uint8Array;
  idTable: BlockRef;
  blocks: TraceBlockMeta[];
  /** Block blooms also hold `key=element` for array attributes (absent in older segments). */
  elemKeys?: boolean;
  /** Generations a merged segment replaces (absent unless merged). */
  covers?: GenRanges;
}

/** u32s per id-table row: hash hi, hash lo, block, offset, length. */
const ID_ROW = 5;

export const STATUS_BIT: Record<SpanStatusCode, number> = { unset: 1, ok: 2, error: 4 };

/** The string form attribute equality is tested against (arrays/maps as JSON). */
export function attrString(v: AttributeValue | undefined): string | undefined {
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v, bigintSafe) : String(v);
}

const bigintSafe = (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

/**
 * Attribute equality as the search prefilter tests it: the string form of the value, or of any
 * scalar element of an array (TraceQL compares arrays element-wise).
 */
export function attrMatches(v: AttributeValue | undefined, want: string): boolean {
  if (v === undefined || v === null) return false;
  if (typeof v === 'string') return v === want;
  if (Array.isArray(v)) {
    for (const x of v) if (x !== null && typeof x !== 'object' && String(x) === want) return true;
  }
  return attrString(v) === want;
}

function addAttrKeys(attrs: Readonly<Record<string, AttributeValue>>, into: Set<string>): void {
  for (const k in attrs) {
    const v = attrs[k];
    if (v === undefined || v === null) continue;
    if (typeof v === 'string') into.add(k + '=' + v);
    else {
      into.add(k + '=' + attrString(v));
      if (Array.isArray(v)) for (const x of v) if (x !== null && typeof x !== 'object') into.add(k + '=' + String(x));
    }
  }
}

export const spanDuration = (s: Span): number => Number(s.endTimeUnixNano - s.startTimeUnixNano);

function attrKeys(s: Span, into: Set<string>): void {
  into.add('name=' + s.name);
  addAttrKeys(s.attributes, into);
  addAttrKeys(s.resource, into);
}

/** Writes `traces` (lowercased trace id → spans) as a segment; returns its index and size. */
export function writeTraceSegment(path: string, traces: Map<string, Span[]>, lastSeq: number): { index: TraceSegmentIndex; bytes: number } {
  const groups = [...traces].map(([id, spans]) => ({ id, spans, min: minStart(spans) }));
  groups.sort((a, b) => (a.min < b.min ? -1 : a.min > b.min ? 1 : 0));
  const file = new AtomicFile(path);
  let index: TraceSegmentIndex;
  try {
    const b = new TraceSegmentBuilder(new DocSegmentWriter(file, TRACE_MAGIC));
    for (const g of groups) b.add(g.id, g.spans);
    index = b.finish(lastSeq);
  } catch (e) {
    file.abort();
    throw e;
  }
  return { index, bytes: file.commit() };
}

export function minStart(spans: readonly Span[]): bigint {
  let min = spans[0]!.startTimeUnixNano;
  for (const s of spans) if (s.startTimeUnixNano < min) min = s.startTimeUnixNano;
  return min;
}

/**
 * Builds a span segment from whole traces added in order of their first start time (a head
 * flush sorts them; a merge produces them in that order), one block per ~TRACE_BLOCK_SPANS spans.
 */
export class TraceSegmentBuilder {
  private readonly metas: TraceBlockMeta[] = [];
  private readonly idRows: Array<[number, number, number, number, number]> = [];
  private readonly ids: string[] = [];
  private cur: Span[] = [];
  private parts: Buffer[] = [];
  private partBytes = 0;
  private traceOffs: number[] = [];
  private traceFirst: number[] = [];
  private readonly keys = new Set<string>();
  spans = 0;

  constructor(private readonly w: DocSegmentWriter) {}

  /** Adds one trace (`id` lowercased; every span of it this segment will hold). */
  add(id: string, spans: readonly Span[]): void {
    const [h1, h2] = hash2(id);
    const bytes = pack(spans);
    this.ids.push(id);
    this.idRows.push([h1, h2, this.metas.length, this.partBytes, bytes.length]);
    this.traceOffs.push(this.partBytes);
    this.traceFirst.push(this.cur.length);
    this.parts.push(bytes);
    this.partBytes += bytes.length;
    for (const s of spans) this.cur.push(s);
    if (this.cur.length >= TRACE_BLOCK_SPANS) this.closeBlock();
  }

  /** Blocks written so far (a merge yields after each). */
  get blocks(): number {
    return this.metas.length;
  }

  private closeBlock(): void {
    const cur = this.cur;
    if (cur.length === 0) return;
    let minStart = cur[0]!.startTimeUnixNano;
    let maxEnd = cur[0]!.endTimeUnixNano;
    let minDur = Infinity;
    let maxDur = -Infinity;
    let status = 0;
    const keys = this.keys;
    keys.clear();
    for (const s of cur) {
      if (s.startTimeUnixNano < minStart) minStart = s.startTimeUnixNano;
      if (s.endTimeUnixNano > maxEnd) maxEnd = s.endTimeUnixNano;
      const d = spanDuration(s);
      if (d < minDur) minDur = d;
      if (d > maxDur) maxDur = d;
      status |= STATUS_BIT[s.status.code] ?? 7;
      attrKeys(s, keys);
    }
    const sref = this.w.add(encodeSummary(cur, this.traceOffs, this.traceFirst, this.partBytes));
    const ref = this.w.add(Buffer.concat(this.parts));
    this.metas.push({ n: cur.length, minStart, maxEnd, minDur, maxDur, status, bloom: stringBloom(keys, keys.size), sref, ref });
    this.spans += cur.length;
    this.cur = [];
    this.parts = [];
    this.partBytes = 0;
    this.traceOffs = [];
    this.traceFirst = [];
  }

  /** Closes the last block, writes the id table and the index; `covers` marks a merge output. */
  finish(lastSeq: number, covers?: GenRanges): TraceSegmentIndex {
    this.closeBlock();
    const idRows = this.idRows;
    idRows.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const table = new Uint32Array(idRows.length * ID_ROW);
    idRows.forEach((row, i) => table.set(row, i * ID_ROW));
    const idTable = this.w.add(new Uint8Array(table.buffer));
    const metas = this.metas;
    const index: TraceSegmentIndex = {
      lastSeq,
      spans: this.spans,
      traces: this.ids.length,
      minStart: metas.length ? metas.reduce((m, b) => (b.minStart < m ? b.minStart : m), metas[0]!.minStart) : 0n,
      maxEnd: metas.length ? metas.reduce((m, b) => (b.maxEnd > m ? b.maxEnd : m), metas[0]!.maxEnd) : 0n,
      idBloom: stringBloom(this.ids, this.ids.length),
      idTable,
      blocks: metas,
      elemKeys: true,
    };
    if (covers && covers.length > 0) index.covers = covers;
    this.w.finish(index);
    return index;
  }
}

export const UNSUMMARIZED = 0xffff;

function encodeSummary(spans: readonly Span[], offs: number[], first: number[], dataBytes: number): Buffer {
  const nt = offs.length;
  const n = spans.length;
  const at = align8(8 + 8 * (nt + 1));
  const dictAt = at + 16 * n + 5 * n;
  const svcs = new Map<string, number>();
  const names = new Map<string, number>();
  const idx = (m: Map<string, number>, v: string) => {
    let i = m.get(v);
    if (i === undefined) m.set(v, (i = m.size));
    return i;
  };
  const svcIdx = new Uint16Array(n);
  const nameIdx = new Uint16Array(n);
  spans.forEach((s, j) => {
    const svc = s.resource['service.name'];
    svcIdx[j] = 'service.name' in s.attributes || (svc !== undefined && typeof svc !== 'string') ? UNSUMMARIZED : idx(svcs, svc ?? '');
    nameIdx[j] = 'name' in s.attributes || 'name' in s.resource ? UNSUMMARIZED : idx(names, s.name);
  });
  const dicts = pack([[...svcs.keys()], [...names.keys()]]);
  const out = Buffer.alloc(dictAt + dicts.length);
  out.writeUInt32LE(nt, 0);
  out.writeUInt32LE(n, 4);
  for (let i = 0; i < nt; i++) {
    out.writeUInt32LE(offs[i]!, 8 + 4 * i);
    out.writeUInt32LE(first[i]!, 8 + 4 * (nt + 1) + 4 * i);
  }
  out.writeUInt32LE(dataBytes, 8 + 4 * nt);
  out.writeUInt32LE(n, 8 + 4 * (nt + 1) + 4 * nt);
  let p = at;
  for (const s of spans) (out.writeBigInt64LE(s.startTimeUnixNano, p), (p += 8));
  for (const s of spans) (out.writeBigInt64LE(s.endTimeUnixNano, p), (p += 8));
  for (let j = 0; j < n; j++) (out.writeUInt16LE(svcIdx[j]!, p), (p += 2));
  for (let j = 0; j < n; j++) (out.writeUInt16LE(nameIdx[j]!, p), (p += 2));
  for (const s of spans) out[p++] = STATUS_BIT[s.status.code] ?? 7;
  out.set(dicts, p);
  return out;
}

const align8 = (n: number) => (n + 7) & ~7;

/** The summary of a block (views over its inflated bytes). */
export interface BlockSummary {
  traces: number;
  /** Byte offsets of each trace in the data section (traces + 1 entries). */
  offs: Uint32Array;
  /** First span index of each trace (traces + 1 entries). */
  first: Uint32Array;
  start: BigInt64Array;
  end: BigInt64Array;
  /** Index into `services` / `names` per span, or UNSUMMARIZED. */
  service: Uint16Array;
  name: Uint16Array;
  status: Uint8Array;
  services: string[];
  names: string[];
}

function decodeSummary(raw: Buffer): BlockSummary {
  // Typed-array views need alignment; small inflated buffers may sit in a shared pool.
  let buf = raw;
  if (raw.byteOffset % 8 !== 0) {
    const ab = new ArrayBuffer(raw.length);
    new Uint8Array(ab).set(raw);
    buf = Buffer.from(ab);
  }
  const nt = buf.readUInt32LE(0);
  const n = buf.readUInt32LE(4);
  const at = align8(8 + 8 * (nt + 1));
  const ab = buf.buffer;
  const o = buf.byteOffset;
  const [services, names] = unpack<[string[], string[]]>(buf.subarray(at + 21 * n));
  return {
    traces: nt,
    offs: new Uint32Array(ab, o + 8, nt + 1),
    first: new Uint32Array(ab, o + 8 + 4 * (nt + 1), nt + 1),
    start: new BigInt64Array(ab, o + at, n),
    end: new BigInt64Array(ab, o + at + 8 * n, n),
    service: new Uint16Array(ab, o + at + 16 * n, n),
    name: new Uint16Array(ab, o + at + 18 * n, n),
    status: new Uint8Array(ab, o + at + 20 * n, n),
    services,
    names,
  };
}

/** A live segment: the index in memory, blocks and the id table read through the cache. */
let nextUid = 1;

export class TraceSegment {
  readonly file: DocSegmentFile<TraceSegmentIndex>;
  /** Cache key prefix, unique per opened object (a merged segment takes its newest input's gen). */
  readonly cachePrefix: string;

  constructor(
    readonly gen: number,
    path: string,
    private readonly cache: BlockCache<BlockSummary | Uint32Array | Buffer>,
  ) {
    this.file = new DocSegmentFile<TraceSegmentIndex>(path, TRACE_MAGIC);
    this.cachePrefix = `${gen}.${nextUid++}:`;
  }

  get index(): TraceSegmentIndex {
    return this.file.index;
  }

  /** The span summary of block `i`. */
  summary(i: number): BlockSummary {
    const ref = this.index.blocks[i]!.sref;
    return this.cache.get(`${this.cachePrefix}${i}:s`, () => ({ value: decodeSummary(this.file.block(ref)), weight: ref.raw + 256 })) as BlockSummary;
  }

  /** The inflated data section of block `i`. */
  data(i: number): Buffer {
    const ref = this.index.blocks[i]!.ref;
    return this.cache.get(`${this.cachePrefix}${i}:d`, () => ({ value: this.file.block(ref), weight: ref.raw })) as Buffer;
  }

  /**
   * Summary and data of block `i` read past the cache (a merge reads every block once and must
   * not evict what queries use).
   */
  uncachedBlock(i: number): { sum: BlockSummary; data: Buffer } {
    const b = this.index.blocks[i]!;
    return { sum: decodeSummary(this.file.block(b.sref)), data: this.file.block(b.ref) };
  }

  /** Decodes trace `t` of block `i`. */
  trace(i: number, sum: BlockSummary, t: number): Span[] {
    return unpack<Span[]>(this.data(i).subarray(sum.offs[t]!, sum.offs[t + 1]!));
  }

  /** Spans of one trace (`id` lowercased) in this segment; [] when absent. */
  lookup(id: string): Span[] {
    if (!bloomHas(this.index.idBloom, id)) return [];
    const table = this.cache.get(`${this.cachePrefix}ids`, () => {
      const b = this.file.block(this.index.idTable);
      // Copy into an aligned buffer: the inflated Buffer may sit at an odd offset of a pool.
      const t = new Uint32Array(b.length >>> 2);
      new Uint8Array(t.buffer).set(b);
      return { value: t, weight: b.length };
    }) as Uint32Array;
    const [h1, h2] = hash2(id);
    let lo = 0;
    const rows = table.length / ID_ROW;
    let hi = rows;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const a = table[mid * ID_ROW]!;
      const b = table[mid * ID_ROW + 1]!;
      if (a < h1 || (a === h1 && b < h2)) lo = mid + 1;
      else hi = mid;
    }
    const out: Span[] = [];
    // Equal hashes may belong to different ids (rare): read each candidate block, compare ids.
    for (let i = lo; i < rows && table[i * ID_ROW] === h1 && table[i * ID_ROW + 1] === h2; i++) {
      const o = i * ID_ROW;
      const off = table[o + 3]!;
      const spans = unpack<Span[]>(this.data(table[o + 2]!).subarray(off, off + table[o + 4]!));
      for (const s of spans) if (s.traceId.toLowerCase() === id) out.push(s);
    }
    return out;
  }

  close(): void {
    this.file.close();
  }
}
