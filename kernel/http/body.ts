/**
 * Request bodies: read with a size limit, then decoded per Content-Encoding with a limit on the
 * decompressed size, so a compression bomb is a 413 and never an out-of-memory.
 */
import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { Decompress as ZstdDecompress } from 'fzstd';
import { LookoutError, badRequest, tooLarge } from '../errors.js';
import { snappyUncompress as snappyBlock } from './snappy.js';

const gunzip = promisify(zlib.gunzip) as (b: Buffer, o: zlib.ZlibOptions) => Promise<Buffer>;
const inflate = promisify(zlib.inflate) as (b: Buffer, o: zlib.ZlibOptions) => Promise<Buffer>;
const inflateRaw = promisify(zlib.inflateRaw) as (b: Buffer, o: zlib.ZlibOptions) => Promise<Buffer>;

export type ContentEncoding = 'identity' | 'gzip' | 'deflate' | 'zstd' | 'snappy';
export const SUPPORTED_ENCODINGS: readonly ContentEncoding[] = ['identity', 'gzip', 'deflate', 'zstd', 'snappy'];

/** Reads the raw (still encoded) body, refusing more than `limit` bytes. */
export async function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    req.resume();
    throw tooLarge(`request body of ${declared} bytes exceeds the limit of ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > limit) {
      req.resume();
      throw tooLarge(`request body exceeds the limit of ${limit} bytes`);
    }
    chunks.push(b);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

function parseEncodings(header: string | undefined): ContentEncoding[] {
  if (!header) return [];
  const out: ContentEncoding[] = [];
  for (const raw of header.split(',')) {
    const e = raw.trim().toLowerCase();
    if (e === '' || e === 'identity') continue;
    if (e === 'x-gzip') out.push('gzip');
    else if (e === 'gzip' || e === 'deflate' || e === 'zstd' || e === 'snappy') out.push(e);
    else throw new LookoutError('bad_request', `unsupported Content-Encoding "${e}"`);
  }
  return out;
}

function isTooLarge(e: unknown): boolean {
  return (e as { code?: string })?.code === 'ERR_BUFFER_TOO_LARGE' || e instanceof RangeError;
}

async function decodeOne(buf: Buffer, enc: ContentEncoding, limit: number): Promise<Buffer> {
  const tooBig = () => tooLarge(`decompressed body exceeds the limit of ${limit} bytes`);
  switch (enc) {
    case 'identity':
      return buf;
    case 'gzip':
      try {
        return await gunzip(buf, { maxOutputLength: limit });
      } catch (e) {
        if (isTooLarge(e)) throw tooBig();
        throw badRequest(`invalid gzip body: ${(e as Error).message}`);
      }
    case 'deflate':
      // HTTP "deflate" is zlib-wrapped, but many clients send raw deflate; accept both.
      try {
        return await inflate(buf, { maxOutputLength: limit });
      } catch (e) {
        if (isTooLarge(e)) throw tooBig();
        try {
          return await inflateRaw(buf, { maxOutputLength: limit });
        } catch (e2) {
          if (isTooLarge(e2)) throw tooBig();
          throw badRequest(`invalid deflate body: ${(e as Error).message}`);
        }
      }
    case 'zstd': {
      checkZstdFrameHeader(buf, limit);
      const parts: Uint8Array[] = [];
      let size = 0;
      let over = false;
      const d = new ZstdDecompress((chunk) => {
        size += chunk.length;
        if (size > limit) {
          over = true;
          throw tooBig();
        }
        parts.push(chunk);
      });
      try {
        d.push(buf, true);
      } catch (e) {
        if (over) throw tooBig();
        throw badRequest(`invalid zstd body: ${(e as Error).message}`);
      }
      return Buffer.concat(parts, size);
    }
    case 'snappy': {
      try {
        return snappyUncompress(buf, limit);
      } catch (e) {
        if (e instanceof LookoutError) throw e;
        throw badRequest(`invalid snappy body: ${(e as Error).message}`);
      }
    }
  }
}

const ZSTD_MAGIC = 0xfd2fb528;
const ZSTD_MAX_WINDOW = 128 * 1024 * 1024;

/**
 * Refuses a zstd frame before decoding when its header declares more content than the limit or
 * a window the decoder would have to allocate beyond a sane bound.
 */
function checkZstdFrameHeader(buf: Buffer, limit: number): void {
  if (buf.length < 6 || buf.readUInt32LE(0) !== ZSTD_MAGIC) return; // the decoder reports bad data
  const fhd = buf[4]!;
  const fcsFlag = fhd >> 6;
  const singleSegment = (fhd >> 5) & 1;
  const dictIdSize = [0, 1, 2, 4][fhd & 3]!;
  let pos = 5;
  let window = 0;
  if (!singleSegment) {
    const wd = buf[pos++]!;
    const windowLog = 10 + (wd >> 3);
    const base = 2 ** windowLog;
    window = base + (base / 8) * (wd & 7);
  }
  pos += dictIdSize;
  const fcsSize = fcsFlag === 0 ? (singleSegment ? 1 : 0) : [0, 2, 4, 8][fcsFlag]!;
  let fcs: number | undefined;
  if (fcsSize > 0 && pos + fcsSize <= buf.length) {
    if (fcsSize === 1) fcs = buf[pos]!;
    else if (fcsSize === 2) fcs = buf.readUInt16LE(pos) + 256;
    else if (fcsSize === 4) fcs = buf.readUInt32LE(pos);
    else fcs = Number(buf.readBigUInt64LE(pos));
  }
  if (fcs !== undefined && fcs > limit) throw tooLarge(`decompressed body exceeds the limit of ${limit} bytes`);
  if (singleSegment && fcs !== undefined) window = fcs;
  if (window > ZSTD_MAX_WINDOW) throw badRequest(`zstd window of ${window} bytes is larger than ${ZSTD_MAX_WINDOW}`);
}

/** Snappy block format (as Prometheus remote write uses), refusing outputs above `limit`. */
export function snappyUncompress(buf: Uint8Array, limit: number): Buffer {
  // The preamble's declared length is checked before the output is allocated.
  return snappyBlock(buf, limit, () => tooLarge(`decompressed body exceeds the limit of ${limit} bytes`));
}

/**
 * Decodes a body according to its Content-Encoding header (applied encodings in order).
 * Unknown encodings are 415; malformed compressed data is 400; over the limit is 413.
 */
export async function decodeBody(raw: Buffer, contentEncoding: string | undefined, limit: number): Promise<Buffer> {
  const encs = parseEncodings(contentEncoding);
  let out = raw;
  for (let i = encs.length - 1; i >= 0; i--) out = await decodeOne(out, encs[i]!, limit);
  return out;
}

export function contentEncodings(header: string | undefined): ContentEncoding[] {
  return parseEncodings(header);
}
