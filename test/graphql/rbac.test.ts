/**
 * GRAPHQL.md "RBAC": log and event operations, streams included, only ever see and count
 * records inside the principal's scope. First with a ScopeResolver given by a test plugin,
 * then through real RBAC policies (plugins/rbac).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import type { Principal } from '../../kernel/auth.js';
import type { SignalStream } from '../../kernel/extension-points.js';
import type { MatcherAlternatives } from '../../kernel/matchers.js';
import { definePlugin } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import { ADMIN_TOKEN, EDITOR_TOKEN, VIEWER_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';
import { at, gql, ingestExampleData, ingestExampleEvents, recordNo, type GqlResponse } from './helpers.js';

/** reader: service="api" logs, webhook events; editor: nothing; admin: everything. */
const testScopes = definePlugin({
  name: 'test-scopes',
  after: ['rbac', 'teams'],
  register(ctx) {
    ctx.provide(Tokens.ScopeResolver, {
      async scopeFor(p: Principal, stream: SignalStream): Promise<MatcherAlternatives | undefined> {
        if (p.name === 'reader') {
          if (stream === 'logs') return [[{ name: 'service', op: '=', value: 'api' }]];
          if (stream === 'events') return [[{ name: 'source', op: '=', value: 'webhook' }]];
        }
        if (p.name === 'editor') return [];
        return undefined;
      },
    });
  },
});

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ pluginOptions: { 'api-graphql': { liveIntervalMs: 200 } } }, { extraPlugins: [testScopes] });
  await ingestExampleData(srv);
  await ingestExampleEvents(srv);
});
test.after(async () => srv.stop());

const RANGE = { s: at('10:00:00'), e: at('10:05:00') };
const TABLE = `query T($q: String!, $s: Time!, $e: Time!) { getLogMetricsResultWithSvcQl(query: $q, startTs: $s, endTs: $e) { TableResult } }`;
const LOGS = `query L($q: String!, $s: Time!, $e: Time!, $limit: Int, $cursor: String) {
  getLogsWithSvcQl(query: $q, startTs: $s, endTs: $e, limit: $limit, cursor: $cursor) { logs { timestamp message } cursor } }`;
const table = async (q: string, token: string) => {
  const r = await gql(srv, TABLE, { q, ...RANGE }, token);
  assert.is(r.errors, undefined, JSON.stringify(r.errors));
  return r.data!.getLogMetricsResultWithSvcQl.TableResult;
};

test('scoped to service="api": never sees nor counts other services', async () => {
  assert.equal(await table('* | count', VIEWER_TOKEN), [[6]]);
  assert.equal(await table('* | count by service', VIEWER_TOKEN), [['api', 6]]);
  assert.equal(await table('service=billing | count', VIEWER_TOKEN), [[0]]);
  assert.equal(await table('* | count_distinct(host) as h', VIEWER_TOKEN), [[2]]);
  assert.equal(await table('* | top 5 level', VIEWER_TOKEN), [['info', 3], ['error', 2], ['debug', 1]]);
  const rows = await table('*', VIEWER_TOKEN);
  assert.equal(rows.map((r: string[]) => recordNo({ timestamp: r[0]!, message: r[1]! })), [11, 9, 6, 3, 2, 1]);
  // The unrestricted admin sees all twelve.
  assert.equal(await table('* | count', ADMIN_TOKEN), [[12]]);
});

test('getLogsWithSvcQl pages only in-scope records; empty scope gives nothing, no error', async () => {
  const seen: number[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 10; i++) {
    const r: GqlResponse<any> = await gql(srv, LOGS, { q: '*', ...RANGE, limit: 4, cursor }, VIEWER_TOKEN);
    assert.is(r.errors, undefined);
    const page = r.data!.getLogsWithSvcQl as { logs: { timestamp: string; message: string }[]; cursor: string | null };
    seen.push(...page.logs.map(recordNo));
    cursor = page.cursor;
    if (!cursor) break;
  }
  assert.equal(seen, [11, 9, 6, 3, 2, 1]);
  const none = await gql(srv, LOGS, { q: '*', ...RANGE }, EDITOR_TOKEN);
  assert.equal(none.data, { getLogsWithSvcQl: { logs: [], cursor: null } });
  assert.equal(await table('* | count', EDITOR_TOKEN), [[0]]);
});

