/**
 * Background merging of small log, span and event segments in the embedded backend: the policy,
 * answers identical before and after a merge and after a restart, queries and appends during a
 * merge, a crash at every step of the swap, and retention of merged segments.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, copyFileSync, cpSync, mkdtempSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedBackend, type EmbeddedBackend, type EmbeddedOptions } from '../../backends/embedded/index.js';
import { coverOf, mergePolicy, planMerge, supersededGens } from '../../backends/embedded/segment-merge.js';
import { createLogger } from '../../kernel/logger.js';
import type { EventRecord, LogRecord, Span } from '../../kernel/models.js';

const T0 = 1_700_000_000_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const ns = (ms: number) => BigInt(ms) * 1_000_000n;
const dirs: string[] = [];
const MERGE = { windowMs: DAY };

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'lookout-merge-'));
  dirs.push(d);
  return d;
}

function open(dir: string, extra: Partial<EmbeddedOptions> = {}, lines?: string[]): EmbeddedBackend {
  return openEmbeddedBackend({
    dir,
    logger: createLogger('info', {}, (l) => lines?.push(l)),
    fsync: 'interval',
    fsyncIntervalMs: 20,
    maintenanceIntervalMs: 0,
    ...extra,
  });
}

/** Runs the merges maintenance would (tests open without `merge` so flushes do not merge). */
async function mergeAll(b: EmbeddedBackend, retentionMs = 0, settings = MERGE): Promise<number> {
  const p = mergePolicy(retentionMs, settings);
  return (await b.logs.mergeSegments(p)) + (await b.traces.mergeSegments(p)) + (await b.events.mergeSegments(p));
}

const SERVICES = ['api', 'web', 'db', 'auth'];

function logBatch(f: number, n: number): LogRecord[] {
  const out: LogRecord[] = [];
  for (let i = 0; i < n; i++) {
    const k = f * n + i;
    // A little disorder within a batch, and every batch overlapping the next in time.
    const t = ns(T0 + k * 100 - (i % 5) * 30);
    out.push({
      timestampNs: t,
      message: `req ${k} ${i % 7 === 0 ? 'error timeout upstream' : 'ok'} user=u${k % 13}`,
      labels: { service: SERVICES[k % 4]!, level: i % 7 === 0 ? 'error' : 'info' },
      facets: i % 3 === 0 ? { k, slow: i % 2 === 0 } : {},
    });
  }
  return out;
}

function spanBatch(f: number, n: number): Span[] {
  const out: Span[] = [];
  for (let i = 0; i < n; i++) {
    const k = f * n + i;
    // Trace k % 40 of each "round" gets spans in several flushes: traces cross segments.
    const trace = (Math.floor(k / 3) % 97).toString(16).padStart(32, '0');
    const st = ns(T0 + k * 50);
    out.push({
      traceId: trace,
      spanId: k.toString(16).padStart(16, '0'),
      parentSpanId: '',
      name: `op-${k % 5}`,
      kind: 'server',
      startTimeUnixNano: st,
      endTimeUnixNano: st + BigInt((k % 9) * 1_000_000 + 1000),
      status: { code: k % 11 === 0 ? 'error' : 'ok' },
      attributes: { 'http.status_code': k % 11 === 0 ? 500 : 200, tags: ['a', `t${k % 3}`] },
      resource: { 'service.name': SERVICES[k % 4]! },
      scope: { name: 'test' },
      events: [],
      links: [],
    });
  }
  return out;
}

function eventBatch(f: number, n: number): EventRecord[] {
  return Array.from({ length: n }, (_, i) => {
    const k = f * n + i;
    return { id: `e${k}`, timestampNs: ns(T0 + k * 70 - (i % 3) * 10), title: `t${k}`, text: '', labels: { kind: k % 2 ? 'Pod' : 'Deployment', ns: `n${k % 3}` }, attributes: { k } };
  });
}

async function flushAll(b: EmbeddedBackend): Promise<void> {
  await b.logs.serial(() => b.logs.flushHead());
  await b.traces.wal.serial(() => b.traces.flushHead());
  await b.events.wal.serial(() => b.events.flushHead());
}

