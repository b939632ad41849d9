/**
 * Shipper bulk throughput (issue 4): documents per second through `POST
 * /ingester/api/v1/shipper/_bulk` end to end over HTTP — the search engine's bulk NDJSON
 * (Filebeat-like ECS documents), decoded, stored and answered with a full bulk response.
 * The load comes from a separate process (scripts/bench/lib/post-load.mjs) posting one
 * pre-encoded body over keep-alive connections.
 *
 *   npm run bench -- ingest-shipper [--docs 5000] [--concurrency 4] [--seconds 10] [--gzip]
 *
 * Prints a table and a final JSON line. Target: ≥ 200,000 documents/s.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { loadConfig } from '../../kernel/config.js';
import { startLookout } from '../../kernel/server.js';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const DOCS = arg('docs', 5000);
const CONCURRENCY = arg('concurrency', 4);
const SECONDS = arg('seconds', 10);
const GZIP = process.argv.includes('--gzip');
const KEY = 'bench-ingest-key';

const dir = mkdtempSync(join(tmpdir(), 'lookout-bench-shipper-'));
const config = loadConfig({
  overrides: {
    server: { host: '127.0.0.1', port: 0 },
    dataDir: join(dir, 'data'),
    storage: { backend: process.env.LOOKOUT_BENCH_BACKEND ?? 'memory' },
    log: { level: 'error' },
    auth: { ingestApiKeys: [KEY], serviceAccounts: [], users: [] },
    limits: { ingestMaxConcurrent: 64 },
  },
  env: {},
});
const srv = await startLookout({ config });

// Filebeat-like ECS documents with a `create` action each, as Filebeat sends to a data stream.
let ndjson = '';
const base = Date.UTC(2025, 10, 22, 10);
for (let i = 0; i < DOCS; i++) {
  ndjson += '{"create":{"_index":"logs-app-default"}}\n';
  ndjson +=
    JSON.stringify({
      '@timestamp': new Date(base + i).toISOString(),
      message: `GET /api/orders/${i} 200 ${i % 100}ms`,
      log: { level: i % 20 === 0 ? 'error' : 'info' },
      service: { name: `svc-${i % 5}` },
      host: { name: `web-${i % 8}` },
      http: { request: { method: 'GET' }, response: { status_code: 200 } },
      event: { duration: (i % 100) * 1e6 },
    }) + '\n';
}
const raw = Buffer.from(ndjson);
const body = GZIP ? gzipSync(raw, { level: 1 }) : raw;
const bodyFile = join(dir, 'body');
writeFileSync(bodyFile, body);
const headers: Record<string, string> = {
  'content-type': 'application/x-ndjson',
  authorization: 'ApiKey ' + Buffer.from(`bench:${KEY}`).toString('base64'),
  ...(GZIP ? { 'content-encoding': 'gzip' } : {}),
};

function runLoad(seconds: number): Promise<{ requests: number; ok: number; statuses: Record<string, number>; seconds: number; latencyMsP50: number; latencyMsP99: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, 'lib', 'post-load.mjs'), `${srv.url}/ingester/api/v1/shipper/_bulk`, bodyFile, JSON.stringify(headers), String(CONCURRENCY), String(seconds)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load generator exited ${code}`))));
  });
}

await runLoad(2); // warm-up (JIT)
const rssBefore = process.memoryUsage().rss;
const cpu0 = process.cpuUsage();
const r = await runLoad(SECONDS);
const cpu = process.cpuUsage(cpu0);
const docsPerSec = (r.ok * DOCS) / r.seconds;
// Server CPU (this process, all threads; the load comes from a child) per document stored.
const cpuUsPerDoc = r.ok > 0 ? (cpu.user + cpu.system) / (r.ok * DOCS) : 0;
const rows = [
  ['body', `${DOCS} docs, ${(raw.length / 1e6).toFixed(2)} MB${GZIP ? `, gzip ${(body.length / 1e6).toFixed(2)} MB` : ''}`],
  ['concurrency', String(CONCURRENCY)],
  ['requests ok / total', `${r.ok} / ${r.requests} ${JSON.stringify(r.statuses)}`],
  ['latency p50 / p99 ms', `${r.latencyMsP50} / ${r.latencyMsP99}`],
  ['documents/s', Math.round(docsPerSec).toLocaleString('en-US')],
  ['target', '≥ 200,000 documents/s'],
  ['server CPU µs per document', cpuUsPerDoc.toFixed(2)],
  ['load average (1 min)', os.loadavg()[0]!.toFixed(1)],
  ['server RSS MB (start → end)', `${Math.round(rssBefore / 1e6)} → ${Math.round(process.memoryUsage().rss / 1e6)}`],
];
for (const [k, v] of rows) console.log(`${k.padEnd(30)} ${v}`);
await srv.stop();
rmSync(dir, { recursive: true, force: true });
console.log(
  JSON.stringify({
    bench: 'ingest-shipper',
    docsPerBody: DOCS,
    concurrency: CONCURRENCY,
    gzip: GZIP,
    seconds: r.seconds,
    requests: r.requests,
    ok: r.ok,
    docsPerSec: Math.round(docsPerSec),
    target: 200000,
    meetsTarget: docsPerSec >= 200000,
    latencyMsP50: r.latencyMsP50,
    latencyMsP99: r.latencyMsP99,
    serverCpuUsPerDoc: Number(cpuUsPerDoc.toFixed(2)),
    loadAverage1m: Number(os.loadavg()[0]!.toFixed(1)),
    backend: process.env.LOOKOUT_BENCH_BACKEND ?? 'memory',
  }),
);
process.exit(0);
