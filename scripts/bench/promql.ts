/**
 * PromQL benchmark: Lookout vs Debian's Prometheus on the same data.
 *
 *   npm run bench -- promql [--series 10000] [--hours 24] [--reps 5] [--backend NAME] [--no-prometheus] [--idle-seconds N] [--no-warmup-pass]
 *
 * The same deterministic data (N series × H hours at 15 s) goes into Lookout (straight into its
 * storage, in time order, in a child process running the real server) and into Prometheus
 * (remote write). Then ≥30 dashboard-style queries (instant and range, 1 h and 24 h windows)
 * run over HTTP against both; we report the median latency per query, the Lookout/Prometheus
 * ratio, its geometric mean and the peak memory per query (growth of each process' peak RSS,
 * reset through /proc/<pid>/clear_refs before every query). Also: parse time of a 1 KB query.
 * Before timing, every query runs once against each target (the warm-up pass: Lookout's JIT
 * compiles the query paths, which the load did not run; the cold latency of that pass is
 * reported too); each query then gets 2 more warm-up runs before its timed runs.
 * Ends with one JSON line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { loadConfig, defaultConfig } from '../../kernel/config.js';
import type { MetricSeriesInput } from '../../kernel/models.js';
import { startLookout, type RunningLookout } from '../../kernel/server.js';
import { Tokens } from '../../kernel/services.js';
import { parsePromQL } from '../../plugins/query-promql/index.js';
import { prometheusAvailable, startPrometheus, type RunningPrometheus } from '../../test/helpers/prometheus.js';
import { remoteWrite, type RWSeries } from '../../test/helpers/remote-write.js';
import { tempDir } from '../../test/helpers/server.js';

const TOKEN = 'bench-admin-token';
const STEP_MS = 15_000;
const SLICE_MS = 20 * 60_000;

interface Args {
  series: number;
  hours: number;
  reps: number;
  /** Seconds to leave Lookout idle before the queries (as during Prometheus' load phase). */
  idleSeconds?: number;
  backend?: string;
  prometheus: boolean;
  serve?: string;
  end?: number;
  warmupPass: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { series: 10_000, hours: 24, reps: 5, prometheus: true, warmupPass: true };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!;
    const v = () => argv[++i]!;
    if (k === '--series') a.series = Number(v());
    else if (k === '--hours') a.hours = Number(v());
    else if (k === '--reps') a.reps = Number(v());
    else if (k === '--backend') a.backend = v();
    else if (k === '--no-prometheus') a.prometheus = false;
    else if (k === '--idle-seconds') a.idleSeconds = Number(v());
    else if (k === '--serve-lookout') a.serve = v();
    else if (k === '--end') a.end = Number(v());
    else if (k === '--no-warmup-pass') a.warmupPass = false;
    else throw new Error(`unknown argument ${k}`);
  }
  return a;
}

// ---- data ---------------------------------------------------------------------------------

/** Per instance: 100 series of a typical node + HTTP service. */
function seriesLabels(n: number): Record<string, string>[] {
  const out: Record<string, string>[] = [];
  const les = ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf'];
  for (let inst = 0; out.length < n; inst++) {
    const instance = `host-${inst}:9100`;
    const job = `job-${inst % 10}`;
    const push = (l: Record<string, string>) => out.length < n && out.push(l);
    for (const handler of ['/api', '/web'])
      for (const method of ['GET', 'POST'])
        for (const status of ['200', '404', '500', '503'])
          push({ __name__: 'http_requests_total', job, instance, handler, method, status });
    for (const handler of ['/api', '/web'])
      for (const le of les) push({ __name__: 'http_request_duration_seconds_bucket', job, instance, handler, le });
    for (let cpu = 0; cpu < 4; cpu++)
      for (const mode of ['idle', 'user', 'system', 'iowait', 'irq', 'softirq', 'steal', 'nice'])
        push({ __name__: 'node_cpu_seconds_total', job, instance, cpu: String(cpu), mode });
    push({ __name__: 'node_memory_free_bytes', job, instance });
    for (let d = 0; d < 27; d++) push({ __name__: 'node_filesystem_avail_bytes', job, instance, device: `sd${d}` });
  }
  return out;
}

/** Cheap deterministic hash to [0, 1). */
function h01(a: number, b: number): number {
  let x = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x7f4a7c15, 0xc2b2ae35);
  x ^= x >>> 15;
  x = Math.imul(x, 0x2c1b3c6d);
  x ^= x >>> 12;
  return (x >>> 0) / 4294967296;
}

