/**
 * The s3 archive source against a real S3-speaking server (s3rver, in-process on 127.0.0.1 and
 * port 0): hydration from a bucket with and without a prefix, objects outside the layout
 * ignored, an error (missing bucket) making the job FAILED, and the archiver writing to S3 with
 * a round trip back through hydration.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync, gunzipSync } from 'node:zlib';
import S3rver from 's3rver';
import { Client } from 'minio';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { HOUR, T0, dataset, expectedCount, hydrate, partition, storedLines, waitStatus, type Filter, type Line } from './helpers.js';

let dir: string;
let s3: S3rver;
let endpoint: string;
let client: Client;
const ACCESS = 'S3RVER';
const lines = dataset(600, 3, 21);

async function putArchive(prefix: string, data: readonly Line[]): Promise<void> {
  const byHour = new Map<string, string[]>();
  for (const l of data) {
    const p = partition(l.timestampMs);
    byHour.set(p, [...(byHour.get(p) ?? []), JSON.stringify(l)]);
  }
  for (const [p, rows] of byHour) {
    const half = Math.ceil(rows.length / 2);
    for (const [i, part] of [rows.slice(0, half), rows.slice(half)].entries()) {
      const body = gzipSync(part.join('\n') + '\n');
      await client.putObject('logs', `${prefix}${p}obj-${i}.ndjson.gz`, body, body.length);
    }
  }
}

async function listKeys(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of client.listObjectsV2('logs', prefix, true) as AsyncIterable<{ name: string }>) keys.push(o.name);
  return keys.sort();
}

test.before(async () => {
  dir = tempDir('lookout-s3-');
  s3 = new S3rver({ address: '127.0.0.1', port: 0, directory: join(dir, 's3'), silent: true, configureBuckets: [{ name: 'logs' }] });
  const { port } = await s3.run();
  endpoint = `http://127.0.0.1:${port}`;
  client = new Client({ endPoint: '127.0.0.1', port, useSSL: false, accessKey: ACCESS, secretKey: ACCESS, region: 'us-east-1', pathStyle: true });
  await putArchive('', lines);
  await putArchive('tenant/a/', lines.slice(0, 100));
  // Not archive data: a nested object and a wrong suffix inside a partition.
  const junk = gzipSync(JSON.stringify(lines[0]) + '\n');
  await client.putObject('logs', `${partition(T0)}nested/x.ndjson.gz`, junk, junk.length);
  await client.putObject('logs', `${partition(T0)}readme.txt`, Buffer.from('hi'), 2);
});

test.after(async () => {
  await s3?.close();
  rmSync(dir, { recursive: true, force: true });
});

const s3Archive = (name: string, extra: Record<string, unknown>) => ({
  name,
  type: 's3',
  endpoint,
  bucket: 'logs',
  prefix: '',
  accessKey: ACCESS,
  secretKey: ACCESS,
  region: 'us-east-1',
  ...extra,
});

test('hydrates from S3 (prefix "" and a prefix), filters checked against a brute-force count', async () => {
  const srv: TestServer = await startTestServer({
    archives: [
      s3Archive('s3-root', {}),
      s3Archive('s3-tenant', { prefix: '/tenant/a/' }),
      s3Archive('s3-missing-bucket', { bucket: 'nope' }),
    ],
    hydration: { maxConcurrentJobs: 8 },
  });
  try {
    const range = { startTsMs: T0 + 10 * 60_000, endTsMs: T0 + 3 * HOUR - 1 };
    const filters: Filter[] = [
      { field: 'env', operation: 'neq', value: 'dev' },
      { operation: 'regex', value: '(GET|POST) .*', type: 'message' },
    ];
    const root = await hydrate(srv, { archiveName: 's3-root', ...range, filters });
    const tenant = await hydrate(srv, { archiveName: 's3-tenant', ...range, isDryRun: true });
    const missing = await hydrate(srv, { archiveName: 's3-missing-bucket', ...range });

    const r = await waitStatus(srv, root, ['DONE', 'FAILED']);
    assert.is(r.jobStatus, 'DONE');
    const want = expectedCount(lines, range.startTsMs, range.endTsMs, filters);
    assert.is(r.summary.totalLines, want.totalLines);
    assert.is(r.summary.filteredLines, want.filteredLines);
    assert.is(r.summary.totalHours, 3);
    assert.is((await storedLines(srv, root)).length, want.filteredLines);

    const t = await waitStatus(srv, tenant, ['DONE', 'FAILED']);
    assert.is(t.jobStatus, 'DONE');
    assert.is(t.summary.totalLines, expectedCount(lines.slice(0, 100), range.startTsMs, range.endTsMs, []).totalLines);

    const m = await waitStatus(srv, missing, ['DONE', 'FAILED']);
    assert.is(m.jobStatus, 'FAILED');
    const job = ((await (await srv.fetch('/hydration/query/list-jobs', { method: 'POST', body: '{}' })).json()) as { jobId: string; errorMsg: string }[]).find((j) => j.jobId === missing)!;
    assert.match(job.errorMsg, /archive "s3-missing-bucket"/);
    assert.match(job.errorMsg, /bucket/i);
  } finally {
    await srv.stop();
  }
});

test('the archiver writes to S3 in the layout and the archive hydrates back', async () => {
  const cfg = {
    archives: [s3Archive('s3-out', { prefix: 'from-lookout' })],
    archiver: { enabled: true, archive: 's3-out', flushSeconds: 60 },
  };
  const one = await startTestServer(cfg);
  const rows = Array.from({ length: 40 }, (_, i) =>
    JSON.stringify({ date: (T0 + i * 5 * 60_000) / 1000, log: `s3 line ${i}`, service: 'api', level: i % 3 ? 'info' : 'error' }),
  );
  try {
    const r = await one.fetch('/ingester/v1/forwarder_b', {
      method: 'POST',
      token: null,
      headers: { 'content-type': 'application/x-ndjson' },
      body: rows.join('\n'),
    });
    assert.is(r.status, 200, await r.text());
  } finally {
    await one.stop(); // flushes the archiver
  }
  const keys = await listKeys('from-lookout/');
  assert.ok(keys.length >= 4, keys.join(','));
  let n = 0;
  for (const k of keys) {
    assert.match(k, /^from-lookout\/\d{4}\/\d{2}\/\d{2}\/\d{2}\/[^/]+\.ndjson\.gz$/);
    const chunks: Buffer[] = [];
    for await (const c of await client.getObject('logs', k)) chunks.push(c as Buffer);
    n += gunzipSync(Buffer.concat(chunks)).toString('utf8').split('\n').filter(Boolean).length;
  }
  assert.is(n, 40);

  const two = await startTestServer(cfg);
  try {
    const jobId = await hydrate(two, {
      archiveName: 's3-out',
      startTsMs: T0,
      endTsMs: T0 + 4 * HOUR,
      filters: [{ field: 'level', operation: 'eq', value: 'error' }],
    });
    const done = await waitStatus(two, jobId, ['DONE', 'FAILED']);
    assert.is(done.jobStatus, 'DONE');
    assert.is(done.summary.totalLines, 40);
    assert.is(done.summary.filteredLines, 14);
    const stored = await storedLines(two, jobId);
    assert.equal(stored.map((s) => s.message).sort(), rows.map((r) => JSON.parse(r)).filter((_, i) => i % 3 === 0).map((r) => r.log).sort());
  } finally {
    await two.stop();
  }
  assert.equal(await listKeys('from-lookout/'), keys, 'replayed lines are not archived again');
});

test.run();