/** Writes `flushes` small batches of every signal, each followed by a head flush. */
async function ingest(b: EmbeddedBackend, flushes: number, from = 0): Promise<void> {
  for (let f = from; f < from + flushes; f++) {
    await b.logs.append(logBatch(f, 60));
    await b.traces.append(spanBatch(f, 40));
    await b.events.append(eventBatch(f, 30));
    await flushAll(b);
  }
}

const big = (_k: string, v: unknown) => (typeof v === 'bigint' ? String(v) : v);
const j = (v: unknown) => JSON.stringify(v, big);
const END = ns(T0 + 2 * DAY);

/** Every answer the stores give, as one comparable value. */
async function answers(b: EmbeddedBackend): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const scan = async (q: Parameters<EmbeddedBackend['logs']['scan']>[0]) => {
    const rows: string[] = [];
    for await (const x of b.logs.scan(q)) x.records.forEach((r, i) => rows.push(`${r.timestampNs}|${x.seqs[i]}|${r.message}|${j(r.labels)}|${j(r.facets)}`));
    return rows;
  };
  out.logsAsc = await scan({ startNs: 0n, endNs: END, order: 'asc' });
  out.logsDesc = await scan({ startNs: 0n, endNs: END });
  out.logsTerms = await scan({ startNs: 0n, endNs: END, terms: ['timeout'], matchers: [{ name: 'service', op: '=~', value: 'api|db' }] });
  out.logsRange = await scan({ startNs: ns(T0 + 5000), endNs: ns(T0 + 9000), limit: 50 });
  // Paging with cursors crosses block boundaries.
  const pages: string[] = [];
  let after: string | undefined;
  for (let p = 0; p < 8; p++) {
    let last: string | undefined;
    for await (const x of b.logs.scan({ startNs: 0n, endNs: END, limit: 97, after })) {
      pages.push(...x.records.map((r) => r.message));
      last = x.position;
    }
    if (!last) break;
    after = last;
  }
  out.logPages = pages;
  const counts: Record<string, number> = {};
  for await (const c of b.logs.scanColumns!({ startNs: 0n, endNs: END, labels: ['service', 'level'], weighted: true })) {
    for (let i = 0; i < c.length; i++) {
      // (codes may be null: every record has the dictionary's one value, or none)
      const key = c.labels.map((l) => l.dict[l.codes ? l.codes[i]! : 0]).join('/');
      counts[key] = (counts[key] ?? 0) + (c.weights ? c.weights[i]! : 1);
    }
  }
  out.logCounts = counts;
  let slices = 0;
  for await (const c of b.logs.scanColumns!({ startNs: ns(T0 + 1000), endNs: END, labels: [], timestampsMs: true })) slices += c.timestampsMs!.reduce((a, t) => a + (t % 1000), 0);
  out.slices = slices;
  const tail = await b.logs.tail(0);
  out.tail = tail.seqs;

  const ids = Array.from({ length: 97 }, (_, k) => k.toString(16).padStart(32, '0'));
  out.traces = await Promise.all(ids.map(async (id) => (await b.traces.getTrace(id)).map((s) => s.spanId)));
  const search = async (q: Parameters<EmbeddedBackend['traces']['search']>[0]) => {
    const got: string[] = [];
    for await (const g of b.traces.search(q)) got.push(g[0]!.traceId + ':' + g.map((s) => s.spanId).sort().join(','));
    return got.sort();
  };
  out.searchAll = await search({ startNs: 0n, endNs: END });
  out.searchErr = await search({ startNs: 0n, endNs: END, statuses: ['error'], attributes: { 'service.name': 'api' } });
  out.searchTag = await search({ startNs: ns(T0 + 2000), endNs: ns(T0 + 6000), attributes: { tags: 't2', name: 'op-3' } });

  const ev = async (q: Parameters<EmbeddedBackend['events']['scan']>[0]) => {
    const got: string[] = [];
    for await (const x of b.events.scan(q)) got.push(...x.events.map((e, i) => `${e.id}:${x.seqs[i]}`));
    return got;
  };
  out.eventsAsc = await ev({ startNs: 0n, endNs: END, order: 'asc' });
  out.eventsPod = await ev({ startNs: 0n, endNs: END, matchers: [{ name: 'kind', op: '=', value: 'Pod' }, { name: 'ns', op: '!=', value: 'n1' }] });
  out.eventsRange = await ev({ startNs: ns(T0 + 1000), endNs: ns(T0 + 3000), limit: 10 });
  return out;
}

