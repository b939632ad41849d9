/**
 * The hydration HTTP interface against a real server: every endpoint, the documented error
 * statuses and body patterns, the job state machine (including the 400s for invalid
 * transitions), FAILED jobs, the 429 concurrency limit and the 403 Admin rule with RBAC on and off.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { EDITOR_TOKEN, VIEWER_TOKEN, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { HOUR, T0, call, dataset, hydrate, partition, storedLines, waitStatus, writeFsArchive } from './helpers.js';

const lines = dataset(300, 2, 11);
let dir: string;
const servers: TestServer[] = [];

/** Slow replay (5 lines a batch, 60 ms between batches) so jobs stay HYDRATING long enough. */
async function server(overrides: Record<string, unknown> = {}): Promise<TestServer> {
  const s = await startTestServer({
    archives: [
      { name: 'local', type: 'fs', path: join(dir, 'a') },
      { name: 'broken', type: 'fs', path: join(dir, 'broken') },
    ],
    pluginOptions: { hydration: { batchSize: 5, batchDelayMs: 60 } },
    ...overrides,
  });
  servers.push(s);
  return s;
}

let srv: TestServer;
const RANGE = { archiveName: 'local', startTsMs: T0, endTsMs: T0 + 2 * HOUR - 1 };

test.before(async () => {
  dir = tempDir('lookout-hydration-api-');
  writeFsArchive(join(dir, 'a'), lines);
  const bad = join(dir, 'broken', partition(T0));
  mkdirSync(bad, { recursive: true });
  writeFileSync(join(bad, 'a-good.ndjson.gz'), gzipSync(JSON.stringify(lines[0]) + '\n'));
  writeFileSync(join(bad, 'b-corrupt.ndjson.gz'), Buffer.from('this is not gzip'));
  srv = await server({ hydration: { maxConcurrentJobs: 8 } });
});