test('events: scoped reader sees and counts only webhook events', async () => {
  const r = await gql(
    srv,
    `query($s: Time!, $e: Time!) { getEvents(startTs: $s, endTs: $e) { events { id } } getEventFacetValues(facet: "source", startTs: $s, endTs: $e) { value count } }`,
    RANGE,
    VIEWER_TOKEN,
  );
  assert.is(r.errors, undefined, JSON.stringify(r.errors));
  assert.equal(r.data!.getEvents.events, [{ id: 'ev-3' }]);
  assert.equal(r.data!.getEventFacetValues, [{ value: 'webhook', count: 1 }]);
});

test('streams: paged and live subscriptions stay inside the scope', async () => {
  const client = createClient({
    url: srv.url.replace(/^http/, 'ws') + '/query',
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: { Authorization: `Bearer ${VIEWER_TOKEN}` },
  });
  const paged: string[] = [];
  await new Promise<void>((resolve, reject) => {
    client.subscribe(
      {
        query: `subscription($s: Time, $e: Time) { getLogsWithSvcQlStream(query: "*", startTs: $s, endTs: $e, limit: 4) { logs { message labels } cursor } }`,
        variables: RANGE,
      },
      {
        next: (v: any) => paged.push(...v.data.getLogsWithSvcQlStream.logs.map((l: { labels: { service: string } }) => l.labels.service)),
        error: reject,
        complete: resolve,
      },
    );
  });
  assert.equal(paged, ['api', 'api', 'api', 'api', 'api', 'api']);
  const live: string[] = [];
  const stop = client.subscribe(
    { query: `subscription { getLogsWithSvcQlStream(query: "*", live: true) { logs { message labels } } }` },
    { next: (v: any) => live.push(...v.data.getLogsWithSvcQlStream.logs.map((l: { message: string }) => l.message)), error: () => undefined, complete: () => undefined },
  );
  await new Promise((r) => setTimeout(r, 300));
  const now = BigInt(Date.now()) * 1_000_000n;
  await srv.lookout.kernel.get(Tokens.Ingest).write({
    logs: [
      { timestampNs: now, message: 'billing secret', labels: { svc_stream: 'logs', service: 'billing' }, facets: {} },
      { timestampNs: now, message: 'api visible', labels: { svc_stream: 'logs', service: 'api' }, facets: {} },
    ],
  });
  const end = Date.now() + 5000;
  while (live.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(live, ['api visible']);
  stop();
  await client.dispose();
});

test('through real RBAC policies (plugins/rbac): a policy service="api" on logs', async () => {
  const real = await startTestServer({ rbac: { enabled: true, defaultPolicy: 'deny' } });
  try {
    await ingestExampleData(real);
    await ingestExampleEvents(real);
    const call = (method: string, path: string, body: unknown) =>
      real.fetch(path, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const p = await call('POST', '/rbac/policies', {
      name: 'api logs',
      scope: {
        type: 'custom',
        filters: [
          { key: 'svc_stream', op: '=', value: 'logs' },
          { key: 'service', op: '=', value: 'api' },
        ],
      },
    });
    assert.is(p.status, 201, await p.text());
    const m = await call('POST', `/rbac/policies/${encodeURIComponent('api logs')}/mappings`, { entity_type: 'service_account', entity_name: 'reader' });
    assert.ok(m.status === 201 || m.status === 200, await m.text());
    const q = async (query: string, token: string) => {
      const r = await gql(real, TABLE, { q: query, ...RANGE }, token);
      assert.is(r.errors, undefined, JSON.stringify(r.errors));
      return r.data!.getLogMetricsResultWithSvcQl.TableResult;
    };
    assert.equal(await q('* | count by service', VIEWER_TOKEN), [['api', 6]]);
    assert.equal(await q('* | count', ADMIN_TOKEN), [[12]]);
    // No policy grants the editor anything and the default policy is deny.
    assert.equal(await q('* | count', EDITOR_TOKEN), [[0]]);
    // Events are not granted to the reader: nothing, no error.
    const ev = await gql(real, `query($s: Time!, $e: Time!) { getEvents(startTs: $s, endTs: $e) { events { id } } }`, RANGE, VIEWER_TOKEN);
    assert.equal(ev.data, { getEvents: { events: [] } });
  } finally {
    await real.stop();
  }
});

test.run();