function segCounts(b: EmbeddedBackend): [number, number, number] {
  return [b.logs.stats().segments, b.traces.stats().segments, b.events.stats().segments];
}

function files(dir: string, sig: string): string[] {
  return readdirSync(join(dir, sig, 'segments')).sort();
}

test('policy: windows, size bound, no dominating input, longest run first', () => {
  const p = mergePolicy(0, { windowMs: DAY, maxBytes: 1000 });
  const seg = (gen: number, bytes: number, dayMs = 0) => ({ gen, bytes, newestNs: ns(T0 + dayMs) });
  assert.is(planMerge([seg(1, 10)], p), null);
  assert.equal(planMerge([seg(1, 10), seg(2, 10), seg(3, 10)], p)!.map((s) => s.gen), [1, 2, 3]);
  // A large segment is rewritten only once the small ones next to it add up to as much.
  assert.equal(planMerge([seg(1, 400), seg(2, 10), seg(3, 10)], p)!.map((s) => s.gen), [2, 3]);
  assert.equal(planMerge([seg(1, 400), seg(2, 200), seg(3, 200)], p)!.map((s) => s.gen), [1, 2, 3]);
  // Never past maxBytes, never across windows.
  assert.equal(planMerge([seg(1, 600), seg(2, 600)], p), null);
  assert.equal(planMerge([seg(1, 10, 0), seg(2, 10, DAY)], p), null);
  // The window is capped at a quarter of the retention.
  assert.is(mergePolicy(8 * HOUR, { windowMs: DAY }).windowMs, 2 * HOUR);
  assert.is(mergePolicy(0, { windowMs: 0 }).windowMs, 0);
  assert.is(planMerge([seg(1, 10), seg(2, 10)], mergePolicy(0, { windowMs: 0 })), null);
  assert.equal(coverOf([{ gen: 5, covers: [[1, 3]] }, { gen: 4, covers: [] }, { gen: 9, covers: [[7, 8]] }]), [[1, 5], [7, 9]]);
  assert.equal([...supersededGens([1, 2, 5, 6], [{ gen: 5, covers: [[1, 5]] }])], [1, 2]);
});

test('40 small flushes merge into few segments; every answer is the same before, after and after a restart', async () => {
  const dir = tmp();
  const b = open(dir);
  await ingest(b, 40);
  // Some data left in the heads too.
  await b.logs.append(logBatch(40, 10));
  await b.traces.append(spanBatch(40, 10));
  await b.events.append(eventBatch(40, 10));
  assert.equal(segCounts(b), [40, 40, 40]);
  const before = await answers(b);
  const merges = await mergeAll(b);
  assert.ok(merges >= 3, `merges: ${merges}`);
  const after = segCounts(b);
  assert.ok(after.every((n) => n <= 2), `segments after merge: ${after}`);
  for (const [k, v] of Object.entries(before)) assert.equal((await answers(b))[k], v, k);
  // Block indexes of the merged log segment: full blocks, per-stream counts adding up.
  const logSegs = (b.logs as unknown as { segments: { blocks: { n: number; counts: Uint32Array | null }[] }[] }).segments;
  const blocks = logSegs.flatMap((s) => s.blocks);
  assert.is(blocks.reduce((a, x) => a + x.n, 0), 40 * 60);
  for (const x of blocks) assert.is(x.counts!.reduce((a, c) => a + c, 0), x.n);
  // Nothing left behind: no temp files, one file per live segment.
  for (const sig of ['logs', 'traces', 'events']) assert.ok(files(dir, sig).every((f) => !f.endsWith('.tmp')), sig);
  assert.is(files(dir, 'logs').length, b.logs.stats().segments);
  await b.close();
  const c = open(dir);
  const again = await answers(c);
  for (const [k, v] of Object.entries(before)) assert.equal(again[k], v, k);
  // A second round: new small flushes merge again (with the merged segment once they add up).
  await ingest(c, 60, 41);
  await mergeAll(c);
  assert.ok(segCounts(c).every((n) => n <= 3), `segments after second merge: ${segCounts(c)}`);
  const total = await answers(c);
  assert.is((total.logsAsc as string[]).length, 100 * 60 + 10);
  assert.is((total.eventsAsc as string[]).length, 100 * 30 + 10);
  await c.close();
});

