/**
 * Embedded storage benchmark: `npm run bench -- storage [--small] [--runs N] [--traces-only]
 * [--only append,select,head,logs,restart,traces,merge]`. Prints each figure (median of runs) and a
 * final JSON line (figures of sections left out are absent from it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedBackend, type EmbeddedBackend } from '../../backends/embedded/index.js';
import { createLogger } from '../../kernel/logger.js';
import type { LogRecord, MetricSeriesInput, Span } from '../../kernel/models.js';
import { benchSegmentMerge } from './lib/segment-merge.js';

const args = process.argv.slice(2);
const small = args.includes('--small');
const runsArg = args.indexOf('--runs');
const RUNS = runsArg >= 0 ? Number(args[runsArg + 1]) : 3;
const scale = small ? 0.1 : 1;
const onlyArg = args.indexOf('--only');
const only = onlyArg >= 0 ? new Set(String(args[onlyArg + 1]).split(',')) : null;
/** Whether a section runs (`select` is the compacted storage and select figures). */
const wants = (section: string) => only === null || only.has(section);
const logger = createLogger('error');
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const DAY = 86_400_000;
const T0 = Date.UTC(2024, 0, 1);

function open(dir: string, extra: Partial<Parameters<typeof openEmbeddedBackend>[0]> = {}): EmbeddedBackend {
  return openEmbeddedBackend({ dir, logger, fsync: 'interval', fsyncIntervalMs: 100, maintenanceIntervalMs: 0, ...extra });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const tmp = () => mkdtempSync(join(tmpdir(), 'lookout-bench-'));

/** Deterministic pseudo-random numbers. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Series of a typical scrape: 50% counters, 30% constant gauges, 20% slowly changing gauges. */
function makeSeries(n: number): Array<{ labels: Record<string, string>; kind: number }> {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push({
      labels: {
        __name__: `metric_${i % 50}`,
        job: `job-${i % 10}`,
        instance: `host-${Math.floor(i / 50)}:9100`,
        cpu: String(i % 8),
      },
      kind: i % 10 < 5 ? 0 : i % 10 < 8 ? 1 : 2,
    });
  }
  return out;
}

function valueGen(kind: number, r: () => number): (i: number) => number {
  let c = Math.floor(r() * 1000);
  let g = Math.round(r() * 100);
  return () => {
    if (kind === 0) return (c += Math.floor(r() * 10));
    if (kind === 1) return 1;
    if (r() < 0.05) g += r() < 0.5 ? -1 : 1;
    return g;
  };
}

/** Appends `days` of 15 s samples for `series`, in batches of `perBatch` samples per series. */
async function fill(b: EmbeddedBackend, nSeries: number, samplesPerSeries: number, perBatch: number, seriesPerBatch = 2000, startJ = 0): Promise<{ samples: number; ms: number }> {
  const series = makeSeries(nSeries);
  const r = rng(42);
  const gens = series.map((s) => valueGen(s.kind, r));
  // Pre-decode every batch first so the timing covers only append; batches are then appended
  // back to back (as concurrent ingest requests would), awaiting all acknowledgements.
  let samples = 0;
  const batches: MetricSeriesInput[][] = [];
  for (let k = startJ; k < startJ + samplesPerSeries; k += perBatch) {
    for (let s0 = 0; s0 < nSeries; s0 += seriesPerBatch) {
      const batch: MetricSeriesInput[] = [];
      for (let s = s0; s < Math.min(nSeries, s0 + seriesPerBatch); s++) {
        const smp = [];
        for (let j = k; j < Math.min(startJ + samplesPerSeries, k + perBatch); j++) smp.push({ t: T0 + j * 15_000 + (j % 3 === 0 ? 1 : 0), v: gens[s]!(j) });
        batch.push({ labels: series[s]!.labels, samples: smp });
        samples += smp.length;
      }
      batches.push(batch);
    }
  }
  const t = performance.now();
  const pending: Promise<void>[] = [];
  for (const x of batches) pending.push(b.metrics.append(x));
  await Promise.all(pending);
  return { samples, ms: performance.now() - t };
}

const messages = [
  (r: () => number) => `GET /api/v1/users/${Math.floor(r() * 10000)} 200 ${Math.floor(r() * 900)}ms`,
  (r: () => number) => `POST /api/v1/orders 201 created order ${Math.floor(r() * 1e6)} for customer ${Math.floor(r() * 5000)}`,
  (r: () => number) => `connection to db-${Math.floor(r() * 4)}.internal:5432 timed out after ${Math.floor(r() * 30)}s, retrying`,
  (r: () => number) => `cache miss for key session:${Math.floor(r() * 1e5).toString(16)}`,
  (r: () => number) => `worker ${Math.floor(r() * 16)} processed batch of ${Math.floor(r() * 500)} events in ${(r() * 100).toFixed(1)}ms`,
];

