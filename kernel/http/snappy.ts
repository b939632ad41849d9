/**
 * Snappy block-format decompression (the framing Prometheus remote write uses). Hand-written
 * because it sits on the remote-write hot path: compared with snappyjs it writes into an
 * uninitialised Buffer (no zero fill, no copy into a Buffer afterwards), copies long literals
 * and non-overlapping matches natively, and checks every bound snappyjs leaves out (output
 * overrun, a short result), so malformed input is an error and never a partly garbage body.
 */

export class SnappyError extends Error {}

/** Reads the uncompressed length preamble (a uint32 varint); -1 when malformed. */
export function snappyUncompressedLength(src: Uint8Array): { length: number; headerBytes: number } {
  let len = 0;
  let shift = 0;
  for (let i = 0; i < 5 && i < src.length; i++) {
    const b = src[i]!;
    len += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if (b < 0x80) return len > 0xffffffff ? { length: -1, headerBytes: 0 } : { length: len, headerBytes: i + 1 };
  }
  return { length: -1, headerBytes: 0 };
}

/** Short copies are faster as a word loop than through a native call. */
const NATIVE_COPY_MIN = 128;

/**
 * Decompresses a snappy block. `maxLength` is checked against the preamble before anything is
 * allocated; `onTooLarge` builds the error thrown then (the caller's 413). `alloc`, when given,
 * provides the output memory (at least `len` bytes; the result is a view of its first `len`).
 */
export function snappyUncompress(
  src: Uint8Array,
  maxLength: number,
  onTooLarge: (len: number) => Error,
  alloc?: (len: number) => Buffer,
): Buffer {
  const { length: len, headerBytes } = snappyUncompressedLength(src);
  if (len < 0) throw new SnappyError('invalid length preamble');
  if (len > maxLength) throw onTooLarge(len);
  let out: Buffer;
  if (alloc === undefined) out = Buffer.allocUnsafe(len);
  else {
    const mem = alloc(len);
    out = mem.length === len ? mem : mem.subarray(0, len);
  }
  // The check after the loop stays out of the loop's function: a call that enters the loop's
  // optimized (on-stack-replacement) code would otherwise reach a comparison compiled without
  // type feedback and deoptimise at the end of every request.
  if (decodeBlock(src, headerBytes, out, len) !== len) throw new SnappyError('output shorter than the declared length');
  return out;
}

/** Decodes the elements of a block into out[0, len); returns the number of bytes written. */
function decodeBlock(src: Uint8Array, headerBytes: number, out: Buffer, len: number): number {
  const ov = new DataView(out.buffer, out.byteOffset, out.length);
  const n = src.length;
  let pos = headerBytes;
  let op = 0;
  while (pos < n) {
    const c = src[pos++]!;
    const kind = c & 3;
    if (kind === 0) {
      // Literal: length-1 in the tag's upper 6 bits, or in 1-4 following bytes (60-63).
      let l = c >>> 2;
      if (l >= 60) {
        const extra = l - 59;
        if (pos + extra > n) throw new SnappyError('truncated literal length');
        l = src[pos]!;
        if (extra > 1) l |= src[pos + 1]! << 8;
        if (extra > 2) l |= src[pos + 2]! << 16;
        if (extra > 3) l = (l | (src[pos + 3]! << 24)) >>> 0;
        pos += extra;
      }
      l += 1;
      if (pos + l > n) throw new SnappyError('literal runs past the input');
      if (op + l > len) throw new SnappyError('literal runs past the declared length');
      if (l < NATIVE_COPY_MIN) {
        for (let i = 0; i < l; i++) out[op + i] = src[pos + i]!;
      } else out.set(src.subarray(pos, pos + l), op);
      pos += l;
      op += l;
      continue;
    }
    let l: number;
    let off: number;
    if (kind === 1) {
      if (pos >= n) throw new SnappyError('truncated copy');
      l = ((c >>> 2) & 7) + 4;
      off = ((c >>> 5) << 8) | src[pos++]!;
    } else if (kind === 2) {
      if (pos + 2 > n) throw new SnappyError('truncated copy');
      l = (c >>> 2) + 1;
      off = src[pos]! | (src[pos + 1]! << 8);
      pos += 2;
    } else {
      if (pos + 4 > n) throw new SnappyError('truncated copy');
      l = (c >>> 2) + 1;
      off = (src[pos]! | (src[pos + 1]! << 8) | (src[pos + 2]! << 16) | (src[pos + 3]! << 24)) >>> 0;
      pos += 4;
    }
    if (off === 0 || off > op) throw new SnappyError('copy offset out of range');
    if (op + l > len) throw new SnappyError('copy runs past the declared length');
    const from = op - off;
    if (off >= l && l >= NATIVE_COPY_MIN) out.copyWithin(op, from, from + l);
    else if (off >= 8) {
      // 8 bytes per step through a float64 (copies here are mostly 10-50 bytes of repeated label
      // text): reads lie in bytes already written, as below. A NaN goes as two 32-bit words
      // instead, so no NaN payload can be canonicalised on the way; every other double
      // round-trips bit for bit.
      let i = 0;
      for (; i + 8 <= l; i += 8) {
        const x = ov.getFloat64(from + i, true);
        if (x === x) ov.setFloat64(op + i, x, true);
        else {
          ov.setInt32(op + i, ov.getInt32(from + i, true), true);
          ov.setInt32(op + i + 4, ov.getInt32(from + i + 4, true), true);
        }
      }
      if (i + 4 <= l) {
        ov.setInt32(op + i, ov.getInt32(from + i, true), true);
        i += 4;
      }
      for (; i < l; i++) out[op + i] = out[from + i]!;
    } else if (off >= 4) {
      // 4 bytes per step: with off >= 4 each word read lies in bytes already written, so an
      // overlapping copy still repeats the pattern as the byte-by-byte definition does.
      let i = 0;
      for (; i + 4 <= l; i += 4) ov.setInt32(op + i, ov.getInt32(from + i, true), true);
      for (; i < l; i++) out[op + i] = out[from + i]!;
    } else for (let i = 0; i < l; i++) out[op + i] = out[from + i]!; // may overlap: byte order matters
    op += l;
  }
  return op;
}
