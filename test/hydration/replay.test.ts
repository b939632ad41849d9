/**
 * Replay correctness against a real server and an fs archive: every filter operation on both
 * filter types (anchored regex, missing-key rule, labels-vs-facets rules) checked against a
 * brute-force count, dry runs, hour partitions and the inclusive range edges, malformed lines,
 * addTags, and the replayed lines read back from storage and through GraphQL SvcQL.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import {
  HOUR,
  T0,
  call,
  dataset,
  expectedCount,
  hydrate,
  storedLines,
  waitStatus,
  writeFsArchive,
  type Filter,
  type Line,
} from './helpers.js';

const HOURS = 5;
const lines: Line[] = dataset(3000, HOURS);
// Lines exactly on the hour boundaries and at range edges used below.
lines.push(
  { timestampMs: T0 + HOUR, message: 'edge at 11:00', labels: { service: 'edge' }, facets: {} },
  { timestampMs: T0 + HOUR - 1, message: 'edge at 10:59:59.999', labels: { service: 'edge' }, facets: {} },
  { timestampMs: T0 + 3 * HOUR + 1234, message: 'edge end', labels: { service: 'edge' }, facets: {} },
);
const MALFORMED = ['{not json', '[1,2]', '{"message":"no timestamp"}', '{"timestampMs":"x","message":"m"}', '{"timestampMs":1,"labels":"bad"}'];

let srv: TestServer;
let dir: string;

test.before(async () => {
  dir = tempDir('lookout-hydration-archive-');
  writeFsArchive(join(dir, 'a'), lines, {
    objectsPerHour: 3,
    raw: [...MALFORMED.map((text) => ({ hourMs: T0 + 2 * HOUR, text })), { hourMs: T0, text: '' }],
  });
  srv = await startTestServer({
    archives: [
      { name: 'local', type: 'fs', path: join(dir, 'a') },
      { name: 'empty', type: 'fs', path: join(dir, 'nothing-here') },
    ],
    hydration: { maxConcurrentJobs: 64 },
  });
});

test.after(async () => {
  await srv?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ALL = { start: T0, end: T0 + HOURS * HOUR - 1 };

const CASES: Filter[][] = [
  [],
  [{ field: 'service', operation: 'eq', value: 'api' }],
  [{ field: 'service', operation: 'neq', value: 'api' }],
  [{ field: 'service', operation: 'contains', value: 'prod' }],
  [{ field: 'service', operation: 'ncontains', value: 'prod' }],
  // Anchored: matches "prod-api" but not "x-prod-y".
  [{ field: 'service', operation: 'regex', value: 'prod-.*' }],
  [{ field: 'service', operation: 'nregex', value: 'prod-.*' }],
  [{ field: 'service', operation: 'regex', value: 'prod' }],
  // env lives in both maps: positive passes in either, negative must hold in both.
  [{ field: 'env', operation: 'eq', value: 'prod' }],
  [{ field: 'env', operation: 'neq', value: 'prod' }],
  [{ field: 'env', operation: 'regex', value: 'qa|dev' }],
  [{ field: 'env', operation: 'nregex', value: 'qa|dev' }],
  // Facet-only keys, numeric and boolean facets compared in string form.
  [{ field: 'status', operation: 'eq', value: '500' }],
  [{ field: 'status', operation: 'regex', value: '5[0-9]{2}' }],
  [{ field: 'status', operation: 'ncontains', value: '0' }],
  [{ field: 'retry', operation: 'eq', value: 'true' }],
  // Missing everywhere: positive fails, negative holds.
  [{ field: 'nope', operation: 'eq', value: '' }],
  [{ field: 'nope', operation: 'neq', value: 'x' }],
  [{ field: 'nope', operation: 'nregex', value: '.*' }],
  // type defaults to labels when given as "".
  [{ field: 'service', operation: 'eq', value: 'auth', type: '' }],
  // Message filters.
  [{ operation: 'eq', value: 'user login ok', type: 'message' }],
  [{ operation: 'neq', value: 'user login ok', type: 'message' }],
  [{ operation: 'contains', value: 'Timeout', type: 'message' }],
  [{ operation: 'ncontains', value: 'Timeout', type: 'message' }],
  [{ operation: 'regex', value: '(?i).*timeout.*', type: 'message' }],
  [{ operation: 'regex', value: 'Timeout', type: 'message' }],
  [{ operation: 'nregex', value: '(GET|POST) .*', type: 'message', field: '' }],
  // AND of several.
  [
    { field: 'service', operation: 'regex', value: 'api|prod-api' },
    { field: 'env', operation: 'neq', value: 'dev' },
    { operation: 'ncontains', value: '500', type: 'message' },
  ],
];

test('every filter operation on both types matches a brute-force count (dry run)', async () => {
  const jobs = await Promise.all(
    CASES.map((filters) => hydrate(srv, { archiveName: 'local', startTsMs: ALL.start, endTsMs: ALL.end, filters, isDryRun: true })),
  );
  for (let i = 0; i < CASES.length; i++) {
    const { jobStatus, summary } = await waitStatus(srv, jobs[i]!, ['DONE', 'FAILED']);
    assert.is(jobStatus, 'DONE', JSON.stringify(CASES[i]));
    const want = expectedCount(lines, ALL.start, ALL.end, CASES[i]!);
    assert.is(summary.totalHours, HOURS);
    assert.is(summary.completedHours, HOURS);
    assert.is(summary.totalLines, want.totalLines, `totalLines for ${JSON.stringify(CASES[i])}`);
    assert.is(summary.filteredLines, want.filteredLines, `filteredLines for ${JSON.stringify(CASES[i])}`);
    assert.is(summary.malformedLines, MALFORMED.length);
    // A dry run writes nothing.
    assert.is((await storedLines(srv, jobs[i]!)).length, 0);
  }
  // Sanity: the cases are not vacuous.
  const counts = CASES.map((f) => expectedCount(lines, ALL.start, ALL.end, f).filteredLines);
  assert.ok(counts.filter((c) => c > 0 && c < lines.length).length >= CASES.length - 7, String(counts));
});

test('range edges are inclusive and only overlapping hour partitions are read', async () => {
  const ranges: [number, number][] = [
    [T0 + HOUR - 1, T0 + HOUR], // two lines on both sides of a partition boundary
    [T0 + HOUR, T0 + HOUR], // a single ms
    [T0 + 30 * 60_000, T0 + 3 * HOUR + 1234],
    [T0 - 5 * HOUR, T0 - 1], // before the data
    [T0 + 17, T0 + 4 * HOUR + 59 * 60_000],
  ];
  for (const [start, end] of ranges) {
    const jobId = await hydrate(srv, { archiveName: 'local', startTsMs: start, endTsMs: end, isDryRun: true });
    const { jobStatus, summary } = await waitStatus(srv, jobId, ['DONE', 'FAILED']);
    assert.is(jobStatus, 'DONE');
    const want = expectedCount(lines, start, end, []);
    assert.is(summary.totalLines, want.totalLines, `range ${start}..${end}`);
    assert.is(summary.filteredLines, want.totalLines);
    assert.is(summary.totalHours, Math.floor(end / HOUR) - Math.floor(start / HOUR) + 1);
    assert.is(summary.completedHours, summary.totalHours);
  }
  const one = await hydrate(srv, { archiveName: 'local', startTsMs: T0 + HOUR, endTsMs: T0 + HOUR, isDryRun: true });
  assert.is((await waitStatus(srv, one, ['DONE'])).summary.totalLines, 1);
});

test('an empty or missing archive directory hydrates nothing and is DONE', async () => {
  const jobId = await hydrate(srv, { archiveName: 'empty', startTsMs: T0, endTsMs: T0 + 2 * HOUR });
  const { jobStatus, summary } = await waitStatus(srv, jobId, ['DONE', 'FAILED']);
  assert.is(jobStatus, 'DONE');
  assert.equal(summary, { totalHours: 3, completedHours: 3, totalLines: 0, filteredLines: 0, malformedLines: 0 });
});

test('replay writes exactly the filtered lines with addTags, svc_stream and the job label', async () => {
  const filters: Filter[] = [
    { field: 'env', operation: 'eq', value: 'prod' },
    { operation: 'ncontains', value: 'login', type: 'message' },
  ];
  const start = T0 + 20 * 60_000;
  const end = T0 + 4 * HOUR;
  const jobId = await hydrate(srv, {
    archiveName: 'local',
    startTsMs: start,
    endTsMs: end,
    filters,
    addTags: { replay: 'r1', env: 'restored' },
    retentionDurationValue: 2,
    retentionDurationUnit: 'days',
  });
  const { jobStatus, summary } = await waitStatus(srv, jobId, ['DONE', 'FAILED']);
  assert.is(jobStatus, 'DONE');
  const want = lines.filter((l) => l.timestampMs >= start && l.timestampMs <= end && expectedCount([l], start, end, filters).filteredLines === 1);
  assert.is(summary.filteredLines, want.length);
  const stored = await storedLines(srv, jobId);
  assert.is(stored.length, want.length);
  const key = (ms: number, msg: string) => `${ms}|${msg}`;
  const wantKeys = want.map((l) => key(l.timestampMs, l.message)).sort();
  const gotKeys = stored.map((r) => key(Number(r.timestampNs / 1_000_000n), r.message)).sort();
  assert.equal(gotKeys, wantKeys);
  for (const r of stored) {
    assert.is(r.labels.replay, 'r1');
    assert.is(r.labels.env, 'restored', 'addTags override archived labels');
    assert.is(r.labels.svc_stream, 'logs');
    assert.is(r.labels.hydration_job_id, jobId);
    assert.type(r.facets.hydration_expires_at_ms, 'number');
  }
  // Facets keep their types.
  const withStatus = stored.find((r) => r.facets.status !== undefined);
  if (withStatus) assert.type(withStatus.facets.status, 'number');

  // The same lines through GraphQL SvcQL, when the GraphQL plugin is present.
  const q = `hydration_job_id="${jobId}" | count`;
  const res = await srv.fetch('/query', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'query($q:String!,$s:Time!,$e:Time!){ getLogMetricsResultWithSvcQl(query:$q,startTs:$s,endTs:$e){ TableResult } }',
      variables: { q, s: new Date(T0 - HOUR).toISOString(), e: new Date(T0 + 10 * HOUR).toISOString() },
    }),
  });
  if (res.status === 404) {
    console.log('SKIP: GraphQL plugin not present; storage check only');
    return;
  }
  const body = (await res.json()) as { data?: { getLogMetricsResultWithSvcQl: { TableResult: unknown[][] } }; errors?: unknown };
  assert.ok(body.data, JSON.stringify(body.errors));
  assert.equal(body.data!.getLogMetricsResultWithSvcQl.TableResult, [[want.length]]);
});

test('list-jobs filters by archive range, pages newest first, and shows the documented fields', async () => {
  const a = await hydrate(srv, { archiveName: 'local', startTsMs: 1000, endTsMs: 2000, isDryRun: true });
  const b = await hydrate(srv, { archiveName: 'local', startTsMs: 1500, endTsMs: 3000, isDryRun: true });
  await waitStatus(srv, a, ['DONE']);
  await waitStatus(srv, b, ['DONE']);
  const r = await call(srv, 'POST', 'list-jobs', { startTsMs: 1000, endTsMs: 3000 });
  assert.is(r.status, 200, r.text);
  const ids = (r.body as { jobId: string }[]).map((j) => j.jobId);
  assert.equal(ids.sort(), [a, b].sort());
  const onlyA = await call(srv, 'POST', 'list-jobs', { startTsMs: 1000, endTsMs: 2500 });
  assert.equal(onlyA.body.map((j: { jobId: string }) => j.jobId), [a]);
  const onlyB = await call(srv, 'POST', 'list-jobs', { startTsMs: 1200, endTsMs: 3000 });
  assert.equal(onlyB.body.map((j: { jobId: string }) => j.jobId), [b]);
  const job = onlyA.body[0];
  assert.equal(Object.keys(job).sort(), [
    'archiveEndTsMs', 'archiveFilters', 'archiveName', 'archiveStartTsMs', 'createdAtMs', 'errorMsg',
    'isDryRun', 'jobId', 'jobStatus', 'jobSummary', 'lastUpdatedAtMs',
  ]);
  assert.is(job.archiveName, 'local');
  assert.is(job.isDryRun, true);
  assert.is(job.errorMsg, null);
  assert.equal(job.archiveFilters, []);
  assert.type(JSON.parse(job.jobSummary).totalHours, 'number');

  const all = (await call(srv, 'POST', 'list-jobs', {})).body as { jobId: string; createdAtMs: number }[];
  const empty = await call(srv, 'POST', 'list-jobs');
  assert.is(empty.status, 200);
  assert.is(empty.body.length, all.length);
  for (let i = 1; i < all.length; i++) assert.ok(all[i - 1]!.createdAtMs >= all[i]!.createdAtMs, 'newest first');
  const page = await call(srv, 'POST', 'list-jobs', { count: 3, offset: 2 });
  assert.equal(page.body.map((j: { jobId: string }) => j.jobId), all.slice(2, 5).map((j) => j.jobId));
  const past = await call(srv, 'POST', 'list-jobs', { offset: all.length + 5 });
  assert.equal(past.body, []);
});

test.run();
