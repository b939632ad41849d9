/**
 * Span and event segments of the embedded backend: trace-by-id across head and segments,
 * search pruning (same answers as a brute-force scan, fewer blocks read), event scans merged
 * across segments with cursors, retention of whole segments, WAL replay without duplicates,
 * and a restart with 200,000 spans on disk whose memory stays bounded.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { deflateRawSync } from 'node:zlib';
import { pack } from '../../backends/embedded/pack.js';
import { openEmbeddedBackend, type EmbeddedBackend, type EmbeddedOptions } from '../../backends/embedded/index.js';
import { createLogger } from '../../kernel/logger.js';
import type { EventRecord, Span, SpanStatusCode } from '../../kernel/models.js';
import type { EventScanQuery, TraceSearchQuery } from '../../kernel/storage.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const T0 = 1_700_000_000_000;
const DAY = 86_400_000;
const ns = (ms: number) => BigInt(ms) * 1_000_000n;
const dirs: string[] = [];

function open(dir: string, extra: Partial<EmbeddedOptions> = {}, lines?: string[]): EmbeddedBackend {
  return openEmbeddedBackend({
    dir,
    logger: createLogger('info', {}, (l) => lines?.push(l)),
    fsync: 'interval',
    fsyncIntervalMs: 50,
    maintenanceIntervalMs: 0,
    ...extra,
  });
}

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'lookout-tr-'));
  dirs.push(d);
  return d;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const SERVICES = ['api', 'web', 'db', 'auth', 'cart'];
const hex = (r: () => number, n: number) => Array.from({ length: n }, () => Math.floor(r() * 16).toString(16)).join('');

/** `n` traces of 1–8 spans each, trace k starting at T0 + k * stepMs. */
function makeTraces(n: number, seed: number, stepMs = 10): Span[] {
  const r = rng(seed);
  const out: Span[] = [];
  for (let k = 0; k < n; k++) {
    const traceId = hex(r, 32);
    const spans = 1 + Math.floor(r() * 8);
    const start = T0 + k * stepMs;
    for (let i = 0; i < spans; i++) {
      const dur = Math.floor(r() * 2000) * 1_000_000 + 1000;
      const st = ns(start) + BigInt(i * 1000);
      const code: SpanStatusCode = r() < 0.05 ? 'error' : r() < 0.5 ? 'ok' : 'unset';
      out.push({
        traceId,
        spanId: hex(r, 16),
        parentSpanId: i === 0 ? '' : 'p',
        name: `op-${Math.floor(r() * 10)}`,
        kind: 'server',
        startTimeUnixNano: st,
        endTimeUnixNano: st + BigInt(dur),
        status: { code },
        attributes: { 'http.method': r() < 0.7 ? 'GET' : 'POST', 'http.status_code': 200 + Math.floor(r() * 4) * 100, 'customer.id': `c${Math.floor(r() * 5000)}` },
        resource: { 'service.name': SERVICES[Math.floor(r() * SERVICES.length)]! },
        scope: { name: 'test' },
        events: [],
        links: [],
      });
    }
  }
  return out;
}

/** Appends in batches, letting head flushes run in between (as ingest requests would). */
async function appendAll(b: EmbeddedBackend, spans: Span[], batch = 500): Promise<void> {
  for (let i = 0; i < spans.length; i += batch) {
    await b.traces.append(spans.slice(i, i + batch));
    await b.traces.wal.idle();
  }
}

async function searchIds(b: EmbeddedBackend, q: TraceSearchQuery): Promise<string[]> {
  const ids: string[] = [];
  for await (const g of b.traces.search(q)) ids.push(g[0]!.traceId);
  return ids.sort();
}

/** What search must return: traces with one visible span meeting every condition. */
function bruteForce(spans: Span[], q: TraceSearchQuery): string[] {
  const ids = new Set<string>();
  for (const s of spans) {
    if (!(s.startTimeUnixNano < q.endNs && s.endTimeUnixNano >= q.startNs)) continue;
    const attrs = Object.entries(q.attributes ?? {}).every(([k, v]) => String(s.attributes[k] ?? s.resource[k] ?? (k === 'name' ? s.name : undefined)) === v);
    const d = s.endTimeUnixNano - s.startTimeUnixNano;
    if (!attrs) continue;
    if (q.statuses && !q.statuses.includes(s.status.code)) continue;
    if (q.minDurationNs !== undefined && d < q.minDurationNs) continue;
    if (q.maxDurationNs !== undefined && d > q.maxDurationNs) continue;
    ids.add(s.traceId);
  }
  return [...ids].sort();
}

