/**
 * SvcQL figures of issue 7 (`npm run bench -- logs [--backend memory|embedded] [--lines N]`):
 * N generated log lines (50 services, 4 levels, 200-byte messages, 5 facets) spread over 24 h,
 * ingested through the kernel's ingest pipeline into the chosen storage backend, then:
 *   1. `* | count by service, level` over everything (lines/s), and the RSS it adds over idle;
 *   2. `service=api level=error "timeout"` over 24 h;
 *   3. `* | timeslice 1m | count by _timeslice` over 24 h;
 *   4. the first page (100 records) of getLogsWithSvcQl for `*`.
 * Prints a table and a final JSON line.
 *
 * The embedded data set is generated once and kept under .tmp-bench/ (gitignored): the first run
 * ingests, stops (the head is flushed into segments) and reopens the store, later runs reopen
 * it directly. `--fresh` ingests into a temporary directory and measures without reopening
 * (part of the data then sits in the in-memory head).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../kernel/config.js';
import type { FacetValue, Labels, LogRecord } from '../../kernel/models.js';
import { startLookout, type RunningLookout } from '../../kernel/server.js';
import { Tokens } from '../../kernel/services.js';
import { hasColumnarScan, pageSvcQLRecords, parseSvcQL, runSvcQLTable } from '../../plugins/query-svcql/index.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const LINES = Number(arg('lines') ?? 10_000_000);
const requested = arg('backend');
const FRESH = process.argv.includes('--fresh');
/** Runs per query (`--runs N`, default 5): figures are medians, first runs are reported too. */
const RUNS = Math.max(1, Number(arg('runs') ?? 5));
/** Bumped when the generated data or the segment format changes. */
const DATA_VERSION = 'f4';
const DAY_NS = 86_400n * 1_000_000_000n;
const START_NS = 1763769600n * 1_000_000_000n; // 2025-11-22T00:00:00Z

const SERVICES = Array.from({ length: 50 }, (_, i) => (i === 0 ? 'api' : `svc-${String(i).padStart(2, '0')}`));
const LEVELS = ['debug', 'info', 'warn', 'error'];
const HOSTS = Array.from({ length: 20 }, (_, i) => `host-${i}`);
const WORDS = ['request', 'served', 'user', 'cache', 'miss', 'upstream', 'timeout', 'retry', 'order', 'payment', 'db', 'query', 'slow', 'ok'];

/** Deterministic PRNG (mulberry32) so runs are comparable. */
function rng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function message(r: () => number): string {
  let s = '';
  while (s.length < 200) s += WORDS[Math.floor(r() * WORDS.length)] + ' ';
  return s.slice(0, 200);
}

async function ingest(lookout: RunningLookout): Promise<void> {
  const r = rng(42);
  // Pools keep the generator's own memory small; the store sees ordinary records.
  const messages = Array.from({ length: 4096 }, () => message(r));
  const labelSets = new Map<string, Labels>();
  const pipeline = lookout.kernel.get(Tokens.Ingest);
  const batchSize = 10_000;
  const step = DAY_NS / BigInt(LINES);
  for (let base = 0; base < LINES; base += batchSize) {
    const logs: LogRecord[] = [];
    for (let i = base; i < Math.min(LINES, base + batchSize); i++) {
      const service = SERVICES[Math.floor(r() * SERVICES.length)]!;
      const level = LEVELS[Math.floor(r() * LEVELS.length)]!;
      const host = HOSTS[i % HOSTS.length]!;
      const key = `${service}/${level}/${host}`;
      let labels = labelSets.get(key);
      if (!labels) labelSets.set(key, (labels = { host, level, service, svc_stream: 'logs' }));
      const facets: Record<string, FacetValue> = {
        status: [200, 200, 200, 404, 500][i % 5]!,
        duration_ms: Math.floor(r() * 1000),
        user: `u${i % 1000}`,
        retry: i % 7 === 0,
        bytes: Math.floor(r() * 100_000),
      };
      logs.push({ timestampNs: START_NS + BigInt(i) * step, message: messages[i % messages.length]!, labels, facets });
    }
    await pipeline.write({ logs });
  }
}

function rssMb(): number {
  return process.memoryUsage().rss / 1048576;
}

async function timedOnce<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T; peakRssMb: number }> {
  let peak = rssMb();
  const timer = setInterval(() => (peak = Math.max(peak, rssMb())), 5);
  const t0 = performance.now();
  const value = await fn();
  const ms = performance.now() - t0;
  clearInterval(timer);
  peak = Math.max(peak, rssMb());
  return { ms, value, peakRssMb: peak };
}

/** RUNS runs of a query: the median time (the figure), the first (cold) one, the peak RSS. */
async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; firstMs: number; value: T; peakRssMb: number }> {
  const runs: { ms: number; value: T; peakRssMb: number }[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await timedOnce(fn));
  const sorted = runs.map((r) => r.ms).sort((a, b) => a - b);
  return {
    ms: sorted[Math.floor((sorted.length - 1) / 2)]!,
    firstMs: runs[0]!.ms,
    value: runs[0]!.value,
    peakRssMb: Math.max(...runs.map((r) => r.peakRssMb)),
  };
}

async function boot(backend: string, dataDir: string): Promise<RunningLookout> {
  const config = loadConfig({
    // Retention off: the generated day lies in the past and must not expire mid-run.
    overrides: {
      server: { host: '127.0.0.1', port: 0 },
      dataDir,
      storage: { backend, retention: { metrics: '0', logs: '0', traces: '0', events: '0' } },
      log: { level: 'error' },
    },
    env: {},
  });
  return startLookout({ config });
}

