/**
 * Packed integer chunks (written by compaction): exact round trips for every kind of series
 * (jittered and irregular scrapes, counters with resets, rare gauge changes, wide values,
 * windows cutting a chunk), and segments written in the earlier chunk encodings (Gorilla XOR,
 * integer delta-of-delta) still read back exactly after an upgrade; corrupt bytes do not throw.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChunkEncoder, encodeIntChunk, ENC_INT } from '../../backends/embedded/chunk.js';
import { writeFileAtomic } from '../../backends/embedded/files.js';
import { openEmbeddedBackend } from '../../backends/embedded/index.js';
import { MetricSegment, type ChunkData } from '../../backends/embedded/metric-segment.js';
import { decodePackedChunk, encodePackedChunk } from '../../backends/embedded/packed-chunk.js';
import { createLogger } from '../../kernel/logger.js';

let seed = 11;
const rnd = () => ((seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) | 0) >>> 0) / 4294967296;

/** `n` samples of one of eight shapes of series. */
function series(kind: number, n: number): { ts: Float64Array; vs: Float64Array } {
  const ts = new Float64Array(n);
  const vs = new Float64Array(n);
  let t = Math.floor(rnd() * 2 ** 41) * (kind === 7 ? -1 : 1);
  let v = Math.floor((rnd() - 0.5) * 2 ** 40);
  for (let i = 0; i < n; i++) {
    ts[i] = t;
    vs[i] = v;
    const step =
      kind === 0 ? 15_000 + (i % 3 === 0 ? 1 : 0) // 1 ms jitter
      : kind === 1 ? 1 + Math.floor(rnd() * 2 ** 30) // anything
      : kind === 2 ? (rnd() < 0.05 ? 60_000 : 15_000) // missed scrapes
      : kind === 6 ? 15_000 // exact
      : 1 + Math.floor(rnd() * 100);
    t += step;
    v +=
      kind === 3 ? Math.floor((rnd() - 0.5) * 2 ** 45) // wide
      : kind === 4 ? (rnd() < 0.05 ? -v : Math.floor(rnd() * 10)) // counter with resets
      : kind === 5 ? 0 // constant
      : rnd() < 0.05 ? (rnd() < 0.5 ? -1 : 1) : 0; // rarely changing gauge
    if (Math.abs(v) > 2 ** 50) v = 0;
  }
  return { ts, vs };
}

test('packed chunks round-trip exactly, whole and cut by a window', () => {
  for (let iter = 0; iter < 6000; iter++) {
    const n = 1 + Math.floor(rnd() * 600);
    const { ts, vs } = series(iter % 8, n);
    const buf = encodePackedChunk(ts, vs, 0, n);
    // Decode at an offset inside a shared buffer, as chunks read from a segment file are.
    const pad = Math.floor(rnd() * 7);
    const host = new Uint8Array(pad + buf.length + Math.floor(rnd() * 9));
    host.set(buf, pad);
    const at = iter % 5;
    const ot = new Float64Array(at + n);
    const ov = new Float64Array(at + n);
    // Window bounds: a sample's timestamp, anywhere near one (also before/after the chunk), or open.
    const bound = (open: number) => {
      const x = rnd();
      const t = ts[Math.floor(rnd() * n)]!;
      return x < 0.3 ? t : x < 0.6 ? t + Math.floor((rnd() - 0.5) * 40_000) : open;
    };
    const lo = bound(-Infinity);
    const hi = bound(Infinity);
    const end = decodePackedChunk(host.subarray(pad, pad + buf.length), n, ot, ov, at, lo, hi);
    const want: number[] = [];
    for (let i = 0; i < n; i++) if (ts[i]! >= lo && ts[i]! <= hi) want.push(i);
    assert.is(end - at, want.length, `iteration ${iter}: sample count`);
    for (let k = 0; k < want.length; k++) {
      assert.is(ot[at + k], ts[want[k]!]!, `iteration ${iter}: t[${k}]`);
      assert.ok(Object.is(ov[at + k], vs[want[k]!]!), `iteration ${iter}: v[${k}]`);
    }
  }
});