test('queries during a merge see every record once; appends are not held up by it', async () => {
  const dir = tmp();
  const b = open(dir);
  for (let f = 0; f < 120; f++) {
    await b.logs.append(logBatch(f, 200));
    await b.logs.serial(() => b.logs.flushHead());
  }
  const expected = 120 * 200;
  const count = async () => {
    let n = 0;
    for await (const x of b.logs.scan({ startNs: 0n, endNs: END })) n += x.records.length;
    return n;
  };
  let done = false;
  const merging = b.logs.mergeSegments(mergePolicy(0, { windowMs: DAY, maxInputs: 200 })).finally(() => (done = true));
  let queries = 0;
  let appends = 0;
  let maxAppendMs = 0;
  let f = 1000;
  while (!done) {
    assert.is(await count(), expected + appends * 10);
    queries++;
    const t = performance.now();
    await b.logs.append(logBatch(f++, 10));
    maxAppendMs = Math.max(maxAppendMs, performance.now() - t);
    appends++;
  }
  assert.is(await merging, 1);
  assert.ok(queries >= 2 && appends >= 2, `queries ${queries}, appends ${appends} during the merge`);
  assert.is(b.logs.stats().segments, 1);
  assert.is(await count(), expected + appends * 10);
  console.log(`  ${queries} scans and ${appends} appends ran during the merge of 120 segments; slowest append ${maxAppendMs.toFixed(1)} ms`);
  await b.close();
});

/**
 * Runs one merge of 12 small segments per signal with copies of the segment directories taken
 * before and after, then rebuilds each state a crash could leave and checks the restart.
 */
test('a crash at any step of the swap leaves every record visible exactly once', async () => {
  const base = tmp();
  const b = open(base);
  await ingest(b, 12);
  await b.close();
  const pre = tmp();
  cpSync(base, pre, { recursive: true });
  const m = open(base);
  const expected = await answers(m);
  await mergeAll(m);
  assert.equal(segCounts(m), [1, 1, 1]);
  await m.close();
  const post = tmp();
  cpSync(base, post, { recursive: true });
  const exts: Record<string, string> = { logs: 'lseg', traces: 'tseg', events: 'eseg' };

  const check = async (name: string, build: (dir: string, sig: string, inputs: string[], merged: string) => void) => {
    const dir = tmp();
    cpSync(pre, dir, { recursive: true });
    for (const sig of Object.keys(exts)) {
      const inputs = files(pre, sig).filter((f) => f.endsWith(exts[sig]!));
      const [merged] = files(post, sig).filter((f) => f.endsWith(exts[sig]!));
      assert.is(merged, inputs[inputs.length - 1], 'the merged segment takes the newest input\'s name');
      build(dir, sig, inputs, merged!);
    }
    const lines: string[] = [];
    const c = open(dir, {}, lines);
    const got = await answers(c);
    for (const [k, v] of Object.entries(expected)) assert.equal(got[k], v, `${name}: ${k}`);
    for (const sig of Object.keys(exts)) assert.ok(files(dir, sig).every((f) => !f.endsWith('.tmp')), `${name}: temp file left in ${sig}`);
    const segs = segCounts(c);
    await c.close();
    return { segs, lines };
  };
  const seg = (dir: string, sig: string, f: string) => join(dir, sig, 'segments', f);

  // 1. Died while writing (or before renaming) the merged file: inputs only, plus a temp file.
  let r = await check('temp file left', (dir, sig, inputs, merged) => copyFileSync(seg(post, sig, merged), seg(dir, sig, inputs[inputs.length - 1]! + '.tmp')));
  assert.equal(r.segs, [12, 12, 12]);
  // 1b. A partial temp file.
  r = await check('partial temp file', (dir, sig, inputs, merged) => {
    copyFileSync(seg(post, sig, merged), seg(dir, sig, merged + '.tmp'));
    rmSync(seg(dir, sig, merged + '.tmp'));
    copyFileSync(seg(pre, sig, inputs[0]!), seg(dir, sig, merged + '.tmp'));
  });
  assert.equal(r.segs, [12, 12, 12]);
  // 2. Died right after the rename: the merged file and every other input.
  r = await check('renamed, inputs not deleted', (dir, sig, _inputs, merged) => copyFileSync(seg(post, sig, merged), seg(dir, sig, merged)));
  assert.equal(r.segs, [1, 1, 1]);
  assert.ok(r.lines.some((l) => l.includes('replaced by a merge')));
  // 3. Died while deleting the inputs: some of them are left.
  r = await check('some inputs deleted', (dir, sig, inputs, merged) => {
    copyFileSync(seg(post, sig, merged), seg(dir, sig, merged));
    for (const f of inputs.slice(0, 5)) rmSync(seg(dir, sig, f));
  });
  assert.equal(r.segs, [1, 1, 1]);
  // The superseded files are gone from disk after that restart.
  const again = tmp();
  cpSync(pre, again, { recursive: true });
  for (const sig of Object.keys(exts)) {
    const [merged] = files(post, sig).filter((f) => f.endsWith(exts[sig]!));
    copyFileSync(seg(post, sig, merged!), seg(again, sig, merged!));
  }
  const c = open(again);
  await c.close();
  for (const sig of Object.keys(exts)) assert.is(files(again, sig).filter((f) => f.endsWith(exts[sig]!)).length, 1, sig);
});

