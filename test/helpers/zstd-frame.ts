/**
 * Minimal zstd frame writer for tests (Node 20 has no zstd encoder): raw blocks carry the data
 * uncompressed, RLE blocks make compression bombs. Frames are valid per RFC 8878.
 */
const MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
const MAX_BLOCK = 128 * 1024;

function blockHeader(last: boolean, type: 0 | 1, size: number): Buffer {
  const v = (last ? 1 : 0) | (type << 1) | (size << 3);
  return Buffer.from([v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff]);
}

/** A single-segment frame with the content size declared, made of raw blocks. */
export function zstdFrame(data: Uint8Array): Buffer {
  const fcs = Buffer.alloc(4);
  fcs.writeUInt32LE(data.length);
  const parts: Buffer[] = [MAGIC, Buffer.from([0xa0]), fcs];
  if (data.length === 0) parts.push(blockHeader(true, 0, 0));
  for (let off = 0; off < data.length; off += MAX_BLOCK) {
    const chunk = data.subarray(off, Math.min(off + MAX_BLOCK, data.length));
    parts.push(blockHeader(off + MAX_BLOCK >= data.length, 0, chunk.length), Buffer.from(chunk));
  }
  return Buffer.concat(parts);
}

/** A frame without a declared size that expands `blocks` × 128 KiB of one byte: a bomb. */
export function zstdBomb(blocks: number, byte = 0x41): Buffer {
  const parts: Buffer[] = [MAGIC, Buffer.from([0x00, 0x38])];
  for (let i = 0; i < blocks; i++) parts.push(blockHeader(i === blocks - 1, 1, MAX_BLOCK), Buffer.from([byte]));
  return Buffer.concat(parts);
}
