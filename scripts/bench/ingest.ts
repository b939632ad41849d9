/**
 * Ingest benchmark (`npm run bench -- ingest [options]`). Named sections:
 *   remote-write  Prometheus remote write 1.0 end to end over HTTP, samples/s, Lookout and
 *                 Debian's Prometheus (--web.enable-remote-write-receiver) side by side
 *   otlp-logs     OTLP/HTTP protobuf logs, records/s
 *   shipper       shipper bulk (`_bulk` NDJSON, Filebeat-like ECS documents), documents/s
 *   overload      RSS while far more concurrent requests than limits.ingestMaxConcurrent arrive
 *   rw-ceiling    in-process remote write: snappy + columnar decode + embedded appendColumns (WAL
 *                 included), samples/s and CPU ns per sample (not in the default set)
 *   ceiling       in-process, single thread, no HTTP and no storage: OTLP logs protobuf decode+map
 *                 and shipper bulk parse+map, records/s, median of 5 two-second runs (less
 *                 sensitive to machine load than the end-to-end figures; not in the default set)
 * Load comes from a separate process (this file with --generator) that pre-encodes every payload
 * before the clock starts. Options: --sections a,b  --backend NAME  --rw-samples N  --seconds N
 * --concurrency N  --overload-seconds N (default 60)  --no-prometheus  --rw-warmup N (remote write:
 * send N samples of other series first, unmeasured, so the figure excludes JIT compilation).
 * Remote write requests carry 2,000 series with one sample each: Prometheus' default
 * queue_config (max_samples_per_send 2000) for series scraped once per interval.
 * Prints a table and a final JSON line.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import snappy from 'snappyjs';
import { freePort } from '../../test/helpers/ports.js';

const SELF = fileURLToPath(import.meta.url);

// ---- generator process --------------------------------------------------------------------------

interface GenJob {
  kind: 'rw' | 'otlp-logs' | 'shipper';
  url: string;
  headers: Record<string, string>;
  concurrency: number;
  /** rw: total samples (each sent once, timestamps increasing); otlp: unused. */
  samples?: number;
  /** Loop over the payloads until this many seconds passed (instead of sending each once). */
  loopSeconds?: number;
  /** rw: only one round of timestamps, re-sent in a loop (overload). */
  oneRound?: boolean;
  /** rw: value of the `job` label (another value: another set of series). */
  rwJob?: string;
}
interface GenResult {
  records: number;
  requests: number;
  elapsedMs: number;
  statuses: Record<string, number>;
  prepareMs: number;
}

function varint(n: number, out: number[]): void {
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
}
function field(tag: number, body: Uint8Array | number[]): Buffer {
  const head: number[] = [tag];
  varint(body.length, head);
  return Buffer.concat([Buffer.from(head), Buffer.from(body)]);
}
function labelBytes(name: string, value: string): Buffer {
  return field(0x0a, Buffer.concat([field(0x0a, Buffer.from(name)), field(0x12, Buffer.from(value))]));
}

const SERIES_PER_REQUEST = 2000;

/** Remote write payloads: `series` series, `rounds` samples each; round-major order. */
function rwPayloads(series: number, rounds: number, job = 'bench'): { bodies: Buffer[]; perBody: number[] } {
  const labels: Buffer[] = [];
  for (let i = 0; i < series; i++) {
    labels.push(
      Buffer.concat([
        labelBytes('__name__', `bench_metric_${i % 100}`),
        labelBytes('instance', `host-${i % 500}:9100`),
        labelBytes('job', job),
        labelBytes('region', `r${i % 5}`),
        labelBytes('series', String(i)),
      ]),
    );
  }
  const t0 = Date.now() - rounds * 1000;
  const bodies: Buffer[] = [];
  const perBody: number[] = [];
  const sample = Buffer.alloc(8);
  for (let r = 0; r < rounds; r++) {
    const ts: number[] = [];
    varint(t0 + r * 1000, ts);
    for (let start = 0; start < series; start += SERIES_PER_REQUEST) {
      const parts: Buffer[] = [];
      const end = Math.min(series, start + SERIES_PER_REQUEST);
      for (let i = start; i < end; i++) {
        sample.writeDoubleLE(r * 10 + (i % 7));
        const smp = field(0x12, Buffer.concat([Buffer.from([0x09]), sample, Buffer.from([0x10, ...ts])]));
        parts.push(field(0x0a, Buffer.concat([labels[i]!, smp])));
      }
      bodies.push(Buffer.from(snappy.compress(Buffer.concat(parts))));
      perBody.push(end - start);
    }
  }
  return { bodies, perBody };
}

