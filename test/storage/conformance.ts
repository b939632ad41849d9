/**
 * The storage conformance suite: every StorageBackend must pass it. `storageConformance(name,
 * harness)` registers and runs a uvu suite against fresh backends from the harness.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { LabelMatcher } from '../../kernel/matchers.js';
import { STALE_NAN, isStaleMarker, type FloatHistogram, type LogRecord, type Span, type EventRecord } from '../../kernel/models.js';
import type { StorageBackend, StoredSeries } from '../../kernel/storage.js';

export interface BackendHarness {
  /** Opens a backend; for persistent harnesses a second call reopens the same data. */
  open(): Promise<StorageBackend>;
  /** True when data survives close + open. */
  persistent: boolean;
  /**
   * Flushes in-memory data into durable segments and applies retention as of `now` with the
   * given retention (ms); absent when the backend has no retention.
   */
  retention?(b: StorageBackend, now: number, flush: boolean): Promise<void>;
  cleanup(): Promise<void>;
}

const m = (name: string, op: LabelMatcher['op'], value: string): LabelMatcher => ({ name, op, value });

async function collect(b: StorageBackend, ms: LabelMatcher[], mint: number, maxt: number, scope?: LabelMatcher[][]): Promise<StoredSeries[]> {
  const out: StoredSeries[] = [];
  for await (const s of b.metrics.select(ms, mint, maxt, scope ? { scope } : undefined)) out.push(s);
  return out;
}

async function scanAll(b: StorageBackend, q: Parameters<StorageBackend['logs']['scan']>[0]): Promise<{ records: LogRecord[]; seqs: number[]; positions: string[] }> {
  const records: LogRecord[] = [];
  const seqs: number[] = [];
  const positions: string[] = [];
  for await (const batch of b.logs.scan(q)) {
    records.push(...batch.records);
    seqs.push(...batch.seqs);
    positions.push(batch.position);
  }
  return { records, seqs, positions };
}

const T0 = 1_700_000_000_000;
const ns = (ms: number) => BigInt(ms) * 1_000_000n;

function log(ms: number, message: string, labels: Record<string, string>, facets: LogRecord['facets'] = {}): LogRecord {
  return { timestampNs: ns(ms), message, labels, facets };
}

function span(traceId: string, spanId: string, startMs: number, svc: string, attrs: Span['attributes'] = {}): Span {
  return {
    traceId,
    spanId,
    parentSpanId: '',
    name: 'op-' + spanId,
    kind: 'server',
    startTimeUnixNano: ns(startMs),
    endTimeUnixNano: ns(startMs + 10),
    status: { code: 'ok' },
    attributes: attrs,
    resource: { 'service.name': svc },
    scope: { name: 'test' },
    events: [],
    links: [],
  };
}

const hist: FloatHistogram = {
  counterResetHint: 'not_reset',
  schema: 1,
  zeroThreshold: 1e-128,
  zeroCount: 2,
  count: 10,
  sum: 18.5,
  positiveSpans: [{ offset: 0, length: 2 }, { offset: 1, length: 1 }],
  positiveBuckets: [1, 3, 4],
  negativeSpans: [],
  negativeBuckets: [],
};

async function seedMetrics(b: StorageBackend): Promise<void> {
  const series = [];
  for (const job of ['api', 'web', 'db']) {
    for (const inst of ['a', 'b']) {
      const labels: Record<string, string> = { __name__: 'up', job, instance: inst };
      if (job === 'api') labels.env = 'prod';
      series.push({ labels, samples: [0, 1, 2, 3, 4].map((i) => ({ t: T0 + i * 15_000, v: i + (job === 'db' ? 100 : 0) })) });
    }
  }
  series.push({ labels: { __name__: 'http_requests_total', job: 'api', instance: 'a', code: '200' }, samples: [{ t: T0, v: 1 }] });
  await b.metrics.append(series);
}

