/**
 * Segment merging on the real server: logs, spans and events arrive over HTTP in many small
 * requests with a head flush after each, the background merge runs, and every HTTP answer (SvcQL
 * counts and filters over GraphQL, log pages, trace by id and TraceQL search through the Tempo
 * API, events over GraphQL) is the same before the merge, after it and after a restart.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { EmbeddedBackend } from '../../backends/embedded/index.js';
import { Tokens } from '../../kernel/services.js';
import { startTestServer, tempDir, TEST_BACKEND, type TestServer } from '../helpers/server.js';

const BASE_S = 1763805600; // 2025-11-22T10:00:00Z
const FLUSHES = 30;
const TEMPO = '/dashboards/api/datasources/proxy/uid/lookout-traces';
const RANGE = { s: '2025-11-22T09:00:00Z', e: '2025-11-22T12:00:00Z' };
const SERVICES = ['api', 'web', 'db'];
const traceId = (k: number) => (0xabc000 + (k % 23)).toString(16).padStart(32, '0');

async function post(srv: TestServer, path: string, body: unknown): Promise<void> {
  const res = await srv.fetch(path, { method: 'POST', token: null, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
}

const attr = (key: string, v: string | number) => ({ key, value: typeof v === 'number' ? { intValue: String(v) } : { stringValue: v } });

async function ingestRound(srv: TestServer, f: number): Promise<void> {
  await post(srv, '/ingester/otlp/v1/logs', {
    resourceLogs: SERVICES.map((svc, si) => ({
      resource: { attributes: [attr('service.name', svc)] },
      scopeLogs: [
        {
          logRecords: Array.from({ length: 10 }, (_, i) => {
            const k = f * 30 + si * 10 + i;
            return {
              timeUnixNano: String(BigInt(BASE_S) * 1_000_000_000n + BigInt(k) * 1_000_000_000n),
              severityText: k % 9 === 0 ? 'error' : 'info',
              body: { stringValue: `request ${k} ${k % 9 === 0 ? 'failed: upstream timeout' : 'ok'}` },
              attributes: [attr('status', k % 9 === 0 ? 500 : 200), attr('round', f)],
            };
          }),
        },
      ],
    })),
  });
  await post(srv, '/ingester/otlp/v1/traces', {
    resourceSpans: SERVICES.map((svc, si) => ({
      resource: { attributes: [attr('service.name', svc)] },
      scopeSpans: [
        {
          scope: { name: 'merge-test' },
          spans: Array.from({ length: 4 }, (_, i) => {
            const k = f * 12 + si * 4 + i;
            const start = BigInt(BASE_S) * 1_000_000_000n + BigInt(k) * 700_000_000n;
            return {
              traceId: traceId(k),
              spanId: k.toString(16).padStart(16, '0'),
              name: `GET /item/${k % 4}`,
              kind: 2,
              startTimeUnixNano: String(start),
              endTimeUnixNano: String(start + BigInt(1 + (k % 7)) * 10_000_000n),
              attributes: [attr('http.status_code', k % 5 === 0 ? 500 : 200)],
              status: { code: k % 5 === 0 ? 2 : 1 },
            };
          }),
        },
      ],
    })),
  });
  await post(
    srv,
    '/ingester/bus_events',
    Array.from({ length: 5 }, (_, i) => {
      const k = f * 5 + i;
      return {
        id: `ev-${k}`,
        source: k % 2 ? 'aws.ec2' : 'aws.s3',
        'detail-type': 'State Change',
        time: new Date((BASE_S + k * 3) * 1000).toISOString(),
        region: `r${k % 3}`,
        detail: { message: `change ${k}` },
      };
    }),
  );
}

function backend(srv: TestServer): EmbeddedBackend {
  return srv.lookout.kernel.get(Tokens.Storage) as unknown as EmbeddedBackend;
}

async function flushHeads(b: EmbeddedBackend): Promise<void> {
  await b.logs.serial(() => b.logs.flushHead());
  await b.traces.wal.serial(() => b.traces.flushHead());
  await b.events.wal.serial(() => b.events.flushHead());
}

async function gql(srv: TestServer, query: string, variables: Record<string, unknown>): Promise<any> {
  const res = await srv.fetch('/query', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  const body = (await res.json()) as { data?: any; errors?: unknown[] };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

const TABLE = `query($q: String!, $s: Time!, $e: Time!) { getLogMetricsResultWithSvcQl(query: $q, startTs: $s, endTs: $e) { ColumnHeaders TableResult } }`;
const LOGS = `query($q: String!, $s: Time!, $e: Time!, $limit: Int, $cursor: String) { getLogsWithSvcQl(query: $q, startTs: $s, endTs: $e, limit: $limit, cursor: $cursor) { logs { timestamp message labels facets } cursor } }`;
const EVENTS = `query($q: String, $s: Time!, $e: Time!, $cursor: String) { getEvents(query: $q, startTs: $s, endTs: $e, limit: 40, cursor: $cursor) { events { id timestamp title labels } cursor } }`;

/** Every answer the HTTP APIs give over the data, as one comparable value. */
async function answers(srv: TestServer): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const q of ['* | count', '* | count by service', '@status=500 | count by service', '"timeout" | count', '* | timeslice 1m | count by _timeslice', 'service=api "request 1" | limit 7']) {
    out[q] = (await gql(srv, TABLE, { q, ...RANGE })).getLogMetricsResultWithSvcQl;
  }
  // Every raw record, paged newest first through cursors.
  const pages: unknown[] = [];
  let cursor: string | null = null;
  do {
    const page: { logs: unknown[]; cursor: string | null } = (await gql(srv, LOGS, { q: '*', ...RANGE, limit: 100, cursor })).getLogsWithSvcQl;
    pages.push(...page.logs);
    cursor = page.cursor;
  } while (cursor);
  out.pages = pages;
  out.filtered = (await gql(srv, LOGS, { q: 'service=db @status=500', ...RANGE, limit: 1000 })).getLogsWithSvcQl.logs;
  const get = async (path: string) => {
    const res = await srv.fetch(TEMPO + path);
    assert.is(res.status, 200, path);
    return res.json();
  };
  for (let k = 0; k < 23; k++) {
    const t = (await get(`/api/traces/${traceId(k)}`)) as { batches?: unknown[] };
    out[`trace ${k}`] = JSON.stringify(t);
  }
  const range = `start=${BASE_S - 60}&end=${BASE_S + 3600}`;
  const search = async (q: string) => {
    const r = (await get(`/api/search?q=${encodeURIComponent(q)}&${range}&limit=100`)) as { traces: { traceID: string }[] };
    return r.traces.map((t) => JSON.stringify(t)).sort();
  };
  out.searchAll = await search('{ }');
  out.searchErr = await search('{ status = error && resource.service.name = "db" }');
  out.searchName = await search('{ name = "GET /item/3" && span.http.status_code >= 500 }');
  const events: unknown[] = [];
  cursor = null;
  do {
    const page: { events: unknown[]; cursor: string | null } = (await gql(srv, EVENTS, { q: '*', ...RANGE, cursor })).getEvents;
    events.push(...page.events);
    cursor = page.cursor;
  } while (cursor);
  out.events = events;
  out.eventsFiltered = (await gql(srv, EVENTS, { q: 'event_source=aws.ec2 region!=r1', ...RANGE })).getEvents.events;
  return out;
}