async function main() {
  let backend = requested ?? 'embedded';
  const cacheDir = join(process.cwd(), '.tmp-bench', `logs-${backend}-${LINES}-${DATA_VERSION}`);
  const cached = backend === 'embedded' && !FRESH;
  const dataDir = cached ? cacheDir : mkdtempSync(join(tmpdir(), 'lookout-bench-logs-'));
  let lookout: RunningLookout;
  let ingestS = 0;
  let reused = false;
  if (cached && existsSync(join(cacheDir, 'complete'))) {
    lookout = await boot(backend, dataDir);
    reused = true;
  } else {
    if (cached) {
      rmSync(cacheDir, { recursive: true, force: true });
      mkdirSync(cacheDir, { recursive: true });
    }
    try {
      lookout = await boot(backend, dataDir);
    } catch (e) {
      if (requested) throw e;
      process.stderr.write(`backend "${backend}" unavailable (${(e as Error).message}); using memory\n`);
      backend = 'memory';
      lookout = await boot(backend, dataDir);
    }
    const t0 = performance.now();
    await ingest(lookout);
    await lookout.kernel.get(Tokens.Storage).flush();
    ingestS = (performance.now() - t0) / 1000;
    if (cached) {
      await lookout.stop();
      writeFileSync(join(cacheDir, 'complete'), `${LINES}\n`);
      lookout = await boot(backend, dataDir);
    }
  }
  try {
    const storage = lookout.kernel.get(Tokens.Storage);
    const ctx = { logs: storage.logs };
    const day = { startNs: START_NS, endNs: START_NS + DAY_NS };
    // The store's own share (opt-in, `--raw-scan`: slow at 10 M): iterating `scan` with no query work.
    const raw = process.argv.includes('--raw-scan')
      ? await timedOnce(async () => {
          let n = 0;
          for await (const b of storage.logs.scan({ startNs: day.startNs, endNs: day.endNs })) n += b.records.length;
          return n;
        })
      : null;
    globalThis.gc?.();
    await new Promise((r) => setTimeout(r, 200));
    const idleRss = rssMb();
    const agg = await timed(() => runSvcQLTable(parseSvcQL('* | count by service, level'), day, ctx));
    const total = agg.value.rows.reduce((s, r) => s + Number(r[2]), 0);
    if (total !== LINES) throw new Error(`count by service, level counted ${total}, expected ${LINES}`);
    const sel = await timed(() => runSvcQLTable(parseSvcQL('service=api level=error "timeout"'), day, ctx));
    const slice = await timed(() => runSvcQLTable(parseSvcQL('* | timeslice 1m | count by _timeslice'), day, ctx));
    const page = await timed(() => pageSvcQLRecords(parseSvcQL('*'), day, { limit: 100 }, ctx));

    const figures = {
      backend,
      columnar: hasColumnarScan(storage.logs),
      lines: LINES,
      reusedData: reused,
      ingestSeconds: +ingestS.toFixed(1),
      rawScanMs: raw ? +raw.ms.toFixed(1) : null,
      countByServiceLevelMs: +agg.ms.toFixed(1),
      countByServiceLevelLinesPerSec: Math.round(LINES / (agg.ms / 1000)),
      aggregationRssAboveIdleMb: +(agg.peakRssMb - idleRss).toFixed(1),
      selectiveSearchMs: +sel.ms.toFixed(1),
      selectiveSearchRows: sel.value.rows.length,
      timesliceCountMs: +slice.ms.toFixed(1),
      timesliceRows: slice.value.rows.length,
      timesliceRssAboveIdleMb: +(slice.peakRssMb - idleRss).toFixed(1),
      firstPageMs: +page.ms.toFixed(1),
      firstPageRecords: page.value.records.length,
      runs: RUNS,
      firstRunMs: { countBy: +agg.firstMs.toFixed(1), selective: +sel.firstMs.toFixed(1), timeslice: +slice.firstMs.toFixed(1), firstPage: +page.firstMs.toFixed(1) },
      loadAverage1m: +loadavg()[0]!.toFixed(2),
    };
    const target = (ok: boolean) => (ok ? 'ok' : 'MISSED');
    console.log(
      `backend ${backend}${figures.columnar ? ' (columnar scan)' : ''}, ${LINES} lines, ${reused ? `data reused from ${dataDir}` : `ingest ${figures.ingestSeconds} s`}`,
    );
    console.log(`median of ${RUNS} runs (first runs: ${JSON.stringify(figures.firstRunMs)}), load average ${figures.loadAverage1m}`);
    if (raw) console.log(`raw LogStore.scan of everything      ${figures.rawScanMs} ms (storage share)`);
    console.log(`* | count by service, level          ${figures.countByServiceLevelMs} ms  ${(figures.countByServiceLevelLinesPerSec / 1e6).toFixed(1)} M lines/s  (>= 20 M/s: ${target(figures.countByServiceLevelLinesPerSec >= 20e6)})`);
    console.log(`  RSS above idle during aggregation  ${figures.aggregationRssAboveIdleMb} MB  (<= 256 MB: ${target(figures.aggregationRssAboveIdleMb <= 256)})`);
    console.log(`service=api level=error "timeout"    ${figures.selectiveSearchMs} ms  (<= 100 ms: ${target(figures.selectiveSearchMs <= 100)})`);
    console.log(`* | timeslice 1m | count by _timeslice ${figures.timesliceCountMs} ms  (<= 1000 ms: ${target(figures.timesliceCountMs <= 1000)})`);
    console.log(`  RSS above idle during timeslice    ${figures.timesliceRssAboveIdleMb} MB`);
    console.log(`first page of * (100 records)        ${figures.firstPageMs} ms  (<= 50 ms: ${target(figures.firstPageMs <= 50)})`);
    console.log(JSON.stringify(figures));
  } finally {
    await lookout.stop();
    if (!cached) rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