export function storageConformance(name: string, makeHarness: () => BackendHarness): void {
  const s = suite<{ h: BackendHarness; b: StorageBackend }>(`storage conformance: ${name}`);
  const ctx = {} as { h: BackendHarness; b: StorageBackend };

  s.before.each(async () => {
    ctx.h = makeHarness();
    ctx.b = await ctx.h.open();
  });
  s.after.each(async () => {
    await ctx.b.close();
    await ctx.h.cleanup();
  });

  s('select: = != =~ !~ matchers, anchored regex, missing label reads as ""', async () => {
    const { b } = ctx;
    await seedMetrics(b);
    const jobs = async (ms: LabelMatcher[]) => (await collect(b, ms, T0, T0 + 60_000)).map((x) => `${x.labels.job}/${x.labels.instance}`);
    assert.equal(await jobs([m('__name__', '=', 'up'), m('job', '=', 'api')]), ['api/a', 'api/b']);
    assert.equal((await jobs([m('__name__', '=', 'up'), m('job', '!=', 'api')])).sort(), ['db/a', 'db/b', 'web/a', 'web/b']);
    assert.equal((await jobs([m('__name__', '=', 'up'), m('job', '=~', 'a.*|w.b')])).sort(), ['api/a', 'api/b', 'web/a', 'web/b']);
    // Anchored: "pi" does not match "api".
    assert.equal(await jobs([m('__name__', '=', 'up'), m('job', '=~', 'pi')]), []);
    assert.equal((await jobs([m('__name__', '=', 'up'), m('job', '!~', 'api|db')])).sort(), ['web/a', 'web/b']);
    // Missing label reads as "": env="" selects series without env; env!="" those with it.
    assert.equal((await jobs([m('__name__', '=', 'up'), m('env', '=', '')])).length, 4);
    assert.equal((await jobs([m('__name__', '=', 'up'), m('env', '!=', '')])).sort(), ['api/a', 'api/b']);
    assert.equal((await jobs([m('__name__', '=', 'up'), m('env', '=~', 'prod|')])).length, 6);
    assert.equal((await jobs([m('job', '=~', '.+'), m('instance', '=', 'a')])).length, 4);
  });

  s('select: time range bounds are inclusive; values and order', async () => {
    const { b } = ctx;
    await seedMetrics(b);
    const [x] = await collect(b, [m('__name__', '=', 'up'), m('job', '=', 'db'), m('instance', '=', 'a')], T0 + 15_000, T0 + 45_000);
    assert.ok(x);
    assert.equal([...x!.timestamps], [T0 + 15_000, T0 + 30_000, T0 + 45_000]);
    assert.equal([...x!.values], [101, 102, 103]);
    assert.equal(await collect(b, [m('__name__', '=', 'up')], T0 + 61_000, T0 + 100_000), []);
    assert.equal((await collect(b, [m('__name__', '=', 'up')], T0 - 1000, T0)).length, 6);
  });

  s('select: out-of-order and duplicate samples (last wins)', async () => {
    const { b } = ctx;
    const labels = { __name__: 'ooo', job: 'x' };
    await b.metrics.append([{ labels, samples: [{ t: T0 + 30_000, v: 3 }, { t: T0 + 60_000, v: 6 }] }]);
    await b.metrics.append([{ labels, samples: [{ t: T0, v: 0 }, { t: T0 + 45_000, v: 4.5 }, { t: T0 + 30_000, v: 33 }] }]);
    await b.metrics.append([{ labels, samples: [{ t: T0 + 60_000, v: 66 }, { t: T0 + 75_000, v: 7.5 }] }]);
    const [x] = await collect(b, [m('__name__', '=', 'ooo')], 0, T0 + 100_000);
    assert.equal([...x!.timestamps], [T0, T0 + 30_000, T0 + 45_000, T0 + 60_000, T0 + 75_000]);
    assert.equal([...x!.values], [0, 33, 4.5, 66, 7.5]);
  });

  s('staleness markers are preserved bit-exact; special floats round-trip', async () => {
    const { b } = ctx;
    const labels = { __name__: 'stale_test' };
    // Built as objects, never through a number[] literal: V8 canonicalizes NaNs in double arrays.
    const samples = [{ v: 1.5 }, { v: STALE_NAN }, { v: -0 }, { v: Infinity }, { v: -Infinity }, { v: NaN }, { v: 2 ** 60 }, { v: 5e-324 }].map(
      (x, i) => ({ t: T0 + i * 1000, v: x.v }),
    );
    assert.ok(isStaleMarker(samples[1]!.v));
    await b.metrics.append([{ labels, samples }]);
    // An out-of-order staleness marker too (goes through a different path in some backends).
    await b.metrics.append([{ labels, samples: [{ t: T0 + 500, v: STALE_NAN }] }]);
    const [x] = await collect(b, [m('__name__', '=', 'stale_test')], 0, T0 + 1e6);
    assert.is(x!.values.length, 9);
    assert.ok(isStaleMarker(x!.values[1]!), 'out-of-order marker kept');
    assert.ok(isStaleMarker(x!.values[2]!), 'in-order marker kept');
    assert.ok(Object.is(x!.values[3], -0));
    assert.is(x!.values[4], Infinity);
    assert.ok(Number.isNaN(x!.values[6]) && !isStaleMarker(x!.values[6]!));
    assert.is(x!.values[7], 2 ** 60);
    assert.is(x!.values[8], 5e-324);
  });

  s('native histogram samples and start timestamps round-trip', async () => {
    const { b } = ctx;
    await b.metrics.append([
      { labels: { __name__: 'h' }, samples: [{ t: T0, v: 0, h: hist }, { t: T0 + 1000, v: 0, h: { ...hist, count: 11, sum: 20 } }] },
      { labels: { __name__: 'c' }, samples: [{ t: T0, v: 1, st: T0 - 5000 }, { t: T0 + 1000, v: 2 }] },
    ]);
    const [h] = await collect(b, [m('__name__', '=', 'h')], 0, T0 + 5000);
    assert.equal(h!.histograms?.[0], hist);
    assert.is(h!.histograms?.[1]?.count, 11);
    const [c] = await collect(b, [m('__name__', '=', 'c')], 0, T0 + 5000);
    assert.equal([...c!.values], [1, 2]);
    assert.is(c!.startTimestamps?.[0], T0 - 5000);
    assert.ok(Number.isNaN(c!.startTimestamps?.[1]));
  });

  s('metadata per metric name', async () => {
    const { b } = ctx;
    await b.metrics.appendMetadata([
      { metric: 'up', type: 'gauge', help: 'Up.', unit: '' },
      { metric: 'http_requests_total', type: 'counter', help: 'Requests.', unit: 'requests' },
    ]);
    const all = await b.metrics.metadata();
    assert.equal(all.get('up'), [{ metric: 'up', type: 'gauge', help: 'Up.', unit: '' }]);
    const one = await b.metrics.metadata('http_requests_total');
    assert.equal([...one.keys()], ['http_requests_total']);
    assert.is((await b.metrics.metadata(undefined, 1)).size, 1);
  });

  s('series, labelNames, labelValues with matcher sets, time range and scope', async () => {
    const { b } = ctx;
    await seedMetrics(b);
    const sets = [[m('job', '=', 'api')], [m('job', '=', 'db'), m('instance', '=', 'a')]];
    const series = await b.metrics.series(sets, T0, T0 + 60_000);
    assert.is(series.length, 4);
    assert.equal(await b.metrics.labelNames([[m('job', '=', 'web')]], T0, T0 + 60_000), ['__name__', 'instance', 'job']);
    assert.equal(await b.metrics.labelNames([], T0, T0 + 60_000), ['__name__', 'code', 'env', 'instance', 'job']);
    assert.equal(await b.metrics.labelValues('job', [], T0, T0 + 60_000), ['api', 'db', 'web']);
    assert.equal(await b.metrics.labelValues('code', [[m('__name__', '=', 'up')]], T0, T0 + 60_000), []);
    assert.equal(await b.metrics.labelValues('job', [], T0 + 3_600_000, T0 + 7_200_000), []);
    const scope = [[m('job', '=', 'web')], [m('job', '=', 'db'), m('instance', '=', 'b')]];
    assert.equal(await b.metrics.labelValues('job', [], T0, T0 + 60_000, scope), ['db', 'web']);
    assert.is((await b.metrics.series([[m('__name__', '=', 'up')]], T0, T0 + 60_000, scope)).length, 3);
    assert.equal(await b.metrics.series([[m('__name__', '=', 'up')]], T0, T0 + 60_000, []), []);
    const sel = await collect(b, [m('__name__', '=', 'up')], T0, T0 + 60_000, [[m('job', '=', 'web')]]);
    assert.is(sel.length, 2);
  });

  s('cardinality counts from the index', async () => {
    const { b } = ctx;
    await seedMetrics(b);
    const c = await b.metrics.cardinality({ mint: T0, maxt: T0 + 60_000, matcherSets: [] });
    assert.is(c.totalSeries, 7);
    assert.is(c.seriesByMetric.get('up'), 6);
    assert.is(c.seriesByMetric.get('http_requests_total'), 1);
    assert.is(c.seriesByLabel.get('env'), 2);
    assert.is(c.distinctValuesByLabel.get('job'), 3);
    const sc = await b.metrics.cardinality({ mint: T0, maxt: T0 + 60_000, matcherSets: [[m('__name__', '=', 'up')]], scope: [[m('job', '=', 'api')]], labels: ['instance'] });
    assert.is(sc.totalSeries, 2);
    assert.equal([...sc.seriesByLabel.keys()], ['instance']);
    assert.is(sc.distinctValuesByLabel.get('instance'), 2);
  });

  s('logs: scan order, ties (later-ingested first for desc), bounds, paging with after', async () => {
    const { b } = ctx;
    const L = { service: 'api', level: 'info' };
    await b.logs.append([log(T0, 'first', L), log(T0 + 10, 'tie-1', L), log(T0 + 20, 'last', L, { n: 1, ok: true, s: 'x' })]);
    await b.logs.append([log(T0 + 10, 'tie-2', L), log(T0 - 5, 'older', L)]);
    const desc = await scanAll(b, { startNs: ns(T0 - 100), endNs: ns(T0 + 100) });
    assert.equal(desc.records.map((r) => r.message), ['last', 'tie-2', 'tie-1', 'first', 'older']);
    assert.equal(desc.records[0]!.facets, { n: 1, ok: true, s: 'x' });
    assert.equal(desc.records[0]!.labels, L);
    assert.is(desc.records[0]!.timestampNs, ns(T0 + 20));
    const asc = await scanAll(b, { startNs: ns(T0 - 100), endNs: ns(T0 + 100), order: 'asc' });
    assert.equal(asc.records.map((r) => r.message), ['older', 'first', 'tie-1', 'tie-2', 'last']);
    // [start, end): end excluded, start included.
    const win = await scanAll(b, { startNs: ns(T0), endNs: ns(T0 + 20) });
    assert.equal(win.records.map((r) => r.message), ['tie-2', 'tie-1', 'first']);
    // Position of a full batch resumes after it.
    const all = await scanAll(b, { startNs: ns(T0 - 100), endNs: ns(T0 + 100) });
    const rest = await scanAll(b, { startNs: ns(T0 - 100), endNs: ns(T0 + 100), after: all.positions[all.positions.length - 1] });
    assert.is(rest.records.length, 0);
  });

  s('logs: paging across batches returns every record exactly once', async () => {
    const { b } = ctx;
    const recs: LogRecord[] = [];
    for (let i = 0; i < 3000; i++) recs.push(log(T0 + (i % 700), `m${i}`, { service: i % 2 ? 'a' : 'b' }));
    await b.logs.append(recs);
    for (const order of ['desc', 'asc'] as const) {
      const first = b.logs.scan({ startNs: ns(T0 - 1), endNs: ns(T0 + 1000), order })[Symbol.asyncIterator]();
      const r1 = await first.next();
      assert.ok(!r1.done);
      const got = r1.value.records.map((r: LogRecord) => r.message);
      await first.return?.();
      const rest = await scanAll(b, { startNs: ns(T0 - 1), endNs: ns(T0 + 1000), order, after: r1.value.position });
      const all = [...got, ...rest.records.map((r) => r.message)];
      assert.is(all.length, 3000);
      assert.is(new Set(all).size, 3000);
      const full = await scanAll(b, { startNs: ns(T0 - 1), endNs: ns(T0 + 1000), order });
      assert.equal(all, full.records.map((r) => r.message));
    }
  });

  s('logs: matchers, terms (case-insensitive substrings) and scope', async () => {
    const { b } = ctx;
    await b.logs.append([
      log(T0, 'GET /api/users 200', { service: 'api', level: 'info' }),
      log(T0 + 1, 'Connection ERROR: timeout', { service: 'api', level: 'error' }),
      log(T0 + 2, 'disk error on sda', { service: 'db', level: 'error' }),
      log(T0 + 3, 'ok', { service: 'web' }),
    ]);
    const q = { startNs: ns(T0 - 10), endNs: ns(T0 + 10) };
    const msgs = async (extra: object) => (await scanAll(b, { ...q, ...extra })).records.map((r) => r.message);
    assert.equal(await msgs({ matchers: [m('level', '=', 'error')] }), ['disk error on sda', 'Connection ERROR: timeout']);
    assert.equal(await msgs({ terms: ['error'] }), ['disk error on sda', 'Connection ERROR: timeout']);
    assert.equal(await msgs({ terms: ['erro', 'TIME'] }), ['Connection ERROR: timeout']);
    assert.equal(await msgs({ terms: ['nothing-like-this'] }), []);
    assert.equal(await msgs({ matchers: [m('level', '=', '')] }), ['ok']);
    assert.equal(await msgs({ matchers: [m('service', '=~', 'a.*|w.*')], order: 'asc' }), ['GET /api/users 200', 'Connection ERROR: timeout', 'ok']);
    assert.equal(await msgs({ scope: [[m('service', '=', 'db')], [m('service', '=', 'web')]] }), ['ok', 'disk error on sda']);
    assert.equal(await msgs({ scope: [] }), []);
  });

  s('logs: scan honours limit and resumes with after, across head and segments', async () => {
    const { b, h } = ctx;
    const recs: LogRecord[] = [];
    for (let i = 0; i < 20_000; i++) recs.push(log(T0 + Math.floor(i / 3), `m${i}`, { service: `s${i % 7}` }, i % 2 ? {} : { i, tag: `t${i}` }));
    await b.logs.append(recs.slice(0, 12_000));
    await h.retention?.(b, T0 + 60_000, true); // flush into segments, nothing expires
    await b.logs.append(recs.slice(12_000));
    const q = { startNs: ns(T0), endNs: ns(T0 + 10_000) };
    const fullRecs = (await scanAll(b, q)).records;
    const full = fullRecs.map((r) => r.message);
    assert.is(full.length, 20_000);
    // Messages and facets read back per record, from segments and head alike.
    for (const r of fullRecs) {
      const i = Number(r.message.slice(1));
      assert.equal(r.facets, i % 2 ? {} : { i, tag: `t${i}` });
      assert.is(r.labels.service, `s${i % 7}`);
      assert.is(r.timestampNs, ns(T0 + Math.floor(i / 3)));
    }
    const selective = (await scanAll(b, { ...q, matchers: [m('service', '=', 's3')], terms: ['M1'] })).records.map((r) => r.message);
    assert.equal(selective, full.filter((x) => Number(x.slice(1)) % 7 === 3 && x.startsWith('m1')));
    assert.is(full[0], 'm19999');
    // A first page through `limit` (a backend may return more than asked; the caller stops).
    const page: string[] = [];
    outer: for await (const batch of b.logs.scan({ ...q, limit: 250 }))
      for (const r of batch.records) {
        page.push(r.message);
        if (page.length === 250) break outer;
      }
    assert.equal(page, full.slice(0, 250));
    const small = (await scanAll(b, { ...q, limit: 5, order: 'asc' })).records.map((r) => r.message);
    assert.equal(small.slice(0, 5), ['m0', 'm1', 'm2', 'm3', 'm4']);
    // `after` from every batch boundary resumes exactly after it, both orders.
    for (const order of ['desc', 'asc'] as const) {
      const all = await scanAll(b, { ...q, order });
      let seen = 0;
      const firstBatches = b.logs.scan({ ...q, order })[Symbol.asyncIterator]();
      for (let k = 0; k < 3; k++) {
        const r = await firstBatches.next();
        if (r.done) break;
        seen += r.value.records.length;
        const rest = await scanAll(b, { ...q, order, after: r.value.position });
        assert.equal(rest.records.map((x) => x.message), all.records.slice(seen).map((x) => x.message));
      }
      await firstBatches.return?.();
    }
  });

  s('logs: scanColumns (when offered) agrees with scan: labels, missing labels, range, matchers, scope, ms, weights', async () => {
    const { b, h } = ctx;
    const scanColumns = b.logs.scanColumns?.bind(b.logs);
    if (!scanColumns) return;
    const recs: LogRecord[] = [];
    for (let i = 0; i < 21_000; i++) {
      const labels: Record<string, string> = { service: `s${i % 5}` };
      if (i % 3 !== 0) labels.level = ['info', 'warn'][i % 2]!;
      // ns timestamps that are not whole ms, spread over ~40 s
      recs.push({ timestampNs: ns(T0) + BigInt(i) * 1_900_123n, message: `m${i}`, labels, facets: {} });
    }
    await b.logs.append(recs.slice(0, 15_000));
    await h.retention?.(b, T0 + 60_000, true);
    await b.logs.append(recs.slice(15_000));
    const cases: { startNs: bigint; endNs: bigint; matchers?: LabelMatcher[]; scope?: LabelMatcher[][] }[] = [
      { startNs: ns(T0 - 1000), endNs: ns(T0 + 100_000) },
      { startNs: ns(T0) + 1_234_567_891n, endNs: ns(T0) + 33_333_333_333n },
      { startNs: ns(T0 - 1000), endNs: ns(T0 + 100_000), matchers: [m('level', '=', '')] },
      { startNs: ns(T0 + 5000), endNs: ns(T0 + 100_000), matchers: [m('service', '=~', 's[12]')], scope: [[m('level', '=', 'warn')], [m('service', '=', 's1')]] },
      { startNs: ns(T0 - 1000), endNs: ns(T0 + 100_000), scope: [] },
    ];
    for (const c of cases) {
      const expected = new Map<string, number>();
      const expectedMs = new Map<string, number>();
      for await (const batch of b.logs.scan(c))
        for (const r of batch.records) {
          const k = `${r.labels.service ?? '-'}|${r.labels.level ?? '-'}`;
          expected.set(k, (expected.get(k) ?? 0) + 1);
          const km = `${k}|${Number(r.timestampNs / 1_000_000n)}`;
          expectedMs.set(km, (expectedMs.get(km) ?? 0) + 1);
        }
      for (const mode of ['plain', 'ms', 'weighted'] as const) {
        const got = new Map<string, number>();
        for await (const batch of scanColumns({ ...c, labels: ['service', 'level'], timestampsMs: mode === 'ms', weighted: mode === 'weighted' })) {
          if (mode !== 'weighted') assert.is(batch.weights, undefined);
          for (let i = 0; i < batch.length; i++) {
            const val = (j: number) => {
              const col = batch.labels[j]!;
              const code = col.codes === null ? (col.dict.length === 0 ? -1 : 0) : col.codes[i]!;
              return code < 0 ? '-' : col.dict[code]!;
            };
            let k = `${val(0)}|${val(1)}`;
            if (mode === 'ms') k += `|${batch.timestampsMs![i]}`;
            got.set(k, (got.get(k) ?? 0) + (batch.weights ? batch.weights[i]! : 1));
          }
        }
        const want = mode === 'ms' ? expectedMs : expected;
        assert.equal([...got].sort(), [...want].sort(), `${mode} ${JSON.stringify(c, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`);
      }
      // No labels, timestamps only (the `timeslice | count by _timeslice` shape).
      const msOnly = new Map<number, number>();
      for (const k of expectedMs.keys()) {
        const t = Number(k.split('|')[2]);
        msOnly.set(t, (msOnly.get(t) ?? 0) + expectedMs.get(k)!);
      }
      const gotMs = new Map<number, number>();
      for await (const batch of scanColumns({ ...c, labels: [], timestampsMs: true })) {
        assert.is(batch.labels.length, 0);
        for (let i = 0; i < batch.length; i++) gotMs.set(batch.timestampsMs![i]!, (gotMs.get(batch.timestampsMs![i]!) ?? 0) + 1);
      }
      assert.equal([...gotMs].sort((a, b) => a[0] - b[0]), [...msOnly].sort((a, b) => a[0] - b[0]));
    }
  });

  s('logs: tail and lastSeq', async () => {
    const { b } = ctx;
    assert.is(b.logs.lastSeq(), 0);
    await b.logs.append([log(T0, 'a', { service: 'x' }), log(T0, 'b', { service: 'y' })]);
    const s1 = b.logs.lastSeq();
    assert.is(s1, 2);
    await b.logs.append([log(T0 - 1000, 'c', { service: 'x' })]);
    const t = await b.logs.tail(s1);
    assert.equal(t.records.map((r) => r.message), ['c']);
    assert.equal(t.seqs, [3]);
    const all = await b.logs.tail(0, [[m('service', '=', 'x')]]);
    assert.equal(all.records.map((r) => r.message), ['a', 'c']);
    assert.equal(all.seqs, [1, 3]);
  });

  s('events: scan order, matchers, paging', async () => {
    const { b } = ctx;
    const ev = (id: string, ms: number, labels: Record<string, string>): EventRecord => ({ id, timestampNs: ns(ms), title: id, text: '', labels, attributes: { a: 1 } });
    await b.events.append([ev('e1', T0, { source: 'kubernetes', reason: 'Pulled' }), ev('e2', T0 + 5, { source: 'webhook' }), ev('e3', T0 + 5, { source: 'kubernetes' })]);
    const ids = async (q: object) => {
      const out: string[] = [];
      for await (const batch of b.events.scan({ startNs: ns(T0 - 1), endNs: ns(T0 + 10), ...q })) out.push(...batch.events.map((e) => e.id));
      return out;
    };
    assert.equal(await ids({}), ['e3', 'e2', 'e1']);
    assert.equal(await ids({ order: 'asc' }), ['e1', 'e2', 'e3']);
    assert.equal(await ids({ matchers: [m('source', '=', 'kubernetes')] }), ['e3', 'e1']);
    assert.equal(await ids({ scope: [[m('source', '=', 'webhook')]] }), ['e2']);
    let pos = '';
    for await (const batch of b.events.scan({ startNs: ns(T0 - 1), endNs: ns(T0 + 10) })) pos = batch.position;
    assert.equal(await ids({ after: pos }), []);
    const [e] = (await (async () => { for await (const x of b.events.scan({ startNs: ns(T0 - 1), endNs: ns(T0 + 10), order: 'asc' })) return x.events; return []; })());
    assert.equal(e!.attributes, { a: 1 });
  });

  s('traces: by id (case-insensitive), search by time/attributes, scope', async () => {
    const { b } = ctx;
    await b.traces.append([span('aa01', 's1', T0, 'api', { 'http.method': 'GET' }), span('aa01', 's2', T0 + 1, 'db'), span('bb02', 's3', T0 + 100_000, 'web')]);
    const t = await b.traces.getTrace('AA01');
    assert.equal(t.map((x) => x.spanId).sort(), ['s1', 's2']);
    assert.is(t[0]!.startTimeUnixNano, ns(T0));
    assert.equal((await b.traces.getTrace('aa01', [[m('service', '=', 'db')]])).map((x) => x.spanId), ['s2']);
    assert.equal(await b.traces.getTrace('ffff'), []);
    const found: string[][] = [];
    for await (const g of b.traces.search({ startNs: ns(T0 - 1), endNs: ns(T0 + 50) })) found.push(g.map((x) => x.spanId).sort());
    assert.equal(found, [['s1', 's2']]);
    const byAttr: string[] = [];
    for await (const g of b.traces.search({ startNs: ns(T0 - 1), endNs: ns(T0 + 200_000), attributes: { 'service.name': 'web' } })) byAttr.push(g[0]!.traceId);
    // Attribute equality is a prefilter: a backend may return more, never less.
    assert.ok(byAttr.includes('bb02'));
    // Status and duration prefilters (optional for backends): never fewer, each trace once.
    const pre: string[] = [];
    const q = { startNs: ns(T0 - 1), endNs: ns(T0 + 200_000), statuses: ['ok' as const], minDurationNs: 5_000_000n, maxDurationNs: 10_000_000n };
    for await (const g of b.traces.search(q)) pre.push(g[0]!.traceId);
    assert.ok(pre.includes('aa01') && pre.includes('bb02'));
    assert.is(new Set(pre).size, pre.length);
  });

  s('meta: transactions are atomic and serialized', async () => {
    const { b } = ctx;
    await b.meta.transaction((tx) => {
      tx.put('teams', 't1', { name: 'One', members: ['a@x'] });
      tx.put('teams', 't2', { name: 'Two' });
    });
    assert.equal(await b.meta.get('teams', 't1'), { name: 'One', members: ['a@x'] });
    // A throwing transaction writes nothing.
    try {
      await b.meta.transaction((tx) => {
        tx.put('teams', 't3', { name: 'Three' });
        throw new Error('boom');
      });
      assert.unreachable();
    } catch (e) {
      assert.is((e as Error).message, 'boom');
    }
    assert.is(await b.meta.get('teams', 't3'), undefined);
    // Read-your-writes inside a transaction; delete.
    const r = await b.meta.transaction((tx) => {
      tx.delete('teams', 't2');
      tx.put('teams', 't4', 4);
      return tx.list('teams').map(([k]) => k).sort();
    });
    assert.equal(r, ['t1', 't4']);
    // Concurrent increments are serialized.
    await b.meta.transaction((tx) => tx.put('c', 'n', 0));
    await Promise.all(Array.from({ length: 50 }, () => b.meta.transaction((tx) => tx.put('c', 'n', (tx.get('c', 'n') as number) + 1))));
    assert.is(await b.meta.get('c', 'n'), 50);
    // Returned values are copies.
    const v = (await b.meta.get('teams', 't1')) as { name: string };
    v.name = 'mutated';
    assert.equal(((await b.meta.get('teams', 't1')) as { name: string }).name, 'One');
  });

  s('concurrent writers and readers', async () => {
    const { b } = ctx;
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 25; i++) {
        await b.metrics.append([{ labels: { __name__: 'conc', w: String(w) }, samples: [{ t: T0 + i * 1000, v: i }] }]);
        await b.logs.append([log(T0 + i, `w${w}-${i}`, { service: `s${w}` })]);
      }
    });
    const readers = Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 10; i++) {
        for await (const x of b.metrics.select([m('__name__', '=', 'conc')], 0, T0 + 1e6)) {
          for (let k = 1; k < x.timestamps.length; k++) assert.ok(x.timestamps[k]! > x.timestamps[k - 1]!);
        }
        await scanAll(b, { startNs: 0n, endNs: ns(T0 + 1e6) });
        await new Promise((r) => setImmediate(r));
      }
    });
    await Promise.all([...writers, ...readers]);
    const sel = await collect(b, [m('__name__', '=', 'conc')], 0, T0 + 1e6);
    assert.is(sel.length, 8);
    for (const x of sel) assert.equal([...x.values], Array.from({ length: 25 }, (_, i) => i));
    assert.is((await scanAll(b, { startNs: 0n, endNs: ns(T0 + 1e6) })).records.length, 200);
    assert.is(b.logs.lastSeq(), 200);
  });

  s('persistence: everything survives close and reopen', async () => {
    const { h } = ctx;
    if (!h.persistent) return;
    let b = ctx.b;
    await seedMetrics(b);
    await b.metrics.append([{ labels: { __name__: 'stale_test' }, samples: [{ t: T0, v: STALE_NAN }, { t: T0 + 1, v: 0, h: hist }] }]);
    await b.metrics.appendMetadata([{ metric: 'up', type: 'gauge', help: 'Up.', unit: '' }]);
    await b.logs.append([log(T0, 'persisted', { service: 'api' }, { k: 1 })]);
    await b.traces.append([span('cc03', 's9', T0, 'api')]);
    await b.events.append([{ id: 'ev', timestampNs: ns(T0), title: 't', text: 'x', labels: { source: 'bus' }, attributes: {} }]);
    await b.meta.transaction((tx) => tx.put('policies', 'p1', { rules: [1, 2] }));
    for (let round = 0; round < 2; round++) {
      await b.close();
      b = ctx.b = await h.open();
      assert.is((await collect(b, [m('__name__', '=', 'up')], T0, T0 + 60_000)).length, 6);
      const [st] = await collect(b, [m('__name__', '=', 'stale_test')], 0, T0 + 10);
      assert.ok(isStaleMarker(st!.values[0]!));
      assert.equal(st!.histograms?.[1], hist);
      assert.is((await b.metrics.metadata('up')).get('up')?.[0]?.help, 'Up.');
      const logs = await scanAll(b, { startNs: ns(T0), endNs: ns(T0 + 1) });
      assert.equal(logs.records.map((r) => [r.message, r.facets]), [['persisted', { k: 1 }]]);
      assert.is(b.logs.lastSeq(), 1 + round);
      assert.is((await b.traces.getTrace('cc03')).length, 1);
      let evs = 0;
      for await (const x of b.events.scan({ startNs: 0n, endNs: ns(T0 + 1) })) evs += x.events.length;
      assert.is(evs, 1);
      assert.equal(await b.meta.get('policies', 'p1'), { rules: [1, 2] });
      await b.logs.append([log(T0 - 1, `after-reopen-${round}`, { service: 'api' })]);
      assert.is(b.logs.lastSeq(), 2 + round);
    }
  });

  s('retention deletes expired data and keeps recent data', async () => {
    const { h, b } = ctx;
    if (!h.retention) return;
    const now = T0 + 30 * 86_400_000;
    await b.metrics.append([{ labels: { __name__: 'ret' }, samples: [{ t: T0, v: 1 }, { t: T0 + 1000, v: 2 }] }]);
    await b.logs.append([log(T0, 'old', { service: 'a' })]);
    await b.events.append([{ id: 'old', timestampNs: ns(T0), title: '', text: '', labels: {}, attributes: {} }]);
    await b.traces.append([span('dd04', 'x', T0, 'api')]);
    await h.retention(b, now, true);
    await b.metrics.append([{ labels: { __name__: 'ret' }, samples: [{ t: now - 1000, v: 3 }] }]);
    await b.logs.append([log(now - 1000, 'new', { service: 'a' })]);
    await b.events.append([{ id: 'new', timestampNs: ns(now - 1000), title: '', text: '', labels: {}, attributes: {} }]);
    await h.retention(b, now, true);
    const [x] = await collect(b, [m('__name__', '=', 'ret')], 0, now);
    assert.equal([...x!.values], [3]);
    assert.equal((await scanAll(b, { startNs: 0n, endNs: ns(now) })).records.map((r) => r.message), ['new']);
    const evs: string[] = [];
    for await (const e of b.events.scan({ startNs: 0n, endNs: ns(now) })) evs.push(...e.events.map((z) => z.id));
    assert.equal(evs, ['new']);
    assert.equal(await b.traces.getTrace('dd04'), []);
    assert.is((await b.metrics.series([[m('__name__', '=', 'ret')]], 0, T0 + 10_000)).length, 0);
  });

  s.run();
}