test('trace by id across head and several segments; search prunes blocks and agrees with a full scan', async () => {
  const dir = tmp();
  const b = open(dir, { tracesMaxHeadSpans: 5000 });
  const spans = makeTraces(6000, 1);
  // Split some traces across two flushes: a late span of trace 0 arrives after the others.
  const late = { ...spans[0]!, spanId: 'late', startTimeUnixNano: spans[0]!.startTimeUnixNano + 5n };
  await appendAll(b, spans);
  await b.traces.wal.idle();
  await b.traces.append([late]);
  const st = b.traces.stats();
  assert.ok(st.segments >= 3, `segments: ${st.segments}`);
  assert.ok(st.headSpans > 0);

  const byId = new Map<string, number>();
  for (const s of [...spans, late]) byId.set(s.traceId, (byId.get(s.traceId) ?? 0) + 1);
  for (const id of [...byId.keys()].filter((_, i) => i % 97 === 0)) {
    assert.is((await b.traces.getTrace(id.toUpperCase())).length, byId.get(id), id);
  }
  assert.is((await b.traces.getTrace(spans[0]!.traceId)).length, byId.get(spans[0]!.traceId));
  assert.equal(await b.traces.getTrace('0123456789abcdef0123456789abcdef'), []);
  assert.equal((await b.traces.getTrace(spans[0]!.traceId, [[{ name: 'service', op: '=', value: 'nope' }]])), []);

  const all = { startNs: ns(T0 - 1), endNs: ns(T0 + 2 * DAY) };
  const queries: TraceSearchQuery[] = [
    all,
    { ...all, attributes: { 'service.name': 'db' } },
    { ...all, attributes: { name: 'op-3', 'http.method': 'POST' } },
    { ...all, attributes: { 'customer.id': 'c42' } },
    { ...all, attributes: { 'http.status_code': '500' }, statuses: ['error'] },
    { ...all, minDurationNs: 1_990_000_000n },
    { startNs: ns(T0 + 20_000), endNs: ns(T0 + 21_000), attributes: { 'service.name': 'api' } },
  ];
  for (const q of queries) assert.equal(await searchIds(b, q), bruteForce([...spans, late], q), JSON.stringify(q, (_k, v) => (typeof v === 'bigint' ? String(v) : v)));

  // A whole group per trace, once, with spans from every segment and the head.
  const groups = new Map<string, number>();
  for await (const g of b.traces.search(all)) {
    assert.not.ok(groups.has(g[0]!.traceId));
    groups.set(g[0]!.traceId, g.length);
  }
  assert.is(groups.get(spans[0]!.traceId), byId.get(spans[0]!.traceId));
  // spanFilter applies to spans; a trace qualifies through one span.
  const errIds = await searchIds(b, { ...all, spanFilter: (s) => s.status.code === 'error' });
  assert.equal(errIds, bruteForce([...spans, late], { ...all, statuses: ['error'] }));

  // Pruning: a value nothing has reads no block; a narrow time range reads few.
  await b.maintenance({ flush: true, now: T0 });
  const misses = () => b.traces.cache.misses;
  let before = misses();
  assert.equal(await searchIds(b, { ...all, attributes: { 'service.name': 'nowhere' } }), []);
  assert.is(misses() - before, 0);
  before = misses();
  await searchIds(b, { ...all, minDurationNs: 10_000_000_000n });
  assert.is(misses() - before, 0);
  const blocks = b.traces.stats().segments;
  before = misses();
  await searchIds(b, { startNs: ns(T0 + 30_000), endNs: ns(T0 + 30_050) });
  assert.ok(misses() - before <= 3, `blocks read for 50 ms: ${misses() - before} (segments ${blocks})`);
  // Limit stops early (10 × limit groups at most).
  let n = 0;
  for await (const _ of b.traces.search({ ...all, limit: 2 })) n++;
  assert.is(n, 20);
  await b.close();

  // After a restart, everything is found again from segments.
  const c = open(dir);
  assert.is(c.traces.stats().headSpans, 0);
  assert.is((await c.traces.getTrace(spans[0]!.traceId)).length, byId.get(spans[0]!.traceId));
  assert.equal(await searchIds(c, queries[2]!), bruteForce([...spans, late], queries[2]!));
  await c.close();
});