function segmentFiles(dataDir: string, sig: string): string[] {
  return readdirSync(join(dataDir, 'embedded', sig, 'segments'));
}

test('small segments written over HTTP merge in the background; every answer is unchanged, also after a restart', async () => {
  if (TEST_BACKEND !== 'embedded') {
    console.log(`SKIP: segment merging is specific to the embedded backend (LOOKOUT_TEST_BACKEND=${TEST_BACKEND})`);
    return;
  }
  const dataDir = tempDir();
  // The example data is from 2025: keep it whatever the date (retention would drop it first).
  const retention = { metrics: '0', logs: '0', traces: '0', events: '0' };
  const config = { storage: { backend: 'embedded', retention, merge: { window: '1d', maxSegmentBytes: 64 << 20 } } };
  let srv = await startTestServer(config, { dataDir });
  try {
    let b = backend(srv);
    for (let f = 0; f < FLUSHES; f++) {
      await ingestRound(srv, f);
      await flushHeads(b);
    }
    assert.is(b.logs.stats().segments, FLUSHES);
    assert.is(b.traces.stats().segments, FLUSHES);
    assert.is(b.events.stats().segments, FLUSHES);
    const before = await answers(srv);
    assert.equal((before['* | count'] as { TableResult: unknown[][] }).TableResult, [[FLUSHES * 30]]);
    assert.is((before.pages as unknown[]).length, FLUSHES * 30);
    assert.is((before.events as unknown[]).length, FLUSHES * 5);
    // The comparisons below are over non-trivial answers.
    for (const k of ['filtered', 'searchAll', 'searchErr', 'searchName', 'eventsFiltered']) assert.ok((before[k] as unknown[]).length > 0, k);
    assert.ok((before['trace 5'] as string).length > 500);

    // The pass the server runs every minute: merges happen with the configured policy.
    const rep = await b.maintenance({ flush: false });
    assert.ok(rep.mergedSegments >= 3, `merges: ${rep.mergedSegments}`);
    assert.is(b.logs.stats().segments, 1);
    assert.is(b.traces.stats().segments, 1);
    assert.is(b.events.stats().segments, 1);
    for (const sig of ['logs', 'traces', 'events']) assert.is(segmentFiles(dataDir, sig).length, 1, sig);
    const after = await answers(srv);
    for (const [k, v] of Object.entries(before)) assert.equal(after[k], v, k);

    await srv.stop({ keepData: true });
    srv = await startTestServer(config, { dataDir });
    b = backend(srv);
    assert.is(b.logs.stats().segments, 1);
    const restarted = await answers(srv);
    for (const [k, v] of Object.entries(before)) assert.equal(restarted[k], v, k);
  } finally {
    await srv.stop();
  }
});

test('storage.merge is validated strictly', async () => {
  const { loadConfig } = await import('../../kernel/config.js');
  assert.throws(() => loadConfig({ overrides: { storage: { merge: { window: 'soon' } } }, env: {} }), /merge/);
  assert.throws(() => loadConfig({ overrides: { storage: { merge: { maxSegmentBytes: 12 } } }, env: {} }), /merge/);
  assert.throws(() => loadConfig({ overrides: { storage: { merge: { enabled: true } } }, env: {} }), /merge/);
  const ok = loadConfig({ overrides: { storage: { merge: { window: '0' } } }, env: {} });
  assert.is(ok.storage.merge?.window, '0');
  assert.is(ok.storage.merge?.maxSegmentBytes, 256 * 1024 * 1024);
});

test.run();