function makeLogs(n: number, startMs: number, r: () => number): LogRecord[] {
  const services = ['api', 'web', 'db', 'auth', 'billing', 'search', 'cart', 'mail'];
  const levels = ['info', 'info', 'info', 'warn', 'error', 'debug'];
  const streams: Record<string, string>[] = [];
  for (const s of services) for (const l of levels) streams.push({ svc_stream: 'logs', service: s, level: l, host: `node-${s.length}` });
  const out: LogRecord[] = new Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = {
      timestampNs: BigInt(startMs + Math.floor(i / 10)) * 1_000_000n + BigInt(i % 10) * 1000n,
      message: messages[i % messages.length]!(r),
      labels: streams[Math.floor(r() * streams.length)]!,
      facets: i % 4 === 0 ? { duration_ms: Math.floor(r() * 1000), user: `u${Math.floor(r() * 100)}` } : {},
    };
  }
  return out;
}

async function benchMetricAppend(): Promise<number> {
  const rates: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const dir = tmp();
    const b = open(dir);
    const { samples, ms } = await fill(b, Math.round(10_000 * scale) || 1000, 200, 10);
    rates.push(samples / (ms / 1000));
    await b.close();
    rmSync(dir, { recursive: true, force: true });
    gc();
  }
  return median(rates);
}

async function benchCompactedAndSelect(): Promise<{ bytesPerSample: number; selectMs: number; selectCpuMs: number; samples: number }> {
  const dir = tmp();
  const b = open(dir);
  const nSeries = 1000;
  const perSeries = small ? 5760 / 4 : 5760; // one day at 15 s
  const { samples } = await fill(b, nSeries, perSeries, 240);
  await b.maintenance({ flush: true, now: T0 + 2 * DAY });
  await b.maintenance({ flush: false, now: T0 + 2 * DAY });
  const st = b.metrics.stats();
  const bytesPerSample = st.segmentBytes / samples;
  gc(); // the appended batches and compaction inputs are garbage now
  const times: number[] = [];
  // CPU time too: on a shared machine it varies much less than the wall time. Two warm-up
  // runs first (as the promql bench): the first selects run while V8 still optimizes the decoders.
  const cpu: number[] = [];
  for (let w = 0; w < 2; w++) for await (const s of b.metrics.select([{ name: '__name__', op: '=~', value: 'metric_.*' }], T0, T0 + DAY)) void s;
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    const c = process.cpuUsage();
    let n = 0;
    for await (const s of b.metrics.select([{ name: '__name__', op: '=~', value: 'metric_.*' }], T0, T0 + DAY)) n += s.timestamps.length;
    times.push(performance.now() - t);
    const used = process.cpuUsage(c);
    cpu.push((used.user + used.system) / 1000);
    if (process.env.BENCH_VERBOSE) console.log(`  select run ${i}: ${fmt(times[i]!)} ms, CPU ${fmt(cpu[i]!)} ms`);
    if (n !== samples) throw new Error(`select returned ${n} of ${samples}`);
  }
  await b.close();
  rmSync(dir, { recursive: true, force: true });
  return { bytesPerSample, selectMs: median(times), selectCpuMs: median(cpu), samples };
}