async function otlpLogPayloads(): Promise<{ bodies: Buffer[]; perBody: number[] }> {
  const { otlpRoot } = await import('../../plugins/ingest-otlp/codec.js');
  const T = otlpRoot().lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest');
  const bodies: Buffer[] = [];
  const perBody: number[] = [];
  const now = BigInt(Date.now()) * 1_000_000n;
  for (let p = 0; p < 50; p++) {
    const logRecords = [];
    for (let i = 0; i < 1000; i++) {
      logRecords.push({
        timeUnixNano: String(now + BigInt(p * 1000 + i)),
        severityNumber: 9 + (i % 3) * 4,
        severityText: ['INFO', 'WARN', 'ERROR'][i % 3],
        body: { stringValue: `GET /api/items/${i} 200 ${i % 97}ms user=${p * 1000 + i}` },
        attributes: [
          { key: 'http.method', value: { stringValue: 'GET' } },
          { key: 'http.status_code', value: { intValue: 200 } },
          { key: 'duration_ms', value: { doubleValue: i % 97 } },
        ],
        traceId: Buffer.alloc(16, (i % 250) + 1),
        spanId: Buffer.alloc(8, (i % 250) + 1),
      });
    }
    const req = {
      resourceLogs: [
        {
          resource: {
            attributes: [
              { key: 'service.name', value: { stringValue: `svc-${p % 5}` } },
              { key: 'host.name', value: { stringValue: `host-${p % 10}` } },
              { key: 'deployment.environment', value: { stringValue: 'bench' } },
            ],
          },
          scopeLogs: [{ scope: { name: 'bench' }, logRecords }],
        },
      ],
    };
    bodies.push(Buffer.from(T.encode(T.fromObject(req)).finish()));
    perBody.push(1000);
  }
  return { bodies, perBody };
}

/** Shipper bulk bodies: 10 × 5,000 `create` + ECS document pairs (see also ingest-shipper.ts). */
function shipperPayloads(): { bodies: Buffer[]; perBody: number[] } {
  const bodies: Buffer[] = [];
  const perBody: number[] = [];
  const base = Date.now();
  for (let p = 0; p < 10; p++) {
    let ndjson = '';
    for (let i = 0; i < 5000; i++) {
      ndjson += '{"create":{"_index":"logs-app-default"}}\n';
      ndjson +=
        JSON.stringify({
          '@timestamp': new Date(base + p * 5000 + i).toISOString(),
          message: `GET /api/orders/${i} 200 ${i % 100}ms`,
          log: { level: i % 20 === 0 ? 'error' : 'info' },
          service: { name: `svc-${i % 5}` },
          host: { name: `web-${i % 8}` },
          http: { request: { method: 'GET' }, response: { status_code: 200 } },
          event: { duration: (i % 100) * 1e6 },
        }) + '\n';
    }
    bodies.push(Buffer.from(ndjson));
    perBody.push(5000);
  }
  return { bodies, perBody };
}

