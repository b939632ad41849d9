/**
 * Packed integer chunks (written by compaction): exact round trips for every kind of series
 * (jittered and irregular scrapes, counters with resets, rare gauge changes, wide values,
 * decimals, windows cutting a chunk), and segments written in the earlier chunk encodings (Gorilla XOR,
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
import { decimalScale, decodePackedChunk, encodePackedChunk } from '../../backends/embedded/packed-chunk.js';
import { createLogger } from '../../kernel/logger.js';

let seed = 11;
const rnd = () => ((seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) | 0) >>> 0) / 4294967296;

/** `n` samples of one of nine shapes of series (the ninth: decimals with two digits). */
function series(kind: number, n: number): { ts: Float64Array; vs: Float64Array } {
  if (kind === 8) {
    const ts = new Float64Array(n);
    const vs = new Float64Array(n);
    let c = Math.floor(rnd() * 1e9) - 5e8;
    for (let i = 0; i < n; i++) {
      ts[i] = 1_700_000_000_000 + i * 15_000;
      vs[i] = c / 100; // as a scrape parses "1234.56"
      c += rnd() < 0.1 ? -Math.floor(rnd() * 1e6) : Math.floor(rnd() * 500);
    }
    return { ts, vs };
  }
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
    const kind = iter % 9;
    const { ts, vs } = series(kind, n);
    const scale = decimalScale(vs, 0, n);
    assert.ok(kind === 8 ? scale >= 0 && scale <= 2 : scale === 0, `iteration ${iter}: scale ${scale}`);
    const buf = encodePackedChunk(ts, vs, 0, n, scale);
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

test('values that are not short decimals are left to Gorilla chunks', () => {
  const at = (xs: number[]) => decimalScale(Float64Array.from(xs), 0, xs.length);
  assert.is(at([1, 2, 3]), 0);
  assert.is(at([1.5, 2.25, 3]), 2);
  assert.is(at([0.1 + 0.2]), -1);
  assert.is(at([1, NaN]), -1);
  assert.is(at([1, -0]), -1);
  assert.is(at([1, Infinity]), -1);
  assert.is(at([2 ** 52]), -1);
  assert.is(at([Math.PI]), -1);
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

test('compaction packs decimal and integer series and select returns them exactly', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-packed-'));
  try {
    const T0 = Date.UTC(2024, 0, 10);
    const b = openEmbeddedBackend({ dir, logger: createLogger('error'), maintenanceIntervalMs: 0 });
    try {
      const want = new Map<string, { t: number[]; v: number[] }>();
      const shapes: Array<(i: number) => number> = [
        (i) => (123_456 + i * 37) / 100, // CPU seconds as scraped
        (i) => Math.floor(i / 40) * 0.5, // a gauge in halves
        (i) => 1_000 + i * 3, // an integer counter
        (i) => (i % 97 === 50 ? NaN : i / 1000), // a NaN in between: that chunk stays Gorilla
        (i) => Math.sin(i) * 1e3, // floats
      ];
      // 6 hours at 15 s: several 2-hour head segments, compacted into one day segment.
      for (let h = 0; h < 6; h++) {
        await b.metrics.append(
          shapes.map((f, k) => {
            const samples = [];
            for (let i = h * 240; i < (h + 1) * 240; i++) samples.push({ t: T0 + i * 15_000 + (i % 3 === 0 ? 1 : 0), v: f(i) });
            const w = want.get(`s${k}`) ?? { t: [], v: [] };
            for (const x of samples) {
              w.t.push(x.t);
              w.v.push(x.v);
            }
            want.set(`s${k}`, w);
            return { labels: { __name__: `s${k}` }, samples };
          }),
        );
        await b.maintenance({ flush: true, now: T0 + (h + 1) * 3_600_000 });
      }
      await b.maintenance({ flush: false, now: T0 + 86_400_000 });
      assert.is(b.metrics.stats().segments, 1);
      for (const [from, to] of [
        [T0, T0 + 86_400_000],
        [T0 + 4_000_000, T0 + 4_300_000],
        [T0 + 7_199_000, T0 + 14_400_001],
      ] as const) {
        const got = new Map<string, { t: number[]; v: number[] }>();
        for await (const s of b.metrics.select([{ name: '__name__', op: '=~', value: 's.*' }], from, to)) {
          got.set(s.labels.__name__!, { t: [...s.timestamps], v: [...s.values] });
        }
        for (const [name, w] of want) {
          const idx = [...w.t.keys()].filter((i) => w.t[i]! >= from && w.t[i]! <= to);
          const g = got.get(name)!;
          assert.equal(g.t, idx.map((i) => w.t[i]!), `${name} timestamps in [${from}, ${to}]`);
          assert.ok(
            idx.every((i, j) => Object.is(g.v[j], w.v[i])),
            `${name} values in [${from}, ${to}]`,
          );
        }
      }
    } finally {
      await b.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