async function benchHeadMemory(): Promise<number> {
  const dir = tmp();
  // A head large enough to keep all 12 M samples (the default 8 M would flush them into a
  // segment during the fill, and the figure would be the index without the head's chunks).
  const b = open(dir, { metricsMaxHeadSamples: 50_000_000 });
  // The JS heap and the typed arrays' backing stores (chunk buffers above 64 bytes live outside
  // the heap): both are the head's memory.
  const used = () => {
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  gc();
  const before = used();
  const n = Math.round(100_000 * scale);
  // 30 minutes at 15 s per series (a partly filled head chunk, as in steady state).
  await fill(b, n, 120, 120, 5000);
  await b.flush();
  // V8 frees the backing stores of collected typed arrays lazily, after the collection: settle,
  // collect again, then measure (right after the fill, the WAL records still counted).
  gc();
  await new Promise((r) => setTimeout(r, 1000));
  gc();
  const per = (used() - before) / n;
  if (process.env.BENCH_VERBOSE) {
    const m = process.memoryUsage();
    const st = b.metrics.stats();
    console.log(`  head: heapUsed ${fmt(m.heapUsed / n)} B/series, arrayBuffers ${fmt(m.arrayBuffers / n)} B/series, external ${fmt(m.external / n)}, head samples ${st.headSamples}`);
    let cap = 0;
    let usedBytes = 0;
    const ids = (b.metrics as unknown as { byId: ({ open: { buf: Uint8Array; bit: number } | null } | undefined)[] }).byId;
    for (const e of ids) if (e?.open) { cap += e.open.buf.byteLength; usedBytes += (e.open.bit + 7) >> 3; }
    console.log(`  open chunks: capacity ${fmt(cap / n)} B/series, used ${fmt(usedBytes / n)} B/series`);
  }
  await b.close();
  rmSync(dir, { recursive: true, force: true });
  return per;
}

async function benchLogs(): Promise<{ rate: number; ratio: number }> {
  const rates: number[] = [];
  let ratio = 0;
  for (let run = 0; run < RUNS; run++) {
    const dir = tmp();
    const b = open(dir, { logsMaxHeadRecords: 10_000_000 });
    const n = Math.round(1_000_000 * scale);
    const recs = makeLogs(n, T0, rng(7));
    let raw = 0;
    for (const r of recs) raw += JSON.stringify({ ts: String(r.timestampNs), message: r.message, labels: r.labels, ...r.facets }).length + 1;
    const t = performance.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < n; i += 1000) pending.push(b.logs.append(recs.slice(i, i + 1000)));
    await Promise.all(pending);
    rates.push(n / ((performance.now() - t) / 1000));
    await b.maintenance({ flush: true, now: T0 });
    ratio = b.logs.stats().segmentBytes / raw;
    await b.close();
    rmSync(dir, { recursive: true, force: true });
    gc();
  }
  return { rate: median(rates), ratio };
}

async function benchRestart(): Promise<{ ms: number; samples: number; logs: number }> {
  const dir = tmp();
  const a = open(dir);
  const nSeries = Math.round(10_000 * scale);
  // 80% of the samples and 94% of the log lines end in segments, the rest only in the WAL.
  let { samples } = await fill(a, nSeries, 800, 100);
  await a.maintenance({ flush: true, now: T0 });
  samples += (await fill(a, nSeries, 200, 100, 2000, 800)).samples;
  const nLogs = Math.round(5_000_000 * scale);
  const r = rng(3);
  let flushed = false;
  for (let i = 0; i < nLogs; i += 100_000) {
    if (!flushed && i >= nLogs - Math.round(300_000 * scale)) {
      flushed = true;
      await a.logs.serial(() => a.logs.flushHead()); // logs only: the metric head stays in the WAL
    }
    const recs = makeLogs(Math.min(100_000, nLogs - i), T0 + i, r);
    const pending: Promise<void>[] = [];
    for (let k = 0; k < recs.length; k += 1000) pending.push(a.logs.append(recs.slice(k, k + 1000)));
    await Promise.all(pending);
  }
  await a.flush(); // no clean close: the heads stay in the WAL, as after a crash
  gc();
  const times: number[] = [];
  for (let i = 0; i < Math.min(RUNS, 3); i++) {
    const t = performance.now();
    const b = open(dir);
    times.push(performance.now() - t);
    const st = b.metrics.stats();
    if (i === 0) console.log(`  restart state: ${st.series} series, ${st.headSamples} head samples, ${st.segments} metric segments, ${b.logs.stats().records} head log records, ${b.logs.stats().segments} log segments`);
    gc();
  }
  rmSync(dir, { recursive: true, force: true });
  return { ms: median(times), samples, logs: nLogs };
}


/** `n` traces of 1–8 spans (avg 4.5) starting 1 ms apart, as an instrumented service mesh emits. */
function makeSpans(first: number, n: number, r: () => number): Span[] {
  const services = ['api', 'web', 'db', 'auth', 'cart', 'search', 'billing', 'mail'];
  const hex = (k: number) => {
    let s = '';
    for (let i = 0; i < k; i++) s += Math.floor(r() * 16).toString(16);
    return s;
  };
  const out: Span[] = [];
  for (let k = first; k < first + n; k++) {
    const traceId = hex(32);
    const spans = 1 + Math.floor(r() * 8);
    const root = hex(16);
    for (let i = 0; i < spans; i++) {
      const st = BigInt(T0 + k) * 1_000_000n + BigInt(i * 1000);
      const durNs = BigInt(Math.floor(r() * 500) * 1_000_000 + 50_000);
      out.push({
        traceId,
        spanId: i === 0 ? root : hex(16),
        parentSpanId: i === 0 ? '' : root,
        name: `GET /api/v1/route${Math.floor(r() * 20)}`,
        kind: i === 0 ? 'server' : 'client',
        startTimeUnixNano: st,
        endTimeUnixNano: st + durNs,
        status: { code: r() < 0.02 ? 'error' : 'unset' },
        attributes: { 'http.method': r() < 0.8 ? 'GET' : 'POST', 'http.status_code': r() < 0.02 ? 500 : 200, 'user.id': `u${Math.floor(r() * 10000)}` },
        resource: { 'service.name': services[Math.floor(r() * services.length)]!, 'k8s.namespace.name': 'prod' },
        scope: { name: 'bench' },
        events: [],
        links: [],
      });
    }
  }
  return out;
}