/**
 * Generates the data slice by slice in time order (both processes run the same generator, so
 * they hold identical samples). Counters and histogram buckets keep state across slices.
 */
class DataGen {
  readonly labels: Record<string, string>[];
  private readonly state: Float64Array;
  private readonly kind: Uint8Array; // 0 counter, 1 gauge, 2 bucket
  private readonly bucketRank: Float64Array;
  private readonly offsets: Float64Array;
  readonly start: number;

  constructor(
    n: number,
    readonly hours: number,
    readonly end: number,
  ) {
    this.labels = seriesLabels(n);
    this.start = end - hours * 3_600_000;
    this.state = new Float64Array(n);
    this.kind = new Uint8Array(n);
    this.bucketRank = new Float64Array(n);
    this.offsets = new Float64Array(n);
    this.labels.forEach((l, i) => {
      const name = l.__name__!;
      this.kind[i] = name.endsWith('_bucket') ? 2 : name.endsWith('_total') ? 0 : 1;
      if (this.kind[i] === 2) this.bucketRank[i] = l.le === '+Inf' ? 1 : Math.min(1, Math.sqrt(Number(l.le) / 10));
      this.offsets[i] = Math.floor(h01(i, 7) * STEP_MS);
    });
  }

  /** Samples with t in [from, to). */
  slice(from: number, to: number): MetricSeriesInput[] {
    const out: MetricSeriesInput[] = [];
    for (let i = 0; i < this.labels.length; i++) {
      const samples: { t: number; v: number }[] = [];
      const off = this.offsets[i]!;
      let k = Math.ceil((from - this.start - off) / STEP_MS);
      for (let t = this.start + off + k * STEP_MS; t < to; t += STEP_MS, k++) {
        if (t < this.start) continue;
        const r = h01(i, k);
        let v: number;
        switch (this.kind[i]) {
          case 0:
            v = this.state[i] = this.state[i]! + r * 10;
            break;
          case 2:
            // The same per-instance traffic, spread cumulatively over buckets.
            v = this.state[i] = this.state[i]! + Math.floor(20 * this.bucketRank[i]! + r);
            break;
          default:
            v = 1e9 * (1 + Math.sin(k / 500 + i)) + r * 1e6;
        }
        samples.push({ t, v });
      }
      if (samples.length) out.push({ labels: this.labels[i]!, samples });
    }
    return out;
  }
}

// ---- Lookout child process ------------------------------------------------------------------

async function serveLookout(args: Args): Promise<void> {
  const dataDir = tempDir('lookout-bench-');
  const tryStart = async (backend: string): Promise<RunningLookout> => {
    const config = loadConfig({
      overrides: {
        server: { host: '127.0.0.1', port: 0 },
        dataDir,
        storage: { backend },
        log: { level: 'error' },
        auth: { serviceAccounts: [{ name: 'bench', token: TOKEN, role: 'Admin' }] },
      },
      env: {},
    });
    return startLookout({ config });
  };
  let backend = args.backend ?? defaultConfig().storage.backend;
  let lookout: RunningLookout;
  try {
    lookout = await tryStart(backend);
  } catch (e) {
    if (args.backend) throw e;
    backend = 'memory';
    lookout = await tryStart(backend);
  }
  const gen = new DataGen(args.series, args.hours, args.end!);
  const store = lookout.kernel.get(Tokens.Storage).metrics;
  const t0 = performance.now();
  for (let t = gen.start; t < gen.end; t += SLICE_MS) await store.append(gen.slice(t, Math.min(t + SLICE_MS, gen.end + 1)));
  const storage: { flush(): Promise<void>; maintenance?: (o: { flush?: boolean }) => Promise<unknown> } = lookout.kernel.get(Tokens.Storage);
  await storage.flush();
  // Measure the steady state: the embedded backend otherwise compacts the loaded day on its
  // one-minute maintenance timer, i.e. in the middle of the first timed queries.
  if (typeof storage.maintenance === 'function') await storage.maintenance({ flush: true });
  const loadMs = performance.now() - t0;
  globalThis.gc?.();
  process.stdout.write(JSON.stringify({ ready: lookout.url, backend, loadMs }) + '\n');
  const stop = async () => {
    await lookout.stop();
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
}

async function spawnLookout(args: Args, end: number): Promise<{ child: ChildProcess; url: string; backend: string; loadMs: number }> {
  const file = new URL(import.meta.url).pathname;
  const extra = ['--series', String(args.series), '--hours', String(args.hours), '--end', String(end), '--serve-lookout', '1'];
  if (args.backend) extra.push('--backend', args.backend);
  const child = spawn(process.execPath, ['--expose-gc', '--max-old-space-size=12288', '--import', 'tsx', file, ...extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const rl = createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`lookout child exited (${code}) before ready`)));
    rl.on('line', (line) => {
      try {
        const m = JSON.parse(line) as { ready?: string; backend: string; loadMs: number };
        if (m.ready) resolve({ child, url: m.ready, backend: m.backend, loadMs: m.loadMs });
      } catch {
        process.stderr.write(line + '\n');
      }
    });
  });
}

