/**
 * The remote-write hot path's hand-written parts: the snappy block decoder (round trips against
 * snappyjs' compressor; malformed blocks are 400 over HTTP, never a crash or a partly garbage
 * body) and the decoder's fast sample path (same result as the general path, including
 * staleness markers, negative and missing timestamps, and label sets served from the cache).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import snappy from 'snappyjs';
import { snappyUncompress, SnappyError } from '../../kernel/http/snappy.js';
import { STALE_NAN, STALE_NAN_BITS_HI, STALE_NAN_BITS_LO, isStaleMarker } from '../../kernel/models.js';
import { decodeWriteRequestV1 } from '../../plugins/ingest-remote-write/decode-v1.js';
import { LabelSetCache } from '../../plugins/ingest-remote-write/label-cache.js';
import { encodeWriteRequest } from '../helpers/remote-write.js';
import { INGEST_KEY, startTestServer } from '../helpers/server.js';

const tooLarge = () => new Error('too large');

function pseudoRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

test('snappy: round trips of compressible and incompressible data, small and large', () => {
  const rnd = pseudoRandom(7);
  for (let k = 0; k < 300; k++) {
    const n = k % 25 === 0 ? 100_000 + Math.floor(rnd() * 200_000) : Math.floor(rnd() * 4000);
    const b = Buffer.alloc(n);
    const alphabet = 1 + Math.floor(rnd() * 30);
    for (let i = 0; i < n; i++) b[i] = rnd() < 0.3 && i > 70 ? b[i - 1 - Math.floor(rnd() * 70)]! : 97 + Math.floor(rnd() * alphabet);
    const out = snappyUncompress(Buffer.from(snappy.compress(b)), 1 << 30, tooLarge);
    assert.ok(out.equals(b), `round trip ${k} (${n} bytes)`);
  }
});

test('snappy: copies of arbitrary bytes, NaN bit patterns included, are exact', () => {
  const rnd = pseudoRandom(13);
  // Words that are NaNs as float64 (quiet, signalling, the staleness marker, negative), +0/-0
  // and denormals, repeated at varying offsets so the decoder copies them as matches.
  const words = [
    [0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x7f],
    [0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x7f],
    [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0xff],
    [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xf4, 0x7f],
    [0, 0, 0, 0, 0, 0, 0, 0x80],
    [0, 0, 0, 0, 0, 0, 0, 0],
    [1, 0, 0, 0, 0, 0, 0, 0],
  ];
  for (let k = 0; k < 200; k++) {
    const parts: number[] = [];
    const n = 200 + Math.floor(rnd() * 5000);
    while (parts.length < n) {
      if (rnd() < 0.5) parts.push(...words[Math.floor(rnd() * words.length)]!);
      else parts.push(Math.floor(rnd() * 256));
      if (rnd() < 0.3 && parts.length > 80) {
        const from = parts.length - 8 - Math.floor(rnd() * 70);
        const len = 8 + Math.floor(rnd() * 60);
        for (let i = 0; i < len; i++) parts.push(parts[from + i]!);
      }
    }
    const b = Buffer.from(parts);
    const out = snappyUncompress(Buffer.from(snappy.compress(b)), 1 << 30, tooLarge);
    assert.ok(out.equals(b), `round trip ${k} (${b.length} bytes)`);
  }
  const stale = Buffer.alloc(8);
  stale.writeUInt32LE(STALE_NAN_BITS_LO, 0);
  stale.writeUInt32LE(STALE_NAN_BITS_HI, 4);
  const b = Buffer.concat(Array.from({ length: 64 }, (_, i) => (i % 3 === 0 ? Buffer.from([i]) : stale)));
  assert.ok(snappyUncompress(Buffer.from(snappy.compress(b)), 1 << 30, tooLarge).equals(b), 'staleness markers');
});

test('snappy: corrupt and truncated blocks raise SnappyError; the declared size limit applies first', () => {
  const rnd = pseudoRandom(11);
  const src = Buffer.alloc(20_000);
  for (let i = 0; i < src.length; i++) src[i] = 97 + (i % 13) + (i % 101 === 0 ? 5 : 0);
  const c = Buffer.from(snappy.compress(src));
  for (let k = 0; k < 500; k++) {
    const x = Buffer.from(c);
    x[Math.floor(rnd() * x.length)] ^= 1 << Math.floor(rnd() * 8);
    try {
      const out = snappyUncompress(x, 1 << 30, tooLarge);
      assert.is(out.length, x.length > 0 ? out.length : 0); // a flip that still decodes is fine
    } catch (e) {
      assert.ok(e instanceof SnappyError || (e as Error).message === 'too large', String(e));
    }
    const cut = c.subarray(0, Math.floor(rnd() * (c.length - 1)));
    assert.throws(() => snappyUncompress(cut, 1 << 30, tooLarge), (e: unknown) => e instanceof SnappyError);
  }
  assert.throws(() => snappyUncompress(c, 100, tooLarge), (e: unknown) => (e as Error).message === 'too large');
  // A preamble promising more than the stream produces.
  const short = Buffer.concat([Buffer.from([0x10]), Buffer.from([0x0c]), Buffer.from('abcd')]); // declares 16, has 4
  assert.throws(() => snappyUncompress(short, 1 << 30, tooLarge), (e: unknown) => e instanceof SnappyError);
  // A copy reaching before the start of the output.
  const badCopy = Buffer.from([0x08, 0x00, 0x61, 0x0d, 0x05]); // literal "a", then copy offset 5
  assert.throws(() => snappyUncompress(badCopy, 1 << 30, tooLarge), (e: unknown) => e instanceof SnappyError);
});

test('snappy: overlapping copies (offset shorter than the length) repeat the pattern', () => {
  for (let off = 1; off <= 9; off++) {
    for (const l of [4, 5, 11, 23, 64, 200]) {
      const lit = Buffer.from('abcdefghi'.slice(0, off));
      // preamble, literal of `off` bytes, then a 2-byte-offset copy (kind 2) of `l` bytes at offset `off`.
      const total = off + l;
      const pre: number[] = [];
      for (let v = total; ; v >>>= 7) {
        if (v < 0x80) {
          pre.push(v);
          break;
        }
        pre.push((v & 0x7f) | 0x80);
      }
      const parts = [Buffer.from(pre), Buffer.from([(off - 1) << 2]), lit];
      for (let left = l; left > 0; left -= 64) {
        const n = Math.min(64, left);
        parts.push(Buffer.from([((n - 1) << 2) | 2, off, 0]));
      }
      const out = snappyUncompress(Buffer.concat(parts), 1 << 20, tooLarge);
      let want = '';
      for (let i = 0; i < total; i++) want += lit.toString()[i % off];
      assert.is(out.toString(), want, `offset ${off} length ${l}`);
    }
  }
});

test('fast sample path equals the general path (stale markers, negative/zero timestamps, cache hits)', () => {
  const series = [
    { labels: { __name__: 'a', job: 'x' }, samples: [{ t: 1_700_000_000_123, v: 1.5 }, { t: 1_700_000_001_123, v: STALE_NAN }] },
    { labels: { __name__: 'b', job: 'x' }, samples: [{ t: -5000, v: 2 }] }, // pre-1970: 10-byte varint
    { labels: { __name__: 'c', job: 'x' }, samples: [{ t: 0, v: 3 }] }, // timestamp field omitted
    { labels: { __name__: 'd', job: 'x' }, samples: [{ t: 1, v: -0 }, { t: 2 ** 52, v: Infinity }] },
  ];
  const body = encodeWriteRequest(series);
  const cache = new LabelSetCache();
  for (const pass of [1, 2]) {
    const d = decodeWriteRequestV1(body, undefined, cache);
    assert.is(d.series.length, 4, `pass ${pass}`);
    assert.equal(d.series[0]!.labels, { __name__: 'a', job: 'x' });
    assert.is(d.series[0]!.samples[0]!.t, 1_700_000_000_123);
    assert.is(d.series[0]!.samples[0]!.v, 1.5);
    assert.ok(isStaleMarker(d.series[0]!.samples[1]!.v), 'staleness marker bits kept');
    assert.is(d.series[1]!.samples[0]!.t, -5000);
    assert.is(d.series[2]!.samples[0]!.t, 0);
    assert.ok(Object.is(d.series[3]!.samples[0]!.v, -0));
    assert.is(d.series[3]!.samples[1]!.t, 2 ** 52);
    assert.is(d.series[3]!.samples[1]!.v, Infinity);
  }
});

test('malformed snappy bodies are 400 over HTTP and write nothing', async () => {
  const srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
  try {
    const good = Buffer.from(snappy.compress(encodeWriteRequest([{ labels: { __name__: 'hp_ok' }, samples: [{ t: Date.now(), v: 1 }] }])));
    const bodies = [good.subarray(0, good.length - 3), Buffer.from([0x10, 0x0c, 0x61, 0x62, 0x63, 0x64]), Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x01])];
    for (const body of bodies) {
      const res = await fetch(srv.url + '/ingester/write', {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', authorization: `Bearer ${INGEST_KEY}` },
      });
      assert.is(res.status, 400, await res.text());
    }
    const res = await fetch(srv.url + '/ingester/write', {
      method: 'POST',
      body: good,
      headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', authorization: `Bearer ${INGEST_KEY}` },
    });
    assert.is(res.status, 204);
  } finally {
    await srv.stop();
  }
});

test.run();