test('events: scans merge head and segments in order, page by cursor, prune by labels', async () => {
  const dir = tmp();
  let b = open(dir, { eventsMaxHeadEvents: 3000 });
  const r = rng(5);
  const evs: EventRecord[] = [];
  for (let i = 0; i < 10_000; i++) {
    evs.push({
      id: `e${i}`,
      // Out of order and with duplicate timestamps: ordering uses (timestamp, seq).
      timestampNs: ns(T0 + Math.floor(r() * 100_000)),
      title: `t${i}`,
      text: 'x'.repeat(i % 50),
      labels: i % 100 === 0 ? { source: 'webhook', repository: `r${i % 7}` } : { source: 'kubernetes', namespace: `ns${i % 5}`, reason: i % 2 ? 'Pulled' : 'Killing' },
      attributes: { i },
    });
  }
  for (let i = 0; i < evs.length; i += 250) {
    await b.events.append(evs.slice(i, i + 250));
    await b.events.wal.idle();
  }
  assert.ok(b.events.stats().segments >= 3);
  assert.ok(b.events.stats().headEvents > 0);
  const seqOf = new Map(evs.map((e, i) => [e.id, i + 1]));
  const expect = (q: EventScanQuery) => {
    const ok = evs.filter((e) => e.timestampNs >= q.startNs && e.timestampNs < q.endNs && (q.matchers ?? []).every((m) => (m.op === '=' ? e.labels[m.name] === m.value : e.labels[m.name] !== m.value)));
    ok.sort((a, x) => (a.timestampNs < x.timestampNs ? -1 : a.timestampNs > x.timestampNs ? 1 : seqOf.get(a.id)! - seqOf.get(x.id)!));
    return (q.order === 'asc' ? ok : ok.reverse()).map((e) => e.id);
  };
  const scan = async (q: EventScanQuery, pageSize = Infinity) => {
    const ids: string[] = [];
    let after: string | undefined;
    for (;;) {
      let got = 0;
      let last: string | undefined;
      for await (const x of b.events.scan({ ...q, after })) {
        for (let i = 0; i < x.events.length && got < pageSize; i++, got++) {
          ids.push(x.events[i]!.id);
          last = `${x.events[i]!.timestampNs}:${x.seqs[i]}`;
        }
        if (got >= pageSize) break;
      }
      if (got < pageSize || !last) return ids;
      after = last;
    }
  };
  const qs: EventScanQuery[] = [
    { startNs: ns(T0), endNs: ns(T0 + 100_000) },
    { startNs: ns(T0), endNs: ns(T0 + 100_000), order: 'asc' },
    { startNs: ns(T0 + 20_000), endNs: ns(T0 + 20_500), matchers: [{ name: 'reason', op: '=', value: 'Pulled' }] },
    { startNs: ns(T0), endNs: ns(T0 + 100_000), matchers: [{ name: 'source', op: '=', value: 'webhook' }], order: 'asc' },
  ];
  for (const q of qs) assert.equal(await scan(q), expect(q));
  assert.equal(await scan(qs[0]!, 777), expect(qs[0]!));
  assert.equal(await scan(qs[1]!, 333), expect(qs[1]!));
  // A label value absent from every block reads nothing; a scope excluding all reads nothing.
  await b.maintenance({ flush: true, now: T0 });
  let before = b.events.cache.misses;
  assert.equal(await scan({ startNs: 0n, endNs: ns(T0 * 2), matchers: [{ name: 'namespace', op: '=', value: 'ns9' }] }), []);
  assert.equal(await scan({ startNs: 0n, endNs: ns(T0 * 2), scope: [[{ name: 'source', op: '=', value: 'bus' }]] }), []);
  assert.is(b.events.cache.misses - before, 0);
  // Stopping after the first batch reads only the newest blocks.
  before = b.events.cache.misses;
  for await (const _ of b.events.scan({ startNs: 0n, endNs: ns(T0 * 2) })) break;
  assert.ok(b.events.cache.misses - before < b.events.stats().segmentEvents / 1024, `blocks read: ${b.events.cache.misses - before}`);
  await b.close();
  b = open(dir);
  for (const q of qs) assert.equal(await scan(q), expect(q));
  const [first] = await (async () => {
    for await (const x of b.events.scan({ startNs: 0n, endNs: ns(T0 * 2), order: 'asc' })) return [x];
    return [];
  })();
  assert.equal(first!.events[0]!.attributes, { i: Number(first!.events[0]!.id.slice(1)) });
  await b.close();
});

