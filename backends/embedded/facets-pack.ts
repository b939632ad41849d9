/**
 * Writes a log record's facets (string → string | number | boolean) as msgpack straight into a
 * ByteWriter, length-prefixed exactly as `w.bytes(pack(facets))` would be, so WAL replay still
 * reads it with `unpack`. This is the log append hot path: msgpackr's generic packer (plus a
 * copy of its output) cost more than all the rest of a record's WAL encoding.
 *
 * Headers are chosen from an upper bound of the UTF-8 length (a str8 header for a 5-byte string
 * is valid msgpack), so each string is written once and its length backfilled.
 */
import type { ByteWriter } from './bytes.js';

/** Writes `uvar(len) + msgpack(facets)`; false (nothing written) when a value is not a scalar. */
export function writeFacetsMsgpack(w: ByteWriter, facets: Readonly<Record<string, unknown>>): boolean {
  let n = 0;
  for (const k in facets) {
    const v = facets[k];
    const t = typeof v;
    if (t !== 'string' && t !== 'number' && t !== 'boolean') return false;
    n++;
  }
  w.ensure(5 + 5);
  const lenAt = w.pos++;
  const start = w.pos;
  if (n < 16) w.buf[w.pos++] = 0x80 | n;
  else if (n < 0x10000) {
    w.buf[w.pos++] = 0xde;
    w.buf.writeUInt16BE(n, w.pos);
    w.pos += 2;
  } else {
    w.buf[w.pos++] = 0xdf;
    w.buf.writeUInt32BE(n, w.pos);
    w.pos += 4;
  }
  for (const k in facets) {
    writeStr(w, k);
    const v = facets[k] as string | number | boolean;
    if (typeof v === 'string') writeStr(w, v);
    else if (typeof v === 'boolean') {
      w.ensure(1);
      w.buf[w.pos++] = v ? 0xc3 : 0xc2;
    } else writeNum(w, v);
  }
  // Backfill the varint length prefix; move the body when it needs more than one byte.
  const len = w.pos - start;
  if (len < 0x80) {
    w.buf[lenAt] = len;
    return true;
  }
  const extra = len < 1 << 14 ? 1 : len < 1 << 21 ? 2 : len < 1 << 28 ? 3 : 4;
  w.ensure(extra);
  w.buf.copyWithin(start + extra, start, w.pos);
  let p = lenAt;
  let x = len;
  while (x >= 0x80) {
    w.buf[p++] = (x & 0x7f) | 0x80;
    x >>>= 7;
  }
  w.buf[p] = x;
  w.pos += extra;
  return true;
}

function writeStr(w: ByteWriter, s: string): void {
  const max = s.length * 3;
  w.ensure(max + 5);
  const buf = w.buf;
  const at = w.pos;
  const head = max < 32 ? 1 : max < 0x100 ? 2 : max < 0x10000 ? 3 : 5;
  let p = at + head;
  let len = -1;
  if (s.length <= 64) {
    // Short ASCII strings: a JS loop beats a native write call.
    let i = 0;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[p + i] = c;
    }
    if (i === s.length) len = i;
  }
  if (len < 0) len = buf.write(s, p, 'utf8');
  p += len;
  if (head === 1) buf[at] = 0xa0 | len;
  else if (head === 2) {
    buf[at] = 0xd9;
    buf[at + 1] = len;
  } else if (head === 3) {
    buf[at] = 0xda;
    buf.writeUInt16BE(len, at + 1);
  } else {
    buf[at] = 0xdb;
    buf.writeUInt32BE(len, at + 1);
  }
  w.pos = p;
}

function writeNum(w: ByteWriter, v: number): void {
  w.ensure(9);
  const buf = w.buf;
  let p = w.pos;
  if (Number.isInteger(v) && v >= -0x80000000 && v <= 0xffffffff && !Object.is(v, -0)) {
    if (v >= 0) {
      if (v < 0x80) buf[p++] = v;
      else if (v < 0x100) {
        buf[p++] = 0xcc;
        buf[p++] = v;
      } else if (v < 0x10000) {
        buf[p++] = 0xcd;
        buf.writeUInt16BE(v, p);
        p += 2;
      } else {
        buf[p++] = 0xce;
        buf.writeUInt32BE(v, p);
        p += 4;
      }
    } else if (v >= -32) buf[p++] = v & 0xff;
    else if (v >= -0x80) {
      buf[p++] = 0xd0;
      buf.writeInt8(v, p++);
    } else if (v >= -0x8000) {
      buf[p++] = 0xd1;
      buf.writeInt16BE(v, p);
      p += 2;
    } else {
      buf[p++] = 0xd2;
      buf.writeInt32BE(v, p);
      p += 4;
    }
  } else {
    buf[p++] = 0xcb;
    buf.writeDoubleBE(v, p);
    p += 8;
  }
  w.pos = p;
}