// ---- measurement --------------------------------------------------------------------------------

function procKb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

function resetPeak(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // Without permission the figure is the process' lifetime peak; still reported.
  }
}

interface Target {
  name: string;
  url: string;
  pid: number;
  headers: Record<string, string>;
}

interface QuerySpec {
  name: string;
  kind: 'instant' | 'range';
  query: string;
  windowH?: number;
  stepS?: number;
}

async function runOnce(t: Target, q: QuerySpec, end: number): Promise<number> {
  const p = new URLSearchParams({ query: q.query });
  if (q.kind === 'instant') p.set('time', String(end / 1000));
  else {
    p.set('start', String(end / 1000 - q.windowH! * 3600));
    p.set('end', String(end / 1000));
    p.set('step', String(q.stepS));
  }
  const path = q.kind === 'instant' ? '/api/v1/query' : '/api/v1/query_range';
  const t0 = performance.now();
  const res = await fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...t.headers },
    body: p.toString(),
  });
  const body = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`${t.name} ${q.name}: ${res.status} ${body.slice(0, 300)}`);
  return ms;
}

/**
 * Median latency and peak memory growth of one query on every target. The timed runs alternate
 * between the targets (L, P, L, P, ...), so a period of background work on the machine (the
 * other server's compaction or GC, another job) slows both sides alike instead of one.
 */
async function measure(targets: readonly Target[], q: QuerySpec, end: number, reps: number): Promise<{ median: number; peakMb: number }[]> {
  // Warm-up (JIT, caches) on every side before timing.
  for (const t of targets) {
    await runOnce(t, q, end);
    await runOnce(t, q, end);
  }
  const rss = targets.map((t) => procKb(t.pid, 'VmRSS'));
  for (const t of targets) resetPeak(t.pid);
  const times: number[][] = targets.map(() => []);
  for (let i = 0; i < reps; i++) for (let k = 0; k < targets.length; k++) times[k]!.push(await runOnce(targets[k]!, q, end));
  return targets.map((t, k) => {
    const ts = times[k]!.sort((a, b) => a - b);
    return { median: ts[Math.floor(ts.length / 2)]!, peakMb: Math.max(0, (procKb(t.pid, 'VmHWM') - rss[k]!) / 1024) };
  });
}

