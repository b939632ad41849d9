/**
 * Growable byte writer and a matching reader: the one binary encoding used by the WAL and by
 * segment files (little-endian, unsigned LEB128 varints, length-prefixed UTF-8 strings).
 */
export class ByteWriter {
  buf: Buffer;
  pos = 0;

  constructor(initial = 4096) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }

  u32(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  f64(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  i64(v: bigint): void {
    this.ensure(8);
    this.buf.writeBigInt64LE(v, this.pos);
    this.pos += 8;
  }

  /** Unsigned varint for non-negative integers up to 2^53. */
  uvar(v: number): void {
    this.ensure(8);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
  }

  /** Zig-zag signed varint for integers within ±2^52. */
  svar(v: number): void {
    this.uvar(v < 0 ? -2 * v - 1 : 2 * v);
  }

  str(s: string): void {
    // Worst case 3 bytes per UTF-16 unit.
    const max = s.length * 3;
    this.ensure(max + 5);
    if (s.length < 64) {
      // Fast path for short strings: write then backfill the 1-byte length when it fits.
      const start = this.pos++;
      const n = this.buf.write(s, this.pos, 'utf8');
      if (n < 0x80) {
        this.buf[start] = n;
        this.pos += n;
        return;
      }
      this.pos = start;
    }
    const n = Buffer.byteLength(s, 'utf8');
    this.uvar(n);
    this.ensure(n);
    this.buf.write(s, this.pos, 'utf8');
    this.pos += n;
  }

  bytes(b: Uint8Array): void {
    this.uvar(b.length);
    this.raw(b);
  }

  raw(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** A copy of what was written. */
  take(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }

  view(): Buffer {
    return this.buf.subarray(0, this.pos);
  }

  reset(): void {
    this.pos = 0;
  }
}

export class ByteReader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  private need(n: number): void {
    if (this.pos + n > this.end) throw new RangeError('truncated record');
  }

  u8(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }

  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }

  f64(): number {
    this.need(8);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  i64(): bigint {
    this.need(8);
    const v = this.buf.readBigInt64LE(this.pos);
    this.pos += 8;
    return v;
  }

  uvar(): number {
    let v = 0;
    let mul = 1;
    for (;;) {
      this.need(1);
      const b = this.buf[this.pos++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 0x80;
      if (mul > 2 ** 56) throw new RangeError('varint too long');
    }
  }

  svar(): number {
    const u = this.uvar();
    return u % 2 === 1 ? -(u + 1) / 2 : u / 2;
  }

  str(): string {
    const n = this.uvar();
    this.need(n);
    const s = this.buf.toString('utf8', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  bytes(): Buffer {
    const n = this.uvar();
    this.need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
}