test('an input left over from an earlier merge is still recognised after a second merge', async () => {
  const dir = tmp();
  const b = open(dir);
  await ingest(b, 6);
  await mergeAll(b);
  const firstRound = files(dir, 'logs');
  await ingest(b, 6, 6);
  const expected = await answers(b);
  await mergeAll(b);
  assert.equal(segCounts(b), [1, 1, 1]);
  await b.close();
  // Bring back a segment the first merge replaced (say its deletion was lost): the second
  // merge's output covers it too.
  const keep = tmp();
  cpSync(dir, keep, { recursive: true });
  const pre = tmp();
  const b2 = open(pre);
  await ingest(b2, 6);
  await b2.close();
  copyFileSync(join(pre, 'logs', 'segments', files(pre, 'logs')[0]!), join(keep, 'logs', 'segments', files(pre, 'logs')[0]!));
  assert.ok(firstRound.length === 1);
  const c = open(keep);
  assert.equal(await answers(c), expected);
  await c.close();
});

test('retention deletes merged segments; windows follow the retention', async () => {
  const dir = tmp();
  const retentionMs = { metrics: 0, logs: 8 * HOUR, traces: 8 * HOUR, events: 8 * HOUR };
  const b = open(dir, { retentionMs, merge: MERGE });
  // Flushes spread over 6 hours: windows of 2 h (retention / 4) merge them into 3 or 4 segments.
  for (let f = 0; f < 24; f++) {
    const shift = ns(f * 15 * 60_000);
    await b.logs.append(logBatch(f, 20).map((r) => ({ ...r, timestampNs: r.timestampNs + shift })));
    await b.events.append(eventBatch(f, 10).map((e) => ({ ...e, timestampNs: e.timestampNs + shift })));
    await b.traces.append(spanBatch(f, 10).map((s) => ({ ...s, startTimeUnixNano: s.startTimeUnixNano + shift, endTimeUnixNano: s.endTimeUnixNano + shift })));
    await flushAll(b);
  }
  // Background maintenance merges with the configured policy (capped by the retention).
  const rep = await b.maintenance({ flush: false, now: T0 });
  assert.ok(rep.mergedSegments >= 3, `merges ${rep.mergedSegments}`);
  for (const n of segCounts(b)) assert.ok(n >= 3 && n <= 5, `segments per 2 h window: ${segCounts(b)}`);
  const merged = segCounts(b);
  // 9 hours later the first window has expired, whole.
  const r2 = await b.maintenance({ flush: false, now: T0 + 10 * HOUR });
  assert.ok(r2.expiredSegments >= 3);
  const left = segCounts(b);
  for (let i = 0; i < 3; i++) assert.ok(left[i]! < merged[i]!, `${left} < ${merged}`);
  let logs = 0;
  for await (const x of b.logs.scan({ startNs: 0n, endNs: END })) logs += x.records.length;
  assert.ok(logs > 0 && logs < 24 * 20);
  // Later still, everything goes.
  await b.maintenance({ flush: false, now: T0 + 30 * HOUR });
  assert.equal(segCounts(b), [0, 0, 0]);
  await b.close();
});