test('corrupt chunk bytes decode to something, without throwing or hanging', () => {
  for (let iter = 0; iter < 5000; iter++) {
    const n = 1 + Math.floor(rnd() * 500);
    const buf = new Uint8Array(Math.floor(rnd() * 200));
    for (let i = 0; i < buf.length; i++) buf[i] = Math.floor(rnd() * 256);
    const end = decodePackedChunk(buf, n, new Float64Array(n), new Float64Array(n), 0);
    assert.ok(end >= 0 && end <= n);
  }
});

test('a regular scrape packs into far fewer bytes than Gorilla chunks', () => {
  const n = 120;
  const ts = new Float64Array(n);
  const vs = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    ts[i] = 1_700_000_000_000 + i * 15_000 + (i % 3 === 0 ? 1 : 0);
    vs[i] = 1000 + i * 3 + (i % 4);
  }
  const gorilla = new ChunkEncoder();
  for (let i = 0; i < n; i++) gorilla.append(ts[i]!, vs[i]!);
  const packed = encodePackedChunk(ts, vs, 0, n).length;
  assert.ok(packed * 2 < gorilla.bytes().length, `packed ${packed} B, Gorilla ${gorilla.bytes().length} B`);
});

test('format 2 segments (earlier chunk encodings) still read back exactly', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-packed-'));
  try {
    const T0 = Date.UTC(2024, 0, 10);
    const segDir = join(dir, 'metrics', 'segments');
    mkdirSync(segDir, { recursive: true });
    const n = 480;
    const ts = new Float64Array(n);
    const ints = new Float64Array(n);
    const floats = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      ts[i] = T0 + i * 15_000 + (i % 3 === 0 ? 1 : 0);
      ints[i] = 100 + i * 7;
      floats[i] = Math.sin(i / 10) * 1e3;
    }
    const intChunks: ChunkData[] = [];
    const xorChunks: ChunkData[] = [];
    for (let from = 0; from < n; from += 120) {
      intChunks.push({ mint: ts[from]!, maxt: ts[from + 119]!, count: 120, data: encodeIntChunk(ts, ints, from, from + 120), enc: ENC_INT });
      const x = new ChunkEncoder();
      for (let i = from; i < from + 120; i++) x.append(ts[i]!, floats[i]!);
      xorChunks.push({ mint: x.mint, maxt: x.maxt, count: x.count, data: x.bytes() });
    }
    const path = join(segDir, '0000000001.mseg');
    const seg = MetricSegment.fromInput(1, path, [
      { labels: { __name__: 'old_int' }, chunks: intChunks, side: null },
      { labels: { __name__: 'old_float' }, chunks: xorChunks, side: null },
    ]);
    // As a format 2 file (the layout is the same, only the magic strings differ).
    const bytes = Buffer.concat(seg.encode());
    bytes.write('LKMSEG02', 0, 'latin1');
    bytes.write('LKMEND01', bytes.length - 8, 'latin1');
    writeFileAtomic(path, [bytes]);
    const b = openEmbeddedBackend({ dir, logger: createLogger('error'), maintenanceIntervalMs: 0 });
    try {
      const read = async (from: number, to: number) => {
        const out = new Map<string, { t: number[]; v: number[] }>();
        for await (const s of b.metrics.select([{ name: '__name__', op: '=~', value: 'old_.*' }], from, to)) {
          out.set(s.labels.__name__!, { t: [...s.timestamps], v: [...s.values] });
        }
        return out;
      };
      const check = async (from: number, to: number) => {
        const got = await read(from, to);
        const idx = [...ts.keys()].filter((i) => ts[i]! >= from && ts[i]! <= to);
        assert.equal(got.get('old_int'), { t: idx.map((i) => ts[i]!), v: idx.map((i) => ints[i]!) });
        assert.equal(got.get('old_float'), { t: idx.map((i) => ts[i]!), v: idx.map((i) => floats[i]!) });
      };
      await check(T0, T0 + 86_400_000);
      await check(T0 + 1_000_000, T0 + 4_000_000);
    } finally {
      await b.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
