/**
 * The mutable head of the embedded log store: records appended in ingestion (seq) order,
 * kept until a flush writes them into a segment.
 *
 * Columns are growable typed arrays (no BigInt or boxed number per record for the GC to trace
 * while the head lives for seconds in the old generation). Messages stay strings (term search
 * and the segment bloom read them). Facets are NOT kept as objects: each record keeps where its
 * bytes sit in the WAL payload it was appended with (`str(msg) | u8 flag | [uvar len, msgpack]`),
 * which is also, but for the flag byte, the record-page layout of a segment. A flush copies
 * those bytes instead of packing facets a second time; a query decodes the facets of the records
 * it returns, as it does for segment records.
 */
import { ByteReader, type ByteWriter } from './bytes.js';
import { floorMs, type Facets, type LogColumns } from './log-segment.js';
import { unpack } from './pack.js';

const INITIAL = 4096;
/** Word of a 64-bit element holding its high half in a 32-bit view (1 on little-endian machines). */
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

function grow<T extends BigInt64Array | Float64Array | Uint32Array>(a: T, make: (n: number) => T): T {
  const next = make(a.length * 2);
  next.set(a as never);
  return next;
}

export class Head {
  n = 0;
  ts: BigInt64Array;
  /** floor(ts / 1e6) per record, for columnar scans. */
  ms: Float64Array;
  seq: Float64Array;
  stream: Uint32Array;
  msg: string[] = [];
  /** The buffer holding the record's bytes, the offset of its message, of its facets flag byte, and its end. */
  private buf: Buffer[] = [];
  private msgOff: Uint32Array;
  private flagOff: Uint32Array;
  private endOff: Uint32Array;
  minTs = 0n;
  maxTs = 0n;
  /** True while timestamps arrived in non-decreasing order (then chunks are time-sorted). */
  sorted = true;

  /** `capacity`: records expected (e.g. what the previous head held), sparing regrowth copies. */
  constructor(capacity = INITIAL) {
    const c = Math.max(INITIAL, Math.min(capacity, 1 << 20));
    this.ts = new BigInt64Array(c);
    this.ms = new Float64Array(c);
    this.seq = new Float64Array(c);
    this.stream = new Uint32Array(c);
    this.msgOff = new Uint32Array(c);
    this.flagOff = new Uint32Array(c);
    this.endOff = new Uint32Array(c);
  }

  /**
   * Adds a record whose message and facets are encoded in `bytes`: `str(msg)` at `msgAt`, the
   * facets flag byte (0 none, 1 present) at `flagAt`, then `uvar(len) + msgpack(facets)` up to `end`.
   */
  push(ts: bigint, seq: number, stream: number, msg: string, bytes: Buffer, msgAt: number, flagAt: number, end: number): void {
    const k = this.n;
    if (k === this.ts.length) this.growAll();
    if (k === 0 || ts < this.minTs) this.minTs = ts;
    if (k > 0 && ts < this.maxTs) this.sorted = false;
    if (k === 0 || ts > this.maxTs) this.maxTs = ts;
    this.ts[k] = ts;
    this.ms[k] = floorMs(ts);
    this.seq[k] = seq;
    this.stream[k] = stream;
    this.msg.push(msg);
    this.buf.push(bytes);
    this.msgOff[k] = msgAt;
    this.flagOff[k] = flagAt;
    this.endOff[k] = end;
    this.n = k + 1;
  }

  private growAll(): void {
    this.ts = grow(this.ts, (n) => new BigInt64Array(n));
    this.ms = grow(this.ms, (n) => new Float64Array(n));
    this.seq = grow(this.seq, (n) => new Float64Array(n));
    this.stream = grow(this.stream, (n) => new Uint32Array(n));
    this.msgOff = grow(this.msgOff, (n) => new Uint32Array(n));
    this.flagOff = grow(this.flagOff, (n) => new Uint32Array(n));
    this.endOff = grow(this.endOff, (n) => new Uint32Array(n));
  }

  /**
   * The head as segment columns sorted by (timestamp, seq). Record pages are copied from the
   * WAL bytes (`writeRecord`); `facets` is left empty for that reason.
   */
  sortedColumns(): LogColumns {
    const n = this.n;
    let order: Uint32Array;
    if (this.sorted) order = Uint32Array.from({ length: n }, (_, i) => i);
    else {
      // Timestamps compared as (signed high, unsigned low) 32-bit halves, then row (= seq
      // order): reading BigInt64Array elements would allocate a BigInt per read in the comparator.
      const hi = new Int32Array(this.ts.buffer, this.ts.byteOffset, n * 2);
      const lo = new Uint32Array(this.ts.buffer, this.ts.byteOffset, n * 2);
      const idx = Array.from({ length: n }, (_, i) => i);
      const LO = 1 - HI;
      idx.sort((a, b) => hi[2 * a + HI]! - hi[2 * b + HI]! || lo[2 * a + LO]! - lo[2 * b + LO]! || a - b);
      order = Uint32Array.from(idx);
    }
    const ts = new BigInt64Array(n);
    const seq = new Float64Array(n);
    const stream = new Uint32Array(n);
    const msg: string[] = new Array(n);
    for (let k = 0; k < n; k++) {
      const i = order[k]!;
      ts[k] = this.ts[i]!;
      seq[k] = this.seq[i]!;
      stream[k] = this.stream[i]!;
      msg[k] = this.msg[i]!;
    }
    return { n, ts, seq, stream, msg, facets: [], writeRecord: (k, w) => this.writeRecord(order[k]!, w) };
  }

  /** Appends record i's `str(msg) + uvar(len) + msgpack(facets)` (len 0: none) to `w`. */
  writeRecord(i: number, w: ByteWriter): void {
    const b = this.buf[i]!;
    const f = this.flagOff[i]!;
    const e = this.endOff[i]!;
    // The flag byte 0 doubles as uvar(0); with facets it is dropped.
    const m = this.msgOff[i]!;
    const has = b[f] !== 0;
    w.ensure(e - m);
    // Records are short: a byte loop beats creating two Buffer views per record.
    const out = w.buf;
    let p = w.pos;
    const stop = has ? f : f + 1;
    for (let k = m; k < stop; k++) out[p++] = b[k]!;
    if (has) for (let k = f + 1; k < e; k++) out[p++] = b[k]!;
    w.pos = p;
  }

  streams(): ArrayLike<number> {
    return this.stream;
  }
  seqs(): ArrayLike<number> {
    return this.seq;
  }
  tsAt(k: number): bigint {
    return this.ts[k]!;
  }
  msgAt(k: number): string {
    return this.msg[k]!;
  }
  facetsAt(k: number): Facets | null {
    const b = this.buf[k]!;
    const f = this.flagOff[k]!;
    if (b[f] === 0) return null;
    const r = new ByteReader(b, f + 1, this.endOff[k]!);
    return unpack<Facets>(r.bytes());
  }
}