async function runGenerator(job: GenJob): Promise<GenResult> {
  const prepStart = performance.now();
  const { bodies, perBody } =
    job.kind === 'rw'
      ? rwPayloads(job.oneRound ? 20_000 : 40_000, job.oneRound ? 1 : Math.max(1, Math.round((job.samples ?? 4_000_000) / 40_000)), job.rwJob)
      : job.kind === 'shipper'
        ? shipperPayloads()
        : await otlpLogPayloads();
  const prepareMs = performance.now() - prepStart;
  const url = new URL(job.url);
  const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency });
  const statuses: Record<string, number> = {};
  let records = 0;
  let requests = 0;
  let next = 0;
  const start = performance.now();
  const deadline = job.loopSeconds ? start + job.loopSeconds * 1000 : Infinity;
  const ordered = job.kind === 'rw' && !job.oneRound;
  const batchesPerRound = Math.ceil(40_000 / SERIES_PER_REQUEST);
  const sent: Promise<void>[] = [];
  const send = (i: number): Promise<void> =>
    new Promise((resolve) => {
      const body = bodies[i]!;
      const req = request(
        { agent, host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { ...job.headers, 'content-length': body.length } },
        (res) => {
          res.resume();
          res.on('end', () => {
            const s = String(res.statusCode);
            statuses[s] = (statuses[s] ?? 0) + 1;
            requests++;
            if (res.statusCode! >= 200 && res.statusCode! < 300) records += perBody[i]!;
            resolve();
          });
        },
      );
      req.on('error', () => {
        statuses.error = (statuses.error ?? 0) + 1;
        resolve();
      });
      req.end(body);
    });
  const worker = async () => {
    for (;;) {
      if (job.loopSeconds) {
        if (performance.now() >= deadline) return;
        await send(next++ % bodies.length);
      } else {
        if (next >= bodies.length) return;
        const i = next++;
        // Like Prometheus' shards (each series always in one shard, sent in order), a round's
        // request for a batch of series starts only after the previous round's request for
        // the same batch was answered: no server sees a series' samples out of order.
        const before = ordered && i >= batchesPerRound ? sent[i - batchesPerRound] : undefined;
        const p = before ? before.then(() => send(i)) : send(i);
        sent[i] = p;
        await p;
      }
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, worker));
  const elapsedMs = performance.now() - start;
  agent.destroy();
  return { records, requests, elapsedMs, statuses, prepareMs };
}

if (process.argv.includes('--generator')) {
  process.once('message', (job: GenJob) => {
    runGenerator(job).then(
      (r) => process.send!({ ok: true, result: r }, () => process.exit(0)),
      (e: Error) => process.send!({ ok: false, error: e.stack ?? String(e) }, () => process.exit(1)),
    );
  });
} else {
  // Deferred so the module's constants below are initialised first.
  setImmediate(() => void main().catch((e) => {
    console.error(e);
    process.exit(1);
  }));
}

// ---- coordinator --------------------------------------------------------------------------------

function generate(job: GenJob): Promise<GenResult> {
  return new Promise((resolve, reject) => {
    const child = fork(SELF, ['--generator'], { execArgv: ['--max-old-space-size=4096', '--import', 'tsx'], stdio: 'inherit' });
    child.once('message', (m: { ok: boolean; result?: GenResult; error?: string }) => (m.ok ? resolve(m.result!) : reject(new Error(m.error))));
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`generator exited with ${code}`));
    });
    child.send(job);
  });
}

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}


