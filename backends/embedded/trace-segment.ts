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
 * A block is a sequence of msgpack arrays, one per trace. The trace-id table (sorted 64-bit id
 * hashes → block, offset and length of the trace's bytes in the inflated block) stays on disk
 * and is cached on use, so trace-by-id costs one bloom probe per segment, then one table search,
 * one block read and the decoding of that trace's spans only.
 */
import type { AttributeValue, Span, SpanStatusCode } from '../../kernel/models.js';
import type { BlockCache } from './block-cache.js';
import { DocSegmentFile, writeDocSegment, type BlockRef } from './doc-segment-file.js';
import { bloomHas, hash2, stringBloom } from './hash-bloom.js';
import { Packr } from 'msgpackr';
import { pack, unpack } from './pack.js';

// Same settings as pack.ts; a block is a sequence of msgpack values, one per trace.
const multi = new Packr({ useRecords: false, moreTypes: false });

export const TRACE_MAGIC = 'LKTSEG01';
/** Spans per block (a block closes at the first trace boundary past this). */
export const TRACE_BLOCK_SPANS = 1024;

export interface TraceBlockMeta {
  ref: BlockRef;
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

export const spanDuration = (s: Span): number => Number(s.endTimeUnixNano - s.startTimeUnixNano);

function attrKeys(s: Span, into: Set<string>): void {
  into.add('name=' + s.name);
  for (const k in s.attributes) {
    const v = attrString(s.attributes[k]);
    if (v !== undefined) into.add(k + '=' + v);
  }
  for (const k in s.resource) {
    const v = attrString(s.resource[k]);
    if (v !== undefined) into.add(k + '=' + v);
  }
}

/** Writes `traces` (lowercased trace id → spans) as a segment; returns its index and size. */
export function writeTraceSegment(path: string, traces: Map<string, Span[]>, lastSeq: number): { index: TraceSegmentIndex; bytes: number } {
  const groups = [...traces].map(([id, spans]) => {
    let min = spans[0]!.startTimeUnixNano;
    for (const s of spans) if (s.startTimeUnixNano < min) min = s.startTimeUnixNano;
    return { id, spans, min };
  });
  groups.sort((a, b) => (a.min < b.min ? -1 : a.min > b.min ? 1 : 0));

  const payloads: Uint8Array[] = [];
  const metas: Omit<TraceBlockMeta, 'ref'>[] = [];
  const idRows: Array<[number, number, number, number, number]> = [];
  let cur: Span[] = [];
  let parts: Buffer[] = [];
  let partBytes = 0;
  const keys = new Set<string>();
  let spanCount = 0;
  const closeBlock = () => {
    if (cur.length === 0) return;
    let minStart = cur[0]!.startTimeUnixNano;
    let maxEnd = cur[0]!.endTimeUnixNano;
    let minDur = Infinity;
    let maxDur = -Infinity;
    let status = 0;
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
    metas.push({ n: cur.length, minStart, maxEnd, minDur, maxDur, status, bloom: stringBloom(keys, keys.size) });
    payloads.push(Buffer.concat(parts));
    spanCount += cur.length;
    cur = [];
    parts = [];
    partBytes = 0;
  };
  for (const g of groups) {
    const [h1, h2] = hash2(g.id);
    const bytes = pack(g.spans);
    idRows.push([h1, h2, payloads.length, partBytes, bytes.length]);
    parts.push(bytes);
    partBytes += bytes.length;
    for (const s of g.spans) cur.push(s);
    if (cur.length >= TRACE_BLOCK_SPANS) closeBlock();
  }
  closeBlock();

  idRows.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const table = new Uint32Array(idRows.length * ID_ROW);
  idRows.forEach((row, i) => table.set(row, i * ID_ROW));
  payloads.push(new Uint8Array(table.buffer));

  let index!: TraceSegmentIndex;
  const bytes = writeDocSegment(path, TRACE_MAGIC, payloads, (refs) => {
    index = {
      lastSeq,
      spans: spanCount,
      traces: groups.length,
      minStart: metas.length ? metas.reduce((m, b) => (b.minStart < m ? b.minStart : m), metas[0]!.minStart) : 0n,
      maxEnd: metas.length ? metas.reduce((m, b) => (b.maxEnd > m ? b.maxEnd : m), metas[0]!.maxEnd) : 0n,
      idBloom: stringBloom(traces.keys(), traces.size),
      idTable: refs[refs.length - 1]!,
      blocks: metas.map((m, i) => ({ ...m, ref: refs[i]! })),
    };
    return index;
  });
  return { index, bytes };
}

/** A live segment: the index in memory, blocks and the id table read through the cache. */
export class TraceSegment {
  readonly file: DocSegmentFile<TraceSegmentIndex>;

  constructor(
    readonly gen: number,
    path: string,
    private readonly cache: BlockCache<Span[][] | Uint32Array | Buffer>,
  ) {
    this.file = new DocSegmentFile<TraceSegmentIndex>(path, TRACE_MAGIC);
  }

  get index(): TraceSegmentIndex {
    return this.file.index;
  }

  /** Decoded traces of block `i` (shared with the cache: callers must not mutate them). */
  block(i: number): Span[][] {
    const ref = this.index.blocks[i]!.ref;
    return this.cache.get(`${this.gen}:${i}`, () => ({ value: multi.unpackMultiple(this.raw(i)) as Span[][], weight: ref.raw * 4 })) as Span[][];
  }

  /** The inflated bytes of block `i`. */
  private raw(i: number): Buffer {
    const ref = this.index.blocks[i]!.ref;
    return this.cache.get(`${this.gen}:${i}:raw`, () => ({ value: this.file.block(ref), weight: ref.raw })) as Buffer;
  }

  /** Spans of one trace (`id` lowercased) in this segment; [] when absent. */
  lookup(id: string): Span[] {
    if (!bloomHas(this.index.idBloom, id)) return [];
    const table = this.cache.get(`${this.gen}:ids`, () => {
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
      const spans = unpack<Span[]>(this.raw(table[o + 2]!).subarray(off, off + table[o + 4]!));
      for (const s of spans) if (s.traceId.toLowerCase() === id) out.push(s);
    }
    return out;
  }

  close(): void {
    this.file.close();
  }
}
