/**
 * Debian's real `prometheus` binary scrapes itself and remote-writes to Lookout (bearer key);
 * its series and metadata are then read back from Lookout's storage.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokens } from '../../kernel/services.js';
import type { StorageBackend, StoredSeries } from '../../kernel/storage.js';
import type { LabelMatcher } from '../../kernel/matchers.js';
import { INGEST_KEY, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { freePort } from '../helpers/ports.js';

const haveProm = spawnSync('prometheus', ['--version'], { stdio: 'ignore' }).status === 0;


let srv: TestServer | undefined;
let prom: ChildProcess | undefined;
let storage: StorageBackend;
let promLog = '';

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; prometheus log:\n${promLog.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function select(matchers: LabelMatcher[]): Promise<StoredSeries[]> {
  const out: StoredSeries[] = [];
  for await (const s of storage.metrics.select(matchers, 0, Date.now() + 3600_000)) out.push(s);
  return out;
}

if (!haveProm) {
  console.log('SKIP: prometheus binary not installed (apt-get install prometheus)');
  test.skip('prometheus remote_write to Lookout', () => {});
} else {
  test.before(async () => {
    srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
    storage = srv.lookout.kernel.get(Tokens.Storage);
    const dir = tempDir('lookout-prom-');
    const port = await freePort();
    const cfg = join(dir, 'prometheus.yml');
    writeFileSync(
      cfg,
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        'scrape_configs:',
        `  - job_name: prometheus`,
        `    static_configs: [{ targets: ["127.0.0.1:${port}"] }]`,
        'remote_write:',
        `  - url: ${srv.url}/ingester/write`,
        `    authorization: { credentials: ${INGEST_KEY} }`,
        '    queue_config: { batch_send_deadline: 1s, min_backoff: 100ms, max_backoff: 1s }',
        '    metadata_config: { send: true, send_interval: 1s }',
        '',
      ].join('\n'),
    );
    prom = spawn(
      'prometheus',
      [`--config.file=${cfg}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prom.stdout!.on('data', (d) => (promLog += d));
    prom.stderr!.on('data', (d) => (promLog += d));
  });
  test.after(async () => {
    if (prom && prom.exitCode === null) {
      const exited = new Promise((r) => prom!.once('exit', r));
      prom.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (prom.exitCode === null) prom.kill('SIGKILL');
    }
    await srv?.stop();
  });

  test('prometheus remote_write: scraped series and metadata arrive', async () => {
    const up = await waitFor('up{job="prometheus"}', async () => {
      const s = await select([{ name: '__name__', op: '=', value: 'up' }, { name: 'job', op: '=', value: 'prometheus' }]);
      return s.length && s[0]!.values.length ? s : undefined;
    });
    assert.is(up[0]!.values[0], 1);
    assert.ok(up[0]!.labels.instance?.startsWith('127.0.0.1:'));
    const build = await select([{ name: '__name__', op: '=', value: 'prometheus_build_info' }]);
    assert.is(build.length, 1);
    assert.ok(build[0]!.labels.version, 'build_info has a version label');
    // Request counters appear after the first scrape has been served.
    const counters = await waitFor('prometheus_http_requests_total', async () => {
      const s = await select([{ name: '__name__', op: '=', value: 'prometheus_http_requests_total' }]);
      return s.length ? s : undefined;
    });
    assert.ok(counters[0]!.labels.handler, 'counter series carry their labels');
    const md = await waitFor('metadata', async () => {
      const m = await storage.metrics.metadata('prometheus_http_requests_total');
      return m.get('prometheus_http_requests_total')?.length ? m : undefined;
    });
    assert.is(md.get('prometheus_http_requests_total')![0]!.type, 'counter');
    assert.ok(!/error|failed/i.test(promLog.split('\n').filter((l) => l.includes('remote')).join('\n')), `remote write errors:\n${promLog}`);
  });
}

test.run();
