/**
 * The embedded read path against the memory backend: series in label order, exact samples for
 * random windows over head chunks, flushed and compacted segments (merged reads of many series
 * from one file), out-of-order side samples, and series added after the label ranks were built;
 * with the segment cache holding every segment, none (every chunk read from the files) or only
 * some of them, and again after a restart once the cache was filled in the background.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedBackend } from '../../backends/embedded/index.js';
import { MemoryMetricStore } from '../../backends/memory/index.js';
import { createLogger } from '../../kernel/logger.js';
import type { LabelMatcher } from '../../kernel/matchers.js';
import type { MetricSeriesInput } from '../../kernel/models.js';
import type { MetricStore } from '../../kernel/storage.js';

const T0 = Date.UTC(2024, 0, 10);
const HOUR = 3_600_000;

let seed = 7;
const rnd = () => ((seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) | 0) >>> 0) / 4294967296;

/** One hour of samples at 15 s for `n` series (float counters, integer counters, gauges). */
function hour(h: number, n: number, extraSeries = 0): MetricSeriesInput[] {
  const out: MetricSeriesInput[] = [];
  for (let s = 0; s < n + extraSeries; s++) {
    const samples = [];
    for (let t = T0 + h * HOUR + (s % 7) * 1000; t < T0 + (h + 1) * HOUR; t += 15_000) {
      const v = s % 3 === 0 ? (t - T0) / 1000 + s : s % 3 === 1 ? Math.floor((t - T0) / 7000) : Math.sin(t / 1e6 + s) * 1e6 + rnd();
      samples.push({ t, v });
    }
    out.push({ labels: { __name__: s % 2 ? 'm_total' : 'g', job: `j${s % 5}`, inst: `i${String(s).padStart(3, '0')}` }, samples });
  }
  return out;
}

/** Label-set order as the embedded store's keys (names sorted, then values). */
function byLabels(a: string, b: string): number {
  const key = (j: string) => Object.entries(JSON.parse(j) as Record<string, string>).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([k, v]) => k + '\xff' + v + '\xff').join('');
  const x = key(a);
  const y = key(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

async function collect(m: MetricStore, matchers: LabelMatcher[], mint: number, maxt: number) {
  const out: { labels: string; t: number[]; v: number[] }[] = [];
  for await (const s of m.select(matchers, mint, maxt)) {
    const l = Object.fromEntries(Object.entries(s.labels).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)));
    out.push({ labels: JSON.stringify(l), t: [...s.timestamps], v: [...s.values] });
  }
  return out;
}

async function selectMatchesMemory(metricsCacheBytes: number | undefined): Promise<void> {
  seed = 7;
  const dir = mkdtempSync(join(tmpdir(), 'lookout-select-'));
  const open = () => openEmbeddedBackend({
    dir,
    metricsCacheBytes,
    logger: createLogger('error'),
    fsync: 'interval',
    fsyncIntervalMs: 50,
    maintenanceIntervalMs: 0,
    retentionMs: { metrics: 0, logs: 0, traces: 0, events: 0 },
  });
  let emb = open();
  const mem = { metrics: new MemoryMetricStore() };
  try {
    const write = async (batch: MetricSeriesInput[]) => {
      await emb.metrics.append(batch);
      await mem.metrics.append(batch);
    };
    for (let h = 0; h < 6; h++) {
      // New series appear over time (they join the label ranks later); out-of-order samples,
      // one of them replacing an existing timestamp, go to the side list.
      await write(hour(h, 40, h * 3));
      if (h === 1) await write([{ labels: { __name__: 'g', job: 'j0', inst: 'i000' }, samples: [{ t: T0 + 2 * HOUR - 10 * 60_000 + 1, v: -1 }, { t: T0 + 2 * HOUR - 5 * 60_000, v: -2 }] }]);
      if (h === 2 || h === 4) await emb.maintenance({ flush: true, now: T0 + h * HOUR });
    }
    const matcherSets: LabelMatcher[][] = [
      [{ name: '__name__', op: '=', value: 'm_total' }],
      [{ name: 'job', op: '=~', value: 'j[13]' }],
      [{ name: '__name__', op: '!=', value: '' }],
    ];
    const check = async (label: string) => {
      for (const ms of matcherSets) {
        for (let k = 0; k < 12; k++) {
          const a = T0 + Math.floor(rnd() * 6 * HOUR);
          const b = k % 3 === 0 ? a + 5 * 60_000 : a + Math.floor(rnd() * 6 * HOUR);
          const want = await collect(mem.metrics, ms, a, b);
          const got = await collect(emb.metrics, ms, a, b);
          const what = `${label}: ${JSON.stringify(ms)} [${a - T0}, ${b - T0}]`;
          // Label order from the embedded store; the same series and samples as the reference.
          const keys = got.map((x) => x.labels);
          assert.equal(keys, [...keys].sort(byLabels), `order, ${what}`);
          want.sort((x, y) => byLabels(x.labels, y.labels));
          assert.equal(got, want, what);
        }
      }
    };
    await check('head + segments');
    await emb.maintenance({ flush: false, now: T0 + 6 * HOUR });
    await check('compacted');
    await write(hour(6, 0, 60)); // more new series after the ranks were built
    await check('new series');
    if (metricsCacheBytes === 0) assert.is(emb.metrics.residentBytes(), 0, 'no segment held in memory');
    if (metricsCacheBytes === undefined) assert.ok(emb.metrics.residentBytes() > 0, 'segments held in memory');
    await emb.close();
    emb = open();
    // After a restart the cache fills in the background; reads are the same before and after.
    await check('restarted');
    for (let i = 0; i < 100 && metricsCacheBytes !== 0 && emb.metrics.residentBytes() === 0; i++) await new Promise((r) => setTimeout(r, 20));
    if (metricsCacheBytes !== 0) assert.ok(emb.metrics.residentBytes() > 0, 'cache filled after restart');
    if (metricsCacheBytes !== undefined) assert.ok(emb.metrics.residentBytes() <= metricsCacheBytes, 'cache within its budget');
    if (metricsCacheBytes === 60_000) assert.ok(emb.metrics.residentBytes() < emb.metrics.stats().segmentBytes / 2, 'only some segments held');
    await check('restarted, cache filled');
  } finally {
    await emb.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('select matches the memory backend over head, segments and compacted segments', () => selectMatchesMemory(undefined));
test('... with the segment cache off (every chunk read from the files)', () => selectMatchesMemory(0));
test('... with a segment cache smaller than the segments', () => selectMatchesMemory(60_000));

test.run();