async function benchTraces(): Promise<{ spans: number; appendSpansPerSec: number; bytesPerSpan: number; reopenMs: number; getTraceColdMs: number; getTraceWarmMs: number; searchAttrMs: number; searchNarrowMs: number; searchLimitMs: number; searchErrorsMs: number }> {
  const dir = tmp();
  const a = open(dir);
  const target = Math.round(1_000_000 * scale);
  const r = rng(17);
  const ids: string[] = [];
  let spans = 0;
  let appendMs = 0;
  let traceCount = 0;
  for (let k = 0; spans < target; k += 10_000) {
    traceCount = k + 10_000;
    const batch = makeSpans(k, 10_000, r);
    for (let i = 0; i < batch.length; i += 5000) ids.push(batch[i]!.traceId);
    const t = performance.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < batch.length; i += 500) pending.push(a.traces.append(batch.slice(i, i + 500)));
    await Promise.all(pending);
    await a.traces.wal.idle();
    appendMs += performance.now() - t;
    spans += batch.length;
  }
  await a.close();
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  let t = performance.now();
  const b = open(dir);
  const reopenMs = performance.now() - t;
  gc();
  const st = b.traces.stats();
  console.log(`  traces: ${fmt(st.segmentSpans)} spans in ${st.segments} segments, ${fmt(st.segmentBytes / 1e6)} MB; index heap ${fmt((process.memoryUsage().heapUsed - heap0) / 1e6)} MB`);
  const timeIt = async (fn: () => Promise<unknown>, reps: number) => {
    const xs: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t0 = performance.now();
      await fn();
      xs.push(performance.now() - t0);
    }
    return median(xs);
  };
  const pick = rng(5);
  // Cold: lookups whose block was not in the cache (read from disk and inflated).
  const cold: number[] = [];
  for (let i = 0; i < 400 && cold.length < 200; i++) {
    const id = ids[Math.floor(pick() * ids.length)]!;
    const misses = b.traces.cache.misses;
    const t0 = performance.now();
    if ((await b.traces.getTrace(id)).length === 0) throw new Error(`trace ${id} not found`);
    if (b.traces.cache.misses > misses) cold.push(performance.now() - t0);
  }
  const warmId = ids[7]!;
  const getTraceWarmMs = await timeIt(() => b.traces.getTrace(warmId), 200);
  const drain = async (q: Parameters<typeof b.traces.search>[0]) => {
    let n = 0;
    for await (const g of b.traces.search(q)) n += g.length;
    return n;
  };
  const all = { startNs: BigInt(T0) * 1_000_000n, endNs: BigInt(T0 + DAY) * 1_000_000n };
  const mid = BigInt(T0 + Math.floor(traceCount / 2)) * 1_000_000n;
  const searchAttrMs = await timeIt(() => drain({ ...all, attributes: { 'service.name': 'db', name: 'GET /api/v1/route7', 'user.id': 'u42' } }), RUNS);
  const searchNarrowMs = await timeIt(() => drain({ startNs: mid, endNs: mid + 500_000_000n }), RUNS);
  const searchLimitMs = await timeIt(() => drain({ ...all, limit: 20 }), RUNS);
  const searchErrorsMs = await timeIt(() => drain({ ...all, statuses: ['error'], minDurationNs: 490_000_000n, attributes: { 'service.name': 'api' } }), RUNS);
  t = performance.now();
  await b.close();
  rmSync(dir, { recursive: true, force: true });
  return {
    spans,
    appendSpansPerSec: spans / (appendMs / 1000),
    bytesPerSpan: st.segmentBytes / st.segmentSpans,
    reopenMs,
    getTraceColdMs: median(cold),
    getTraceWarmMs,
    searchAttrMs,
    searchNarrowMs,
    searchLimitMs,
    searchErrorsMs,
  };
}

