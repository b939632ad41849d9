/**
 * A minimal protobuf wire reader for the remote-write hot path. protobufjs' reflection decoder
 * allocates a message object per sample and a Long per int64; remote write carries millions of
 * samples per second, so the decoders here read fields straight into the normalized records.
 */
export class WireError extends Error {}

const textDecoder = new TextDecoder('utf-8', { fatal: false });
const scratchDouble = new Float64Array(1);
const scratchBytes = new Uint8Array(scratchDouble.buffer);
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error('big-endian hosts are not supported');

export class Reader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  /** Unsigned varint up to 2^53 (larger values lose precision, as JavaScript numbers do). */
  varint(): number {
    const b = this.buf;
    let p = this.pos;
    if (p >= this.end) throw new WireError('truncated varint');
    let byte = b[p++]!;
    let v = byte & 0x7f;
    if (byte < 0x80) {
      this.pos = p;
      return v;
    }
    let mul = 128;
    for (let i = 1; i < 10; i++) {
      if (p >= this.end) throw new WireError('truncated varint');
      byte = b[p++]!;
      v += (byte & 0x7f) * mul;
      if (byte < 0x80) {
        this.pos = p;
        return v;
      }
      mul *= 128;
    }
    throw new WireError('varint too long');
  }

  /** A signed int64 sent as a plain varint (two's complement, 10 bytes when negative). */
  int64(): number {
    const start = this.pos;
    const v = this.varint();
    // Negative int64s occupy 10 bytes; reinterpret via BigInt (rare: only pre-1970 timestamps).
    if (this.pos - start === 10) return Number(BigInt.asIntN(64, BigInt(readBigVarint(this.buf, start))));
    return v;
  }

  /** zigzag sint32/sint64. */
  sint(): number {
    const start = this.pos;
    const v = this.varint();
    if (v <= Number.MAX_SAFE_INTEGER) return v % 2 === 0 ? v / 2 : -(v + 1) / 2;
    const big = readBigVarint(this.buf, start);
    return Number((big >> 1n) ^ -(big & 1n));
  }

  double(): number {
    if (this.pos + 8 > this.end) throw new WireError('truncated double');
    const b = this.buf;
    const p = this.pos;
    // Byte copy into a scratch Float64Array keeps NaN payloads (the staleness marker) intact.
    scratchBytes[0] = b[p]!;
    scratchBytes[1] = b[p + 1]!;
    scratchBytes[2] = b[p + 2]!;
    scratchBytes[3] = b[p + 3]!;
    scratchBytes[4] = b[p + 4]!;
    scratchBytes[5] = b[p + 5]!;
    scratchBytes[6] = b[p + 6]!;
    scratchBytes[7] = b[p + 7]!;
    this.pos = p + 8;
    return scratchDouble[0]!;
  }

  /** Reads a length prefix and returns the [start, end) of the delimited bytes. */
  delimited(): number {
    const len = this.varint();
    const end = this.pos + len;
    if (end > this.end) throw new WireError('length-delimited field exceeds its message');
    return end;
  }

  string(): string {
    const end = this.delimited();
    const s = decodeUtf8(this.buf, this.pos, end);
    this.pos = end;
    return s;
  }

  /**
   * Skips the field whose tag was just read. Field number 0 is invalid protobuf, and a known
   * field (bit `n` of `knownFields` set) arriving with a wire type its reader did not accept is
   * a malformed message, not an unknown field to ignore.
   */
  skipField(tag: number, knownFields = 0): void {
    const field = tag >>> 3;
    if (field === 0) throw new WireError('invalid field number 0');
    if (field < 32 && (knownFields >>> field) & 1) throw new WireError(`field ${field} has the wrong wire type ${tag & 7}`);
    this.skip(tag & 7);
  }

  skip(wireType: number): void {
    switch (wireType) {
      case 0:
        this.varint();
        return;
      case 1:
        this.pos += 8;
        break;
      case 2:
        this.pos = this.delimited();
        return;
      case 5:
        this.pos += 4;
        break;
      default:
        throw new WireError(`unsupported wire type ${wireType}`);
    }
    if (this.pos > this.end) throw new WireError('truncated field');
  }
}

function readBigVarint(b: Uint8Array, p: number): bigint {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    const byte = b[p++]!;
    v |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) return v;
    shift += 7n;
  }
}

/** Short ASCII strings (label names and values) decode faster in JS than through TextDecoder. */
export function decodeUtf8(b: Uint8Array, start: number, end: number): string {
  const len = end - start;
  if (len === 0) return '';
  if (len <= 48) {
    let s = '';
    for (let i = start; i < end; i++) {
      const c = b[i]!;
      if (c >= 0x80) return textDecoder.decode(b.subarray(start, end));
      s += String.fromCharCode(c);
    }
    return s;
  }
  return textDecoder.decode(b.subarray(start, end));
}

/** Iterates a packed (or single unpacked) repeated field of doubles into `out`. */
export function readPackedDoubles(r: Reader, wireType: number, out: number[]): void {
  if (wireType !== 1 && wireType !== 2) throw new WireError(`repeated double with wire type ${wireType}`);
  if (wireType === 1) {
    out.push(r.double());
    return;
  }
  const end = r.delimited();
  while (r.pos < end) out.push(r.double());
  if (r.pos !== end) throw new WireError('packed doubles overrun their length');
}

/** Packed (or unpacked) zigzag varints. */
export function readPackedSint(r: Reader, wireType: number, out: number[]): void {
  if (wireType !== 0 && wireType !== 2) throw new WireError(`repeated sint with wire type ${wireType}`);
  if (wireType === 0) {
    out.push(r.sint());
    return;
  }
  const end = r.delimited();
  while (r.pos < end) out.push(r.sint());
  if (r.pos !== end) throw new WireError('packed varints overrun their length');
}

/** Packed (or unpacked) unsigned varints. */
export function readPackedUint(r: Reader, wireType: number, out: number[]): void {
  if (wireType !== 0 && wireType !== 2) throw new WireError(`repeated varint with wire type ${wireType}`);
  if (wireType === 0) {
    out.push(r.varint());
    return;
  }
  const end = r.delimited();
  while (r.pos < end) out.push(r.varint());
  if (r.pos !== end) throw new WireError('packed varints overrun their length');
}
