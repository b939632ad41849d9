/**
 * Archiver round trip on an fs archive: log lines ingested over HTTP are written in the archive
 * layout (every flushSeconds and on shutdown), then hydrated back by another server, equal to
 * the originals; replayed lines are never archived again.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Tokens } from '../../kernel/services.js';
import type { LogRecord } from '../../kernel/models.js';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { HOUR, T0, call, hydrate, storedLines, waitStatus, type Line } from './helpers.js';

let dir: string;

function walk(root: string): string[] {
  const out: string[] = [];
  const rec = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) rec(p);
      else out.push(relative(root, p));
    }
  };
  try {
    rec(root);
  } catch {
    /* no archive yet */
  }
  return out.sort();
}

function readArchive(root: string): { key: string; lines: Line[] }[] {
  return walk(root).map((key) => ({
    key,
    lines: gunzipSync(readFileSync(join(root, key)))
      .toString('utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Line),
  }));
}

/** NDJSON for the forwarder output: two hours of lines, timestamps on whole milliseconds. */
function forwarderBody(n: number, tag: string): string {
  const rows: string[] = [];
  for (let i = 0; i < n; i++) {
    const ms = T0 + Math.floor((i * 2 * HOUR) / n) + (i % 7);
    rows.push(JSON.stringify({ date: ms / 1000, log: `${tag} line ${i}`, service: i % 2 ? 'api' : 'web', level: 'info', code: i % 5 }));
  }
  return rows.join('\n') + '\n';
}

async function ingest(srv: TestServer, body: string): Promise<void> {
  const r = await srv.fetch('/ingester/v1/forwarder_b', {
    method: 'POST',
    token: null,
    headers: { 'content-type': 'application/x-ndjson' },
    body,
  });
  assert.is(r.status, 200, await r.text());
}

async function allLogs(srv: TestServer): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const b of srv.lookout.kernel.get(Tokens.Storage).logs.scan({ startNs: 0n, endNs: 4_000_000_000_000_000_000n, order: 'asc' })) {
    out.push(...b.records);
  }
  return out;
}

const comparable = (ms: number, message: string, labels: Record<string, string>, facets: Record<string, unknown>) => {
  const l = { ...labels };
  delete l.hydration_job_id;
  return JSON.stringify([ms, message, Object.entries(l).sort(), Object.entries(facets).sort()]);
};

test.before(() => {
  dir = tempDir('lookout-archiver-');
});
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('ingested lines are archived in the layout, flushed periodically and on stop, and hydrate back', async () => {
  const root = join(dir, 'arch');
  const cfg = {
    archives: [{ name: 'local', type: 'fs', path: root }],
    archiver: { enabled: true, archive: 'local', flushSeconds: 1 },
  };
  const one = await startTestServer(cfg);
  let originals: LogRecord[];
  try {
    await ingest(one, forwarderBody(200, 'first'));
    // Periodic flush (flushSeconds: 1) without stopping.
    const until = Date.now() + 10_000;
    while (readArchive(root).reduce((n, o) => n + o.lines.length, 0) < 200) {
      assert.ok(Date.now() < until, 'archive flushed within flushSeconds');
      await new Promise((r) => setTimeout(r, 100));
    }
    await ingest(one, forwarderBody(50, 'second'));
    originals = await allLogs(one);
  } finally {
    await one.stop();
  }
  assert.is(originals.length, 250);
  const objects = readArchive(root);
  for (const o of objects) {
    assert.match(o.key, /^\d{4}\/\d{2}\/\d{2}\/\d{2}\/[^/]+\.ndjson\.gz$/);
    for (const l of o.lines) {
      assert.equal(Object.keys(l).sort(), ['facets', 'labels', 'message', 'timestampMs']);
      const d = new Date(l.timestampMs);
      const part = `${d.getUTCFullYear()}/${String(d.getUTCMonth() + 1).padStart(2, '0')}/${String(d.getUTCDate()).padStart(2, '0')}/${String(d.getUTCHours()).padStart(2, '0')}/`;
      assert.ok(o.key.startsWith(part), `${o.key} holds its hour's lines`);
    }
  }
  const archived = objects.flatMap((o) => o.lines);
  const want = originals.map((r) => comparable(Number(r.timestampNs / 1_000_000n), r.message, r.labels, r.facets)).sort();
  assert.equal(archived.map((l) => comparable(l.timestampMs, l.message, l.labels, l.facets)).sort(), want);

  // Another server hydrates the archive back; its own archiver must not re-archive the replay.
  const two = await startTestServer(cfg);
  try {
    const jobId = await hydrate(two, { archiveName: 'local', startTsMs: T0, endTsMs: T0 + 3 * HOUR });
    const done = await waitStatus(two, jobId, ['DONE', 'FAILED']);
    assert.is(done.jobStatus, 'DONE');
    assert.is(done.summary.filteredLines, 250);
    const replayed = await storedLines(two, jobId);
    assert.equal(replayed.map((r) => comparable(Number(r.timestampNs / 1_000_000n), r.message, r.labels, r.facets)).sort(), want);
    const r = await call(two, 'POST', 'list-jobs', {});
    assert.is(r.body.length, 1);
  } finally {
    await two.stop();
  }
  assert.equal(walk(root), objects.map((o) => o.key), 'no object added by the replay');
});

test('archiver pointing at an unknown archive is a startup error', async () => {
  try {
    const s = await startTestServer({ archives: [], archiver: { enabled: true, archive: 'missing', flushSeconds: 5 } });
    await s.stop();
    assert.unreachable('should not start');
  } catch (e) {
    assert.match((e as Error).message, /archiver\.archive "missing"/);
  }
});

test.run();