async function reportTraces(): Promise<Awaited<ReturnType<typeof benchTraces>>> {
  const tr = await benchTraces();
  console.log(`span append:              ${fmt(tr.appendSpansPerSec)} spans/s (${fmt(tr.spans)} spans, ${fmt(tr.bytesPerSpan)} bytes/span on disk)`);
  console.log(`traces reopen:            ${fmt(tr.reopenMs)} ms`);
  console.log(`trace by id:              ${fmt(tr.getTraceColdMs)} ms cold (median, block read from disk), ${fmt(tr.getTraceWarmMs)} ms cached`);
  console.log(`trace search, 3 attributes over all spans: ${fmt(tr.searchAttrMs)} ms`);
  console.log(`trace search, 500 ms window:${fmt(tr.searchNarrowMs)} ms`);
  console.log(`trace search, limit 20:    ${fmt(tr.searchLimitMs)} ms`);
  console.log(`trace search, errors ≥490 ms in one service: ${fmt(tr.searchErrorsMs)} ms`);
  return tr;
}

const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 2 });
if (args.includes('--traces-only')) {
  console.log(JSON.stringify({ bench: 'storage-traces', small, ...(await reportTraces()) }));
  process.exit(0);
}
console.log(`embedded storage bench${small ? ' (--small)' : ''}, ${RUNS} runs, node ${process.version}`);
const appendRate = wants('append') ? await benchMetricAppend() : undefined;
if (appendRate !== undefined) console.log(`metric append:            ${fmt(appendRate)} samples/s`);
const cs = wants('select') ? await benchCompactedAndSelect() : undefined;
if (cs) {
  console.log(`compacted metric storage: ${fmt(cs.bytesPerSample)} bytes/sample (${fmt(cs.samples)} samples)`);
  console.log(`select 1,000 series × ${small ? '6 h' : '1 day'} @15 s from segments: ${fmt(cs.selectMs)} ms (CPU ${fmt(cs.selectCpuMs)} ms)`);
}
const head = wants('head') ? await benchHeadMemory() : undefined;
if (head !== undefined) console.log(`head memory:              ${fmt(head)} bytes/active series`);
const lg = wants('logs') ? await benchLogs() : undefined;
if (lg) {
  console.log(`log append:               ${fmt(lg.rate)} records/s`);
  console.log(`log on-disk size:         ${fmt(lg.ratio * 100)}% of raw NDJSON`);
}
const rs = wants('restart') ? await benchRestart() : undefined;
if (rs) console.log(`restart (${fmt(rs.samples)} samples + ${fmt(rs.logs)} log lines): ${fmt(rs.ms)} ms`);
const tr = wants('traces') ? await reportTraces() : undefined;
const mg = wants('merge') ? await benchSegmentMerge({ small, runs: Math.max(RUNS, 5) }) : undefined;
if (mg) {
  console.log(`segment merge: ${mg.segments} log + ${mg.segments} span segments (${fmt(mg.logRecords)} log records) → ${mg.segmentsAfter}`);
  for (const [sig, x] of [['logs', mg.logs], ['spans', mg.traces]] as const) {
    console.log(`  ${sig} merge ${fmt(x.mergeMs)} ms; event-loop delay during it max ${fmt(x.loopDelayMaxMs)} ms, p99 ${fmt(x.loopDelayP99Ms)} ms`);
  }
  for (const k of Object.keys(mg.before)) console.log(`  ${k.padEnd(16)} ${fmt(mg.before[k]!)} ms with ${mg.segments} segments → ${fmt(mg.after[k]!)} ms merged`);
}
console.log(
  JSON.stringify({
    bench: 'storage',
    small,
    metricAppendSamplesPerSec: appendRate === undefined ? undefined : Math.round(appendRate),
    bytesPerSample: cs ? Number(cs.bytesPerSample.toFixed(3)) : undefined,
    selectMs: cs ? Number(cs.selectMs.toFixed(1)) : undefined,
    headBytesPerSeries: head === undefined ? undefined : Math.round(head),
    logAppendRecordsPerSec: lg ? Math.round(lg.rate) : undefined,
    logSizeVsNdjson: lg ? Number(lg.ratio.toFixed(4)) : undefined,
    restartMs: rs ? Math.round(rs.ms) : undefined,
    traceSpans: tr?.spans,
    traceGetByIdMs: tr ? Number(tr.getTraceColdMs.toFixed(2)) : undefined,
    traceSearchAttrMs: tr ? Math.round(tr.searchAttrMs) : undefined,
    traceSearchLimitMs: tr ? Math.round(tr.searchLimitMs) : undefined,
    merge: mg,
  }),
);
process.exit(0);