test('retention deletes whole expired span and event segments and keeps the rest', async () => {
  const dir = tmp();
  const b = open(dir, { retentionMs: { metrics: 0, logs: 0, traces: 7 * DAY, events: 10 * DAY } });
  const old = makeTraces(50, 2);
  await appendAll(b, old);
  await b.events.append([{ id: 'old', timestampNs: ns(T0), title: '', text: '', labels: {}, attributes: {} }]);
  await b.maintenance({ flush: true, now: T0 });
  const now = T0 + 8 * DAY;
  const fresh = makeTraces(50, 3).map((s) => ({ ...s, startTimeUnixNano: s.startTimeUnixNano + ns(8 * DAY - 60_000), endTimeUnixNano: s.endTimeUnixNano + ns(8 * DAY - 60_000) }));
  await appendAll(b, fresh);
  await b.events.append([{ id: 'new', timestampNs: ns(now - 1000), title: '', text: '', labels: {}, attributes: {} }]);
  const rep = await b.maintenance({ flush: true, now });
  assert.is(rep.expiredSegments, 1); // the old trace segment; old events are 8 days old (< 10)
  assert.equal(readdirSync(join(dir, 'traces', 'segments')).filter((f) => f.endsWith('.tseg')).length, 1);
  assert.equal(await b.traces.getTrace(old[0]!.traceId), []);
  assert.ok((await b.traces.getTrace(fresh[0]!.traceId)).length > 0);
  assert.is((await searchIds(b, { startNs: 0n, endNs: ns(now) })).length, 50);
  await b.maintenance({ flush: true, now: T0 + 11 * DAY });
  const ids: string[] = [];
  for await (const x of b.events.scan({ startNs: 0n, endNs: ns(T0 + 11 * DAY) })) ids.push(...x.events.map((e) => e.id));
  assert.equal(ids, ['new']);
  await b.close();
  const c = open(dir);
  assert.equal(await c.traces.getTrace(old[0]!.traceId), []);
  await c.close();
});

test('a crash between segment write and WAL deletion replays no duplicates; unreadable segments are skipped', async () => {
  const dir = tmp();
  const b = open(dir);
  const spans = makeTraces(20, 4);
  await appendAll(b, spans);
  await b.events.append([{ id: 'a', timestampNs: ns(T0), title: '', text: '', labels: {}, attributes: {} }]);
  await b.flush();
  // Keep the WAL as it was before the flush, then put it back after: as if the process died
  // after writing the segments and before deleting the WAL files they cover.
  cpSync(join(dir, 'traces', 'wal'), join(dir, 'traces-wal-copy'), { recursive: true });
  cpSync(join(dir, 'events', 'wal'), join(dir, 'events-wal-copy'), { recursive: true });
  await b.maintenance({ flush: true, now: T0 });
  await b.close();
  rmSync(join(dir, 'traces', 'wal'), { recursive: true });
  rmSync(join(dir, 'events', 'wal'), { recursive: true });
  cpSync(join(dir, 'traces-wal-copy'), join(dir, 'traces', 'wal'), { recursive: true });
  cpSync(join(dir, 'events-wal-copy'), join(dir, 'events', 'wal'), { recursive: true });
  const lines: string[] = [];
  writeFileSync(join(dir, 'traces', 'segments', '0000000099.tseg'), 'garbage');
  const c = open(dir, {}, lines);
  assert.is(c.traces.stats().headSpans, 0);
  assert.is((await c.traces.getTrace(spans[0]!.traceId)).length, spans.filter((s) => s.traceId === spans[0]!.traceId).length);
  let n = 0;
  for await (const x of c.events.scan({ startNs: 0n, endNs: ns(T0 + 1) })) n += x.events.length;
  assert.is(n, 1);
  assert.ok(lines.some((l) => l.includes('trace segment unreadable')));
  // New data after the skipped file gets a later generation and survives another restart.
  await c.traces.append([{ ...spans[0]!, spanId: 'after' }]);
  await c.close();
  const d = open(dir);
  assert.ok((await d.traces.getTrace(spans[0]!.traceId)).some((s) => s.spanId === 'after'));
  await d.close();
});