test.after(async () => {
  for (const s of servers) await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('list-archives returns the configured names; a bearer token is required', async () => {
  const r = await call(srv, 'GET', 'list-archives');
  assert.is(r.status, 200);
  assert.equal(r.body, [{ name: 'local' }, { name: 'broken' }]);
  const viewer = await call(srv, 'GET', 'list-archives', undefined, VIEWER_TOKEN);
  assert.is(viewer.status, 200);
  assert.is((await call(srv, 'GET', 'list-archives', undefined, null)).status, 401);
  assert.is((await call(srv, 'POST', 'list-jobs', {}, 'wrong-token')).status, 401);
});

test('hydrate: validation errors are 400 with the documented plain-text bodies', async () => {
  const bad = async (body: unknown, pattern: RegExp) => {
    const r = await call(srv, 'POST', 'hydrate', body);
    assert.is(r.status, 400, `${JSON.stringify(body)} → ${r.text}`);
    assert.match(r.text, pattern);
    assert.ok(!r.text.trim().startsWith('{'), 'plain text, not JSON');
  };
  await bad('{"archiveName": "local",', /^unmarshal failure/);
  await bad('', /^unmarshal failure/);
  await bad('[1]', /^unmarshal failure/);
  await bad({ ...RANGE, startTsMs: 'yesterday' }, /^unmarshal failure.*startTsMs/);
  await bad({ ...RANGE, isDryRun: 'yes' }, /^unmarshal failure/);
  await bad({ ...RANGE, filters: {} }, /^unmarshal failure/);
  await bad({ ...RANGE, addTags: { a: 1 } }, /^unmarshal failure/);
  await bad({ ...RANGE, archiveName: 'nope' }, /archive name "nope" does not exist in the list of archives/);
  await bad({ startTsMs: 1, endTsMs: 2 }, /does not exist in the list of archives/);
  await bad({ archiveName: 'local', endTsMs: 2 }, /startTsMs is required/);
  await bad({ archiveName: 'local', startTsMs: 2 }, /endTsMs is required/);
  await bad({ ...RANGE, startTsMs: RANGE.endTsMs + 1 }, /must not be after/);
  await bad({ ...RANGE, retentionDurationValue: 3, retentionDurationUnit: 'months' }, /retentionDurationUnit "months" is invalid/);
  await bad({ ...RANGE, retentionDurationValue: 3 }, /retentionDurationUnit .* is required/);
  await bad({ ...RANGE, retentionDurationValue: -1, retentionDurationUnit: 'days' }, /must not be negative/);
  await bad({ ...RANGE, filters: [{ field: 'a', operation: 'like', value: 'x' }] }, /operation "like" is invalid/);
  await bad({ ...RANGE, filters: [{ field: 'a', value: 'x' }] }, /operation is required/);
  await bad({ ...RANGE, filters: [{ field: 'a', operation: 'eq' }] }, /value is required/);
  await bad({ ...RANGE, filters: [{ field: 'a', operation: 'eq', value: 'x', type: 'body' }] }, /type "body" is invalid/);
  await bad({ ...RANGE, filters: [{ operation: 'eq', value: 'x' }] }, /field is required when type is labels/);
  await bad({ ...RANGE, filters: [{ field: 'a', operation: 'eq', value: 'x', type: 'message' }] }, /field must be omitted or empty/);
  await bad({ ...RANGE, filters: [{ field: 'a', operation: 'regex', value: '(unclosed' }] }, /invalid regex/);
  // Backreferences are not RE2: refused, never run on a backtracking engine.
  await bad({ ...RANGE, filters: [{ operation: 'regex', value: '(a)\\1', type: 'message' }] }, /invalid regex/);
  // Nothing was created by the rejected requests.
  const jobs = await call(srv, 'POST', 'list-jobs', {});
  assert.equal(jobs.body, []);
});

test('job-progress and list-jobs: unknown jobs and malformed bodies', async () => {
  const r = await call(srv, 'POST', 'job-progress', { jobId: 'no-such-job' });
  assert.is(r.status, 400);
  assert.match(r.text, /job-progress/);
  assert.match(r.text, /no-such-job/);
  assert.match(r.text, /current status is UNKNOWN/);
  assert.match((await call(srv, 'POST', 'job-progress', '{x')).text, /^unmarshal failure/);
  assert.is((await call(srv, 'POST', 'job-progress', {})).status, 400);
  const lj = await call(srv, 'POST', 'list-jobs', '{"count": ');
  assert.is(lj.status, 400);
  assert.match(lj.text, /^unmarshal failure/);
  assert.match((await call(srv, 'POST', 'list-jobs', { count: 'all' })).text, /^unmarshal failure/);
  for (const op of ['pause', 'resume', 'cancel']) {
    const u = await call(srv, 'POST', op, { jobId: 'missing-1' });
    assert.is(u.status, 400);
    assert.match(u.text, new RegExp(`^${op} failed for job missing-1: current status is UNKNOWN`));
    assert.match((await call(srv, 'POST', op, 'nope')).text, /^unmarshal failure/);
  }
});

test('state machine: pause, resume, cancel and the 400s for invalid transitions', async () => {
  const jobId = await hydrate(srv, RANGE);
  assert.match(jobId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  await waitStatus(srv, jobId, ['HYDRATING']);

  const bad = async (op: string, status: string) => {
    const r = await call(srv, 'POST', op, { jobId });
    assert.is(r.status, 400, `${op} from ${status}: ${r.text}`);
    assert.match(r.text, new RegExp(`^${op} failed for job ${jobId}: current status is ${status}`));
  };
  await bad('resume', 'HYDRATING');

  const p = await call(srv, 'POST', 'pause', { jobId });
  assert.is(p.status, 200, p.text);
  assert.equal(p.body, { jobId, jobStatus: 'HYDRATING', recordsUpdated: 1, message: 'job paused' });
  const paused = await waitStatus(srv, jobId, ['PAUSED']);
  // Nothing moves while paused.
  await new Promise((r) => setTimeout(r, 300));
  const still = await waitStatus(srv, jobId, ['PAUSED']);
  assert.equal(still.summary, paused.summary);
  assert.ok(paused.summary.filteredLines < lines.length, 'paused before the end');
  await bad('pause', 'PAUSED');

  const r = await call(srv, 'POST', 'resume', { jobId });
  assert.is(r.status, 200, r.text);
  assert.equal(r.body, { jobId, jobStatus: 'PAUSED', recordsUpdated: 1, message: 'job resumed' });
  await waitStatus(srv, jobId, ['HYDRATING']);
  await bad('resume', 'HYDRATING');

  // Pause and resume again, then let it finish: exactly every line, once.
  assert.is((await call(srv, 'POST', 'pause', { jobId })).status, 200);
  assert.is((await call(srv, 'POST', 'resume', { jobId })).status, 200);
  const done = await waitStatus(srv, jobId, ['DONE', 'FAILED'], 30_000);
  assert.is(done.jobStatus, 'DONE');
  assert.equal(done.summary, { totalHours: 2, completedHours: 2, totalLines: lines.length, filteredLines: lines.length, malformedLines: 0 });
  const stored = await storedLines(srv, jobId);
  assert.is(stored.length, lines.length);
  assert.is(new Set(stored.map((s) => `${s.timestampNs}|${s.message}|${JSON.stringify(s.labels)}`)).size, new Set(lines.map((l) => `${l.timestampMs}|${l.message}|${JSON.stringify(l.labels)}`)).size);

  await bad('pause', 'DONE');
  await bad('resume', 'DONE');
  await bad('cancel', 'DONE');
});

test('cancel: from HYDRATING and PAUSED; the response carries the earlier status', async () => {
  const a = await hydrate(srv, RANGE);
  await waitStatus(srv, a, ['HYDRATING']);
  const c = await call(srv, 'POST', 'cancel', { jobId: a });
  assert.is(c.status, 200, c.text);
  assert.equal(c.body, { jobId: a, jobStatus: 'HYDRATING', recordsUpdated: 1, message: 'job canceled' });
  const canceled = await waitStatus(srv, a, ['CANCELED']);
  await new Promise((r) => setTimeout(r, 250));
  const later = await waitStatus(srv, a, ['CANCELED']);
  assert.equal(later.summary, canceled.summary, 'a canceled job stops');
  assert.is((await storedLines(srv, a)).length, later.summary.filteredLines);
  // Canceling again is accepted and changes nothing; pause and resume are refused.
  const again = await call(srv, 'POST', 'cancel', { jobId: a });
  assert.is(again.status, 200);
  assert.equal(again.body, { jobId: a, jobStatus: 'CANCELED', recordsUpdated: 0, message: 'job already canceled' });
  for (const op of ['pause', 'resume']) {
    const r = await call(srv, 'POST', op, { jobId: a });
    assert.is(r.status, 400);
    assert.match(r.text, new RegExp(`^${op} failed for job ${a}: current status is CANCELED`));
  }

  const b = await hydrate(srv, { ...RANGE, isDryRun: true });
  await waitStatus(srv, b, ['HYDRATING']);
  assert.is((await call(srv, 'POST', 'pause', { jobId: b })).status, 200);
  await waitStatus(srv, b, ['PAUSED']);
  const cb = await call(srv, 'POST', 'cancel', { jobId: b });
  assert.equal(cb.body, { jobId: b, jobStatus: 'PAUSED', recordsUpdated: 1, message: 'job canceled' });
  await waitStatus(srv, b, ['CANCELED']);
});

test('an unreadable archive object makes the job FAILED with errorMsg', async () => {
  const jobId = await hydrate(srv, { archiveName: 'broken', startTsMs: T0, endTsMs: T0 + HOUR - 1 });
  const { jobStatus, summary } = await waitStatus(srv, jobId, ['DONE', 'FAILED']);
  assert.is(jobStatus, 'FAILED');
  assert.is(summary.completedHours, 0);
  const jobs = (await call(srv, 'POST', 'list-jobs', {})).body as { jobId: string; errorMsg: string | null }[];
  const job = jobs.find((j) => j.jobId === jobId)!;
  assert.match(job.errorMsg!, /b-corrupt\.ndjson\.gz/);
  assert.match(job.errorMsg!, /archive "broken"/);
  const c = await call(srv, 'POST', 'cancel', { jobId });
  assert.is(c.status, 400);
  assert.match(c.text, new RegExp(`^cancel failed for job ${jobId}: current status is FAILED`));
});

test('429 "too many concurrent jobs" once INIT+HYDRATING jobs reach hydration.maxConcurrentJobs', async () => {
  const one = await server({ hydration: { maxConcurrentJobs: 1 } });
  const first = await hydrate(one, RANGE);
  const r = await call(one, 'POST', 'hydrate', RANGE);
  assert.is(r.status, 429);
  assert.match(r.text, /too many concurrent jobs/);
  // Validation still comes first.
  assert.is((await call(one, 'POST', 'hydrate', { ...RANGE, archiveName: 'x' })).status, 400);
  // A paused job does not count.
  await waitStatus(one, first, ['HYDRATING']);
  assert.is((await call(one, 'POST', 'pause', { jobId: first })).status, 200);
  const second = await hydrate(one, { ...RANGE, isDryRun: true });
  assert.is((await call(one, 'POST', 'hydrate', RANGE)).status, 429);
  assert.is((await call(one, 'POST', 'cancel', { jobId: second })).status, 200);
  assert.is((await call(one, 'POST', 'cancel', { jobId: first })).status, 200);
  await hydrate(one, { ...RANGE, isDryRun: true });
});

test('RBAC on: starting, pausing, resuming and canceling need Admin (403 Forbidden); reads do not', async () => {
  const rb = await server({ rbac: { enabled: true, defaultPolicy: 'allow' } });
  const jobId = await hydrate(rb, RANGE);
  for (const token of [VIEWER_TOKEN, EDITOR_TOKEN]) {
    for (const [op, body] of [
      ['hydrate', RANGE],
      ['pause', { jobId }],
      ['resume', { jobId }],
      ['cancel', { jobId }],
      // Even a malformed body is refused for the role first.
      ['hydrate', '{bad'],
    ] as const) {
      const r = await call(rb, 'POST', op, body, token);
      assert.is(r.status, 403, `${op} as ${token}`);
      assert.is(r.text.trim(), 'Forbidden');
    }
    assert.is((await call(rb, 'GET', 'list-archives', undefined, token)).status, 200);
    assert.is((await call(rb, 'POST', 'list-jobs', {}, token)).status, 200);
    assert.is((await call(rb, 'POST', 'job-progress', { jobId }, token)).status, 200);
  }
  assert.is((await call(rb, 'POST', 'cancel', { jobId })).status, 200);
});

test('RBAC off: any authenticated role may start and control jobs', async () => {
  const jobId = (await call(srv, 'POST', 'hydrate', { ...RANGE, isDryRun: true }, VIEWER_TOKEN)).body.jobId as string;
  assert.ok(jobId);
  await waitStatus(srv, jobId, ['HYDRATING', 'DONE']);
  const c = await call(srv, 'POST', 'cancel', { jobId }, EDITOR_TOKEN);
  assert.ok(c.status === 200 || /current status is DONE/.test(c.text), c.text);
});

test('list-jobs: a body with every field at its zero value lists all jobs (count 0 = default all)', async () => {
  // Clients that serialise a full request struct send zeros for the fields they leave unset.
  const a = await hydrate(srv, { ...RANGE, isDryRun: true });
  await waitStatus(srv, a, ['DONE']);
  const all = (await call(srv, 'POST', 'list-jobs', {})).body as { jobId: string }[];
  assert.ok(all.length >= 1);
  const zeros = await call(srv, 'POST', 'list-jobs', { startTsMs: 0, endTsMs: 0, count: 0, offset: 0 });
  assert.is(zeros.status, 200, zeros.text);
  assert.equal((zeros.body as { jobId: string }[]).map((j) => j.jobId), all.map((j) => j.jobId));
  // A real bound still filters: no job's archive range ends at or before T0.
  assert.equal((await call(srv, 'POST', 'list-jobs', { endTsMs: T0 })).body, []);
  assert.is(((await call(srv, 'POST', 'list-jobs', { count: 1 })).body as unknown[]).length, 1);
});

test.run();