function queries(): QuerySpec[] {
  const q: QuerySpec[] = [];
  const inst = (name: string, query: string) => q.push({ name, kind: 'instant', query });
  const r1 = (name: string, query: string) => q.push({ name: `${name} [1h]`, kind: 'range', query, windowH: 1, stepS: 15 });
  const r24 = (name: string, query: string) => q.push({ name: `${name} [24h]`, kind: 'range', query, windowH: 24, stepS: 120 });
  const RATE = 'sum(rate(http_requests_total[5m]))';
  const BY_JOB = 'sum by (job) (rate(http_requests_total[5m]))';
  const ERR = 'sum by (job) (rate(http_requests_total{status=~"5.."}[5m])) / sum by (job) (rate(http_requests_total[5m]))';
  const P99 = 'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))';
  const P90J = 'histogram_quantile(0.9, sum by (le, job) (rate(http_request_duration_seconds_bucket[5m])))';
  const TOPK = 'topk(10, sum by (instance) (rate(http_requests_total[5m])))';
  const CPU = '1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m]))';
  const CPU_MODE = 'sum by (mode) (rate(node_cpu_seconds_total[2m]))';
  const MEM = 'avg by (job) (node_memory_free_bytes)';
  const SUBQ = 'max_over_time(sum(rate(http_requests_total[5m]))[1h:1m])';
  inst('sum rate', RATE);
  inst('sum by job rate', BY_JOB);
  inst('error ratio', ERR);
  inst('p99 latency', P99);
  inst('p90 by job', P90J);
  inst('topk instances', TOPK);
  inst('cpu busy by instance', CPU);
  inst('cpu by mode', CPU_MODE);
  inst('memory by job', MEM);
  inst('subquery max 1h', SUBQ);
  inst('increase 24h', 'sum by (job) (increase(http_requests_total[24h]))');
  inst('avg_over_time 24h', 'avg(avg_over_time(node_memory_free_bytes[24h]))');
  inst('quantile_over_time 1h', 'quantile_over_time(0.95, node_memory_free_bytes{job="job-1"}[1h])');
  inst('bottomk fs', 'bottomk(5, node_filesystem_avail_bytes)');
  inst('join group_left', 'node_memory_free_bytes / on(instance) group_left sum by (instance) (node_filesystem_avail_bytes)');
  inst('count by status', 'count by (status) (http_requests_total)');
  r1('sum rate', RATE);
  r1('sum by job rate', BY_JOB);
  r1('error ratio', ERR);
  r1('p99 latency', P99);
  r1('topk instances', TOPK);
  r1('cpu busy by instance', CPU);
  r1('memory by job', MEM);
  r1('subquery max rate', 'max_over_time(rate(http_requests_total{job="job-3"}[5m])[10m:1m])');
  r24('sum rate', RATE);
  r24('sum by job rate', BY_JOB);
  r24('error ratio', ERR);
  r24('p99 latency', P99);
  r24('topk instances', TOPK);
  r24('cpu by mode', CPU_MODE);
  r24('memory by job', MEM);
  r24('deriv memory', 'avg(deriv(node_memory_free_bytes[30m]))');
  r24('predict_linear fs', 'sum(predict_linear(node_filesystem_avail_bytes{device="sd1"}[1h], 3600))');
  return q;
}

/** A ~1 KB dashboard-style query, for parse timing. */
function oneKbQuery(): string {
  const parts: string[] = [];
  for (let i = 0; parts.join(' + ').length < 1000; i++) {
    parts.push(
      `sum by (job, instance) (rate(http_requests_total{job=~"job-${i}|job-${i + 1}",status!="500",handler="/api"}[5m] offset ${i}m))`,
    );
  }
  return parts.join(' + ');
}

function parseBench(): { bytes: number; meanMs: number } {
  const q = oneKbQuery();
  for (let i = 0; i < 2000; i++) parsePromQL(q);
  const n = 20_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) parsePromQL(q);
  return { bytes: q.length, meanMs: (performance.now() - t0) / n };
}