test('search finds spans whose service or name comes from a span attribute, after a flush', async () => {
  const dir = tmp();
  const b = open(dir);
  const [x, y] = makeTraces(2, 8);
  await b.traces.append([
    { ...x!, attributes: { 'service.name': 'from-span' } },
    { ...y!, name: 'real-name', attributes: { name: 'attr-name' } },
  ]);
  await b.maintenance({ flush: true, now: T0 });
  const all = { startNs: 0n, endNs: ns(T0 + DAY) };
  assert.equal(await searchIds(b, { ...all, attributes: { 'service.name': 'from-span' } }), [x!.traceId]);
  assert.equal(await searchIds(b, { ...all, attributes: { name: 'attr-name' } }), [y!.traceId]);
  assert.equal(await searchIds(b, { ...all, attributes: { name: 'real-name' } }), [y!.traceId]);
  assert.equal(await searchIds(b, { ...all, attributes: { name: 'other' } }), []);
  await b.close();
});

test('segments of the earlier in-memory format (.dseg) are converted on open', async () => {
  const dir = tmp();
  const spans = makeTraces(30, 6);
  const ev: EventRecord = { id: 'legacy', timestampNs: ns(T0), title: 't', text: '', labels: { source: 'bus' }, attributes: { k: 'v' } };
  for (const [sig, docs] of [['traces', spans], ['events', [ev]]] as const) {
    mkdirSync(join(dir, sig, 'segments'), { recursive: true });
    const file = { lastSeq: docs.length, docs: docs.map((d, i) => [i + 1, d]) };
    writeFileSync(join(dir, sig, 'segments', '0000000001.dseg'), deflateRawSync(pack(file)));
  }
  const b = open(dir);
  assert.is((await b.traces.getTrace(spans[0]!.traceId)).length, spans.filter((x) => x.traceId === spans[0]!.traceId).length);
  const got: EventRecord[] = [];
  for await (const x of b.events.scan({ startNs: 0n, endNs: ns(T0 + 1) })) got.push(...x.events);
  assert.equal(got, [ev]);
  assert.equal(readdirSync(join(dir, 'traces', 'segments')), ['0000000001.tseg']);
  assert.equal(readdirSync(join(dir, 'events', 'segments')), ['0000000001.eseg']);
  // Sequences continue after the converted segment.
  await b.events.append([{ ...ev, id: 'next' }]);
  await b.close();
  const c = open(dir);
  const ids: string[] = [];
  for await (const x of c.events.scan({ startNs: 0n, endNs: ns(T0 + 1), order: 'asc' })) ids.push(...x.events.map((e) => e.id));
  assert.equal(ids, ['legacy', 'next']);
  await c.close();
});

test('restart with 200,000 spans on disk: fast, memory bounded, trace by id and search work', async () => {
  const dir = tmp();
  const a = open(dir);
  const spans = makeTraces(45_000, 9, 1);
  assert.ok(spans.length >= 200_000, String(spans.length));
  await appendAll(a, spans, 1000);
  await a.close();

  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const t = performance.now();
  const b = open(dir);
  const openMs = performance.now() - t;
  gc();
  const grown = process.memoryUsage().heapUsed - heap0;
  const st = b.traces.stats();
  console.log(`  reopen with ${st.segmentSpans} spans in ${st.segments} segments (${(st.segmentBytes / 1e6).toFixed(1)} MB): ${openMs.toFixed(0)} ms, heap +${(grown / 1e6).toFixed(1)} MB`);
  assert.is(st.segmentSpans, spans.length);
  assert.is(st.headSpans, 0);
  // The spans themselves would take hundreds of MB decoded; the indexes take a few.
  assert.ok(grown < 16e6, `heap grew ${grown} bytes`);
  assert.ok(openMs < 2000, `open took ${openMs} ms`);

  const ids = [...new Set(spans.map((s) => s.traceId))];
  const r = rng(11);
  const t1 = performance.now();
  for (let i = 0; i < 200; i++) {
    const id = ids[Math.floor(r() * ids.length)]!;
    const got = await b.traces.getTrace(id);
    assert.ok(got.length > 0 && got.every((s) => s.traceId === id));
  }
  console.log(`  getTrace: ${((performance.now() - t1) / 200).toFixed(2)} ms each (cold cache, 200 random ids)`);
  let found = 0;
  for await (const _ of b.traces.search({ startNs: 0n, endNs: ns(T0 * 2), attributes: { 'service.name': 'db', name: 'op-1' } })) found++;
  assert.ok(found > 0);
  gc();
  assert.ok(b.traces.stats().cacheBytes <= 64 << 20);
  assert.ok(process.memoryUsage().heapUsed - heap0 < 100e6, 'search stays within the cache bound');
  await b.close();
});

test.after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test.run();