test('a shutdown or retention during a merge abandons it: inputs intact, no temp file', async () => {
  const dir = tmp();
  let b = open(dir, { retentionMs: { metrics: 0, logs: DAY, traces: DAY, events: DAY } });
  for (let f = 0; f < 60; f++) {
    await b.logs.append(logBatch(f, 300));
    await b.events.append(eventBatch(f, 300));
    await flushAll(b);
  }
  // Close while merging: the merge stops at its next yield.
  const p = mergePolicy(0, MERGE);
  const merging = Promise.all([b.logs.mergeSegments(p), b.events.mergeSegments(p)]);
  await new Promise((r) => setImmediate(r));
  await b.close();
  assert.equal(await merging, [0, 0]);
  for (const sig of ['logs', 'events']) assert.ok(files(dir, sig).every((f) => !f.endsWith('.tmp')), sig);
  b = open(dir, { retentionMs: { metrics: 0, logs: DAY, traces: DAY, events: DAY } });
  assert.is(b.logs.stats().segments, 60);
  let n = 0;
  for await (const x of b.logs.scan({ startNs: 0n, endNs: END })) n += x.records.length;
  assert.is(n, 60 * 300);
  // Retention removing the inputs while they are being merged.
  const merging2 = Promise.all([b.logs.mergeSegments(p), b.events.mergeSegments(p)]);
  await new Promise((r) => setImmediate(r));
  const rep = await b.maintenance({ flush: false, now: T0 + 3 * DAY });
  assert.ok(rep.expiredSegments >= 120);
  assert.equal(await merging2, [0, 0]);
  assert.equal(segCounts(b), [0, 0, 0]);
  for (const sig of ['logs', 'events']) assert.equal(files(dir, sig), [], sig);
  await b.close();
});

test('a merge that fails on an unreadable input leaves every segment as it was and is not retried', async () => {
  const dir = tmp();
  const b = open(dir);
  for (let f = 0; f < 6; f++) {
    await b.logs.append(logBatch(f, 50));
    await b.events.append(eventBatch(f, 50));
    await flushAll(b);
  }
  await b.close();
  // Garbage inside the first block of the third segment (the index, read at open, is intact).
  for (const sig of ['logs', 'events']) {
    const f = join(dir, sig, 'segments', files(dir, sig)[2]!);
    const fd = openSync(f, 'r+');
    writeSync(fd, Buffer.alloc(24, 0xee), 0, 24, 8);
    closeSync(fd);
  }
  const lines: string[] = [];
  const c = open(dir, {}, lines);
  const p = mergePolicy(0, MERGE);
  assert.equal([await c.logs.mergeSegments(p), await c.events.mergeSegments(p)], [0, 0]);
  const errors = () => lines.filter((l) => l.includes('merge failed')).length;
  assert.is(errors(), 2);
  assert.is(c.logs.stats().segments, 6);
  assert.is(c.events.stats().segments, 6);
  for (const sig of ['logs', 'events']) assert.ok(files(dir, sig).every((f) => !f.endsWith('.tmp')), sig);
  assert.equal([await c.logs.mergeSegments(p), await c.events.mergeSegments(p)], [0, 0]);
  assert.is(errors(), 2);
  await c.close();
});

test.after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test.run();