async function loadPrometheus(prom: RunningPrometheus, args: Args, end: number): Promise<number> {
  const gen = new DataGen(args.series, args.hours, end);
  const t0 = performance.now();
  for (let t = gen.start; t < gen.end; t += SLICE_MS) {
    const slice = gen.slice(t, Math.min(t + SLICE_MS, gen.end + 1)) as RWSeries[];
    // Keep requests moderate: Prometheus decodes each one fully in memory.
    for (let i = 0; i < slice.length; i += 2000) await remoteWrite(prom.writeUrl, slice.slice(i, i + 2000));
  }
  // Let head compaction, triggered by the appends, settle before measuring.
  let last = '';
  for (let stable = 0; stable < 3; ) {
    await new Promise((r) => setTimeout(r, 2000));
    const m = await (await fetch(`${prom.url}/metrics`)).text();
    const cur = (/^prometheus_tsdb_compactions_total (\S+)/m.exec(m)?.[1] ?? '') + (/^prometheus_tsdb_head_min_time (\S+)/m.exec(m)?.[1] ?? '');
    stable = cur === last ? stable + 1 : 0;
    last = cur;
  }
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.serve) return serveLookout(args);
  // Aligned to the scrape interval, a minute in the past.
  const end = Math.floor((Date.now() - 60_000) / 60_000) * 60_000;
  const parse = parseBench();
  console.log(`parse of a ${parse.bytes}-byte query: ${(parse.meanMs * 1000).toFixed(1)} µs`);
  console.log(`data: ${args.series} series × ${args.hours} h at 15 s = ${((args.series * args.hours * 240) / 1e6).toFixed(1)} M samples`);

  const lk = await spawnLookout(args, end);
  console.log(`lookout (${lk.backend}) loaded in ${(lk.loadMs / 1000).toFixed(1)} s`);
  let prom: RunningPrometheus | undefined;
  try {
    const targets: Target[] = [{ name: 'lookout', url: lk.url, pid: lk.child.pid!, headers: { authorization: `Bearer ${TOKEN}` } }];
    if (args.prometheus && prometheusAvailable()) {
      prom = await startPrometheus({ args: ['--query.max-samples=500000000', '--query.timeout=10m'] });
      const ms = await loadPrometheus(prom, args, end);
      console.log(`prometheus ${prom.version} loaded in ${(ms / 1000).toFixed(1)} s`);
      targets.push({ name: 'prometheus', url: prom.url, pid: prom.pid, headers: {} });
    } else {
      console.log('SKIP: prometheus not available or disabled; Lookout figures only');
    }
    const rows: {
      query: string;
      lookoutMs: number;
      prometheusMs?: number;
      ratio?: number;
      lookoutPeakMb: number;
      prometheusPeakMb?: number;
    }[] = [];
    const pad = (s: string, n: number) => (s.length >= n ? s.slice(0, n) : s + ' '.repeat(n - s.length));
    if (args.idleSeconds) await new Promise((r) => setTimeout(r, args.idleSeconds! * 1000));
    const cold: Record<string, { firstQueryMs: number; passMs: number }> = {};
    if (args.warmupPass) {
      for (const t of targets) {
        const times: number[] = [];
        for (const q of queries()) times.push(await runOnce(t, q, end));
        cold[t.name] = { firstQueryMs: +times[0]!.toFixed(1), passMs: +times.reduce((a, b) => a + b, 0).toFixed(0) };
        console.log(`warm-up pass (each query once, cold): ${t.name} ${cold[t.name]!.passMs} ms in all; its first query ${cold[t.name]!.firstQueryMs} ms`);
      }
    }
    console.log(`${pad('query', 38)} ${pad('lookout ms', 11)} ${pad('prom ms', 9)} ${pad('ratio', 6)} ${pad('lk peak MB', 11)} prom peak MB`);
    for (const q of queries()) {
      const [l, p] = (await measure(targets, q, end, args.reps)) as [{ median: number; peakMb: number }, { median: number; peakMb: number } | undefined];
      const row = {
        query: `${q.kind} ${q.name}`,
        lookoutMs: +l.median.toFixed(2),
        prometheusMs: p ? +p.median.toFixed(2) : undefined,
        ratio: p ? +(l.median / p.median).toFixed(3) : undefined,
        lookoutPeakMb: +l.peakMb.toFixed(1),
        prometheusPeakMb: p ? +p.peakMb.toFixed(1) : undefined,
      };
      rows.push(row);
      console.log(
        `${pad(row.query, 38)} ${pad(row.lookoutMs.toFixed(1), 11)} ${pad(row.prometheusMs?.toFixed(1) ?? '-', 9)} ${pad(row.ratio?.toFixed(2) ?? '-', 6)} ${pad(row.lookoutPeakMb.toFixed(1), 11)} ${row.prometheusPeakMb?.toFixed(1) ?? '-'}`,
      );
    }
    const ratios = rows.map((r) => r.ratio).filter((r): r is number => r !== undefined);
    const geomean = ratios.length ? Math.exp(ratios.reduce((s, r) => s + Math.log(r), 0) / ratios.length) : undefined;
    const worst = ratios.length ? Math.max(...ratios) : undefined;
    console.log(`geometric mean of lookout/prometheus latency ratios: ${geomean?.toFixed(3) ?? '-'}; worst ${worst?.toFixed(2) ?? '-'}`);
    console.log(
      JSON.stringify({
        bench: 'promql',
        series: args.series,
        hours: args.hours,
        reps: args.reps,
        backend: lk.backend,
        prometheusVersion: prom?.version,
        queries: rows.length,
        geomeanRatio: geomean !== undefined ? +geomean.toFixed(3) : undefined,
        worstRatio: worst,
        parse1kbMs: +parse.meanMs.toFixed(4),
        warmupPass: args.warmupPass ? cold : undefined,
        rows,
      }),
    );
  } finally {
    lk.child.kill('SIGTERM');
    await new Promise((r) => lk.child.once('exit', r));
    await prom?.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