async function startLookoutFor(overrides: Record<string, unknown>) {
  const { loadConfig } = await import('../../kernel/config.js');
  const { startLookout } = await import('../../kernel/server.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'lookout-bench-'));
  const backend = arg('backend', 'embedded');
  const mk = (b: string) =>
    loadConfig({
      overrides: { server: { host: '127.0.0.1', port: 0 }, dataDir, storage: { backend: b }, log: { level: 'error' }, ...overrides },
      env: {},
    });
  let lookout;
  let used = backend;
  try {
    lookout = await startLookout({ config: mk(backend) });
  } catch (e) {
    if (backend !== 'embedded') throw e;
    used = 'memory'; // the embedded backend is not available in this build
    lookout = await startLookout({ config: mk('memory') });
  }
  return {
    url: lookout.url,
    backend: used,
    async stop() {
      await lookout.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function startPrometheus(): Promise<{ url: string; stop(): Promise<void> } | undefined> {
  if (spawnSync('prometheus', ['--version'], { stdio: 'ignore' }).status !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'lookout-bench-prom-'));
  const port = await freePort();
  writeFileSync(join(dir, 'prometheus.yml'), 'global: { scrape_interval: 1h }\n');
  const child: ChildProcess = spawn(
    'prometheus',
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--web.enable-remote-write-receiver', '--log.level=error'],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(url + '/-/ready')).ok) break;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * CPU time of this process (the server; the load comes from another process) per record since
 * `since`: user + system over every thread, so it counts the zlib pool and GC threads too.
 */
function serverCpuUsPerRecord(since: NodeJS.CpuUsage, records: number): number {
  const d = process.cpuUsage(since);
  return records > 0 ? (d.user + d.system) / records : 0;
}

const RW_HEADERS = { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', 'x-prometheus-remote-write-version': '0.1.0' };

async function main(): Promise<void> {
  const sections = arg('sections', 'remote-write,otlp-logs,shipper,overload').split(',');
  const concurrency = Number(arg('concurrency', '8'));
  const figures: Record<string, unknown> = {};
  const row = (k: string, v: string) => console.log(`${k.padEnd(44)} ${v}`);

  if (sections.includes('remote-write')) {
    const samples = Number(arg('rw-samples', '4000000'));
    const lk = await startLookoutFor({});
    const warmup = Number(arg('rw-warmup', '0'));
    if (warmup > 0) {
      // A first load on other series (job="bench-warmup"), unmeasured: what follows is a server
      // whose code is already compiled, still creating the measured run's 40,000 series.
      const w = await generate({ kind: 'rw', url: lk.url + '/ingester/write', headers: RW_HEADERS, concurrency, samples: warmup, rwJob: 'bench-warmup' });
      row('  warm-up (unmeasured)', `${w.records} samples, ${JSON.stringify(w.statuses)}`);
    }
    // Server CPU over the generator's whole run (payload preparation included, when the server idles).
    const cpu0 = process.cpuUsage();
    const r = await generate({ kind: 'rw', url: lk.url + '/ingester/write', headers: RW_HEADERS, concurrency, samples });
    const cpu = process.cpuUsage(cpu0);
    await lk.stop();
    const lookoutRate = r.records / (r.elapsedMs / 1000);
    row(`remote write → Lookout (${lk.backend})`, `${Math.round(lookoutRate).toLocaleString('en')} samples/s  (${r.records} samples, ${r.requests} requests, ${JSON.stringify(r.statuses)})`);
    const cpuNsPerSample = ((cpu.user + cpu.system) * 1000) / Math.max(1, r.records);
    row('  Lookout process CPU per sample', `${Math.round(cpuNsPerSample)} ns (all threads; load average ${(await import('node:os')).loadavg()[0]!.toFixed(1)})`);
    row('    of which user / system', `${Math.round((cpu.user * 1000) / Math.max(1, r.records))} / ${Math.round((cpu.system * 1000) / Math.max(1, r.records))} ns`);
    figures.rwLookoutCpuNsPerSample = Math.round(cpuNsPerSample);
    figures.rwLookoutSamplesPerSec = Math.round(lookoutRate);
    figures.rwLookoutStatuses = r.statuses;
    figures.backend = lk.backend;
    if (!process.argv.includes('--no-prometheus')) {
      const prom = await startPrometheus();
      if (!prom) row('remote write → Prometheus', 'SKIP: prometheus not installed');
      else {
        const p = await generate({ kind: 'rw', url: prom.url + '/api/v1/write', headers: RW_HEADERS, concurrency, samples });
        await prom.stop();
        const promRate = p.records / (p.elapsedMs / 1000);
        row('remote write → Prometheus', `${Math.round(promRate).toLocaleString('en')} samples/s  (${p.records} samples, ${JSON.stringify(p.statuses)})`);
        row('ratio Lookout / Prometheus', (lookoutRate / promRate).toFixed(2));
        figures.rwPrometheusSamplesPerSec = Math.round(promRate);
        figures.rwPrometheusStatuses = p.statuses;
        figures.rwRatio = Number((lookoutRate / promRate).toFixed(3));
      }
    }
  }

  if (sections.includes('rw-ceiling')) {
    // In process, one thread, no HTTP: snappy + columnar decode + embedded appendColumns (WAL
    // included, 8 requests in flight), on the remote-write section's payloads. The first round
    // (series creation) is excluded. CPU per sample is the steadier figure on a busy machine.
    const { snappyUncompress } = await import('../../kernel/http/snappy.js');
    const { decodeWriteRequestV1Columns } = await import('../../plugins/ingest-remote-write/decode-columns.js');
    const { LabelSetCache } = await import('../../plugins/ingest-remote-write/label-cache.js');
    const { openEmbeddedBackend } = await import('../../backends/embedded/index.js');
    const { createLogger } = await import('../../kernel/logger.js');
    const samples = Number(arg('rw-samples', '4000000'));
    const { bodies, perBody } = rwPayloads(40_000, Math.max(2, Math.round(samples / 40_000)));
    const dir = mkdtempSync(join(tmpdir(), 'lookout-bench-rwc-'));
    const b = openEmbeddedBackend({ dir, logger: createLogger('error', {}, () => undefined), fsync: 'interval', maintenanceIntervalMs: 0 });
    const cache = new LabelSetCache();
    const tooLarge = () => new Error('too large');
    const perRound = 40_000 / SERIES_PER_REQUEST;
    let n = 0;
    let t0 = 0;
    let cpu0 = process.cpuUsage();
    let firstRound = cpu0;
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < bodies.length; i++) {
      if (i === perRound) {
        await Promise.all(inflight.splice(0));
        t0 = performance.now();
        firstRound = process.cpuUsage(cpu0);
        cpu0 = process.cpuUsage();
      }
      const d = decodeWriteRequestV1Columns(snappyUncompress(bodies[i]!, 1 << 30, tooLarge), undefined, cache)!;
      inflight.push(b.metrics.appendColumns(d.columns));
      if (i >= perRound) n += perBody[i]!;
      if (inflight.length >= 8) await inflight.shift();
    }
    await Promise.all(inflight);
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    await b.close();
    rmSync(dir, { recursive: true, force: true });
    const rate = n / (wall / 1000);
    const ns = ((cpu.user + cpu.system) * 1000) / n;
    row('  of which user / system', `${Math.round((cpu.user * 1000) / n)} / ${Math.round((cpu.system * 1000) / n)} ns`);
    row('ceiling: remote write snappy+decode+append', `${Math.round(rate).toLocaleString('en')} samples/s, ${Math.round(ns)} ns CPU per sample (in process, no HTTP)`);
    const firstNs = ((firstRound.user + firstRound.system) * 1000) / 40_000;
    row('  first round (40,000 new series)', `${Math.round(firstNs)} ns CPU per sample; over all rounds ${Math.round(((cpu.user + cpu.system + firstRound.user + firstRound.system) * 1000) / (n + 40_000))} ns`);
    figures.ceilingRwFirstRoundCpuNsPerSample = Math.round(firstNs);
    figures.ceilingRwSamplesPerSec = Math.round(rate);
    figures.ceilingRwCpuNsPerSample = Math.round(ns);
  }

  if (sections.includes('generator')) {
    // Capacity of the load generator itself: a server that only drains bodies and answers 204.
    const { createServer: createHttpServer } = await import('node:http');
    const nullServer = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((r) => nullServer.listen(0, '127.0.0.1', () => r()));
    const port = (nullServer.address() as { port: number }).port;
    const samples = Number(arg('rw-samples', '4000000'));
    const cpu0 = process.cpuUsage();
    const r = await generate({ kind: 'rw', url: `http://127.0.0.1:${port}/`, headers: RW_HEADERS, concurrency, samples });
    const cpu = process.cpuUsage(cpu0);
    nullServer.close();
    const rate = r.records / (r.elapsedMs / 1000);
    row('generator alone (drain-only server)', `${Math.round(rate).toLocaleString('en')} samples/s`);
    row('  drain-only server CPU per sample', `${Math.round(((cpu.user + cpu.system) * 1000) / Math.max(1, r.records))} ns (user ${Math.round((cpu.user * 1000) / Math.max(1, r.records))})`);
    figures.generatorSamplesPerSec = Math.round(rate);
  }

  if (sections.includes('otlp-logs')) {
    const seconds = Number(arg('seconds', '8'));
    const lk = await startLookoutFor({});
    const cpu0 = process.cpuUsage();
    const r = await generate({ kind: 'otlp-logs', url: lk.url + '/ingester/otlp/v1/logs', headers: { 'content-type': 'application/x-protobuf' }, concurrency, loopSeconds: seconds });
    const cpu = serverCpuUsPerRecord(cpu0, r.records);
    await lk.stop();
    const rate = r.records / (r.elapsedMs / 1000);
    row(`OTLP logs protobuf → Lookout (${lk.backend})`, `${Math.round(rate).toLocaleString('en')} records/s  (${r.records} records, ${JSON.stringify(r.statuses)})`);
    row('  server CPU per record (all threads)', `${cpu.toFixed(2)} µs  (less sensitive to machine load than records/s)`);
    figures.otlpLogsRecordsPerSec = Math.round(rate);
    figures.otlpLogsStatuses = r.statuses;
    figures.otlpLogsServerCpuUsPerRecord = Number(cpu.toFixed(2));
  }

  if (sections.includes('shipper')) {
    const seconds = Number(arg('seconds', '8'));
    const lk = await startLookoutFor({});
    const cpu0 = process.cpuUsage();
    const r = await generate({ kind: 'shipper', url: lk.url + '/ingester/api/v1/shipper/_bulk', headers: { 'content-type': 'application/x-ndjson' }, concurrency: Math.min(concurrency, 4), loopSeconds: seconds });
    const cpu = serverCpuUsPerRecord(cpu0, r.records);
    await lk.stop();
    const rate = r.records / (r.elapsedMs / 1000);
    row(`shipper bulk → Lookout (${lk.backend})`, `${Math.round(rate).toLocaleString('en')} documents/s  (${r.records} documents, ${JSON.stringify(r.statuses)})`);
    row('  server CPU per document (all threads)', `${cpu.toFixed(2)} µs  (less sensitive to machine load than documents/s)`);
    figures.shipperDocsPerSec = Math.round(rate);
    figures.shipperStatuses = r.statuses;
    figures.shipperServerCpuUsPerDoc = Number(cpu.toFixed(2));
  }

  if (sections.includes('ceiling')) {
    const { decodeLogsProtobuf } = await import('../../plugins/ingest-otlp/logs-decode.js');
    const { parseBulk } = await import('../../plugins/ingest-shipper/bulk.js');
    const now = BigInt(Date.now()) * 1_000_000n;
    const median = (bodies: Buffer[], one: (b: Buffer) => number): number => {
      const rates: number[] = [];
      for (let run = 0; run < 6; run++) {
        const t0 = performance.now();
        let n = 0;
        for (let i = 0; performance.now() - t0 < 2000; i++) n += one(bodies[i % bodies.length]!);
        if (run > 0) rates.push(n / ((performance.now() - t0) / 1000)); // run 0 warms up the JIT
      }
      return rates.sort((a, b) => a - b)[2]!;
    };
    const otlp = median((await otlpLogPayloads()).bodies, (b) => decodeLogsProtobuf(b, now).length);
    row('ceiling: OTLP logs protobuf decode+map', `${Math.round(otlp).toLocaleString('en')} records/s (median of 5)`);
    const ship = median(shipperPayloads().bodies, (b) => parseBulk(b, undefined).logs.length);
    row('ceiling: shipper bulk parse+map', `${Math.round(ship).toLocaleString('en')} documents/s (median of 5)`);
    figures.ceilingOtlpLogsRecordsPerSec = Math.round(otlp);
    figures.ceilingShipperDocsPerSec = Math.round(ship);
    figures.loadAverage1m = Number((await import('node:os')).loadavg()[0]!.toFixed(1));
  }

  if (sections.includes('overload')) {
    const seconds = Number(arg('overload-seconds', '60'));
    const maxConcurrent = 16;
    const lk = await startLookoutFor({ limits: { ingestMaxConcurrent: maxConcurrent } });
    const rss: number[] = [];
    const timer = setInterval(() => rss.push(process.memoryUsage().rss), 1000);
    const r = await generate({ kind: 'rw', url: lk.url + '/ingester/write', headers: RW_HEADERS, concurrency: 256, loopSeconds: seconds, oneRound: true });
    clearInterval(timer);
    await lk.stop();
    const mb = (b: number) => Math.round(b / 1048576);
    const half = rss.slice(Math.floor(rss.length / 2));
    const firstHalfMax = Math.max(...rss.slice(0, Math.floor(rss.length / 2)));
    row(`overload ${seconds}s, 256 clients, ingestMaxConcurrent ${maxConcurrent}`, `statuses ${JSON.stringify(r.statuses)}`);
    row('  RSS MB first / max / last', `${mb(rss[0]!)} / ${mb(Math.max(...rss))} / ${mb(rss[rss.length - 1]!)}`);
    row('  RSS max 2nd half − max 1st half (MB)', String(mb(Math.max(...half) - firstHalfMax)));
    figures.overload = {
      seconds,
      statuses: r.statuses,
      rssFirstMB: mb(rss[0]!),
      rssMaxMB: mb(Math.max(...rss)),
      rssLastMB: mb(rss[rss.length - 1]!),
      rssGrowthSecondHalfMB: mb(Math.max(...half) - firstHalfMax),
    };
  }
  // End-to-end figures depend on what else runs on the machine: say how busy it was.
  figures.loadAverage1m ??= Number((await import('node:os')).loadavg()[0]!.toFixed(1));
  console.log(JSON.stringify({ bench: 'ingest', ...figures }));
}
