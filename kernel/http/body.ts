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

/**
 * Reads the raw (still encoded) body, refusing more than `limit` bytes. With a Content-Length the
 * body is copied into one buffer of that size as it arrives (a body that comes in one chunk is
 * that chunk); without one, the chunks are joined at the end. Event listeners rather than an
 * async iterator: no promise per chunk.
 */
export function readRawBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declaredHeader = req.headers['content-length'];
  const declared = declaredHeader === undefined ? -1 : Number(declaredHeader);
  if (declared > limit) {
    req.resume();
    return Promise.reject(tooLarge(`request body of ${declaredHeader} bytes exceeds the limit of ${limit} bytes`));
  }
  return new Promise<Buffer>((resolve, reject) => {
    let first: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    // Filled in place when the length is declared (Node's parser never delivers more than it).
    let into: Buffer | undefined;
    let size = 0;
    const done = (err: Error | undefined, body?: Buffer) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (err) reject(err);
      else resolve(body!);
    };
    const onData = (b: Buffer) => {
      const at = size;
      size += b.length;
      if (size > limit) {
        req.resume();
        done(tooLarge(`request body exceeds the limit of ${limit} bytes`));
        return;
      }
      if (first === undefined) {
        first = b;
        return;
      }
      if (declared >= size) {
        if (into === undefined) {
          into = Buffer.allocUnsafe(declared);
          first.copy(into, 0);
        }
        b.copy(into, at);
        return;
      }
      (chunks ??= [first]).push(b);
    };
    const onEnd = () => {
      if (first === undefined) done(undefined, Buffer.alloc(0));
      else if (into !== undefined) done(undefined, size === into.length ? into : into.subarray(0, size));
      else if (chunks === undefined) done(undefined, first);
      else done(undefined, Buffer.concat(chunks, size));
    };
    const onError = (e: Error) => done(e);
    // A request destroyed before its end (the client went away) rejects, as the iterator did.
    const onClose = () => done(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
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

/** Where a snappy body is decompressed: a buffer of at least `length` bytes (see decodeBody). */
export type BodyAllocator = (length: number) => Buffer;

async function decodeOne(buf: Buffer, enc: ContentEncoding, limit: number, alloc?: BodyAllocator): Promise<Buffer> {
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
        return snappyUncompress(buf, limit, alloc);
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
export function snappyUncompress(buf: Uint8Array, limit: number, alloc?: BodyAllocator): Buffer {
  // The preamble's declared length is checked before the output is allocated.
  return snappyBlock(buf, limit, () => tooLarge(`decompressed body exceeds the limit of ${limit} bytes`), alloc);
}

/**
 * Decodes a body according to its Content-Encoding header (applied encodings in order).
 * Unknown encodings are 415; malformed compressed data is 400; over the limit is 413.
 * `alloc` (optional) provides the memory a snappy body is decompressed into, when snappy is the
 * only encoding: a caller that is done with the body before the next request can reuse it.
 */
export async function decodeBody(raw: Buffer, contentEncoding: string | undefined, limit: number, alloc?: BodyAllocator): Promise<Buffer> {
  const encs = parseEncodings(contentEncoding);
  if (encs.length === 0) return raw;
  if (encs.length === 1) return decodeOne(raw, encs[0]!, limit, alloc);
  let out = raw;
  for (let i = encs.length - 1; i >= 0; i--) out = await decodeOne(out, encs[i]!, limit);
  return out;
}

export function contentEncodings(header: string | undefined): ContentEncoding[] {
  return parseEncodings(header);
}
