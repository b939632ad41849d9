/**
 * getLogsWithSvcQlStream over graphql-transport-ws at /query, with the graphql-ws client.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import { Tokens } from '../../kernel/services.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ pluginOptions: { 'api-graphql': { liveIntervalMs: 200 } } });
});
test.after(async () => srv.stop());

const wsUrl = () => srv.url.replace(/^http/, 'ws') + '/query';

function client(token: string | null, extra: { onClose?: (code: number) => void } = {}): Client {
  return createClient({
    url: wsUrl(),
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: true,
    connectionParams: token === null ? {} : { Authorization: `Bearer ${token}` },
    on: { closed: (e) => extra.onClose?.((e as { code: number }).code) },
  });
}

interface Collected {
  next: unknown[];
  error?: unknown;
  completed: boolean;
}

function subscribe(c: Client, query: string, variables: Record<string, unknown>): { result: Collected; done: Promise<void>; stop: () => void } {
  const result: Collected = { next: [], completed: false };
  let stop = () => undefined as void;
  const done = new Promise<void>((resolve) => {
    stop = c.subscribe(
      { query, variables },
      {
        next: (v) => void result.next.push(v),
        error: (e) => {
          result.error = e;
          resolve();
        },
        complete: () => {
          result.completed = true;
          resolve();
        },
      },
    );
  });
  return { result, done, stop: () => stop() };
}

const STREAM = `subscription S($q: String!, $s: Time, $e: Time, $limit: Int, $live: Boolean) {
  getLogsWithSvcQlStream(query: $q, startTs: $s, endTs: $e, limit: $limit, live: $live) { logs { timestamp message labels facets } cursor }
}`;

const waitFor = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

test('live: a line ingested after subscribing arrives; client complete ends it', async () => {
  const c = client(ADMIN_TOKEN);
  const sub = subscribe(c, STREAM, { q: '*', live: true, limit: 10 });
  // The tail starts where the log was when the server took the subscription, which the
  // client cannot observe: ingest until a line arrives.
  let now = 0n;
  const end = Date.now() + 5000;
  while (sub.result.next.length === 0 && Date.now() < end) {
    now = BigInt(Date.now()) * 1_000_000n;
    await srv.lookout.kernel.get(Tokens.Ingest).write({
      logs: [{ timestampNs: now, message: 'hello live tail', labels: { svc_stream: 'logs', service: 'api' }, facets: { n: 1 } }],
    });
    await waitFor(() => sub.result.next.length > 0, 300).catch(() => undefined);
  }
  await waitFor(() => sub.result.next.length > 0);
  const payload = sub.result.next[0] as { data: { getLogsWithSvcQlStream: { logs: { message: string; timestamp: string; facets: unknown }[]; cursor: null } } };
  assert.equal(payload.data.getLogsWithSvcQlStream.cursor, null);
  assert.ok(payload.data.getLogsWithSvcQlStream.logs.length >= 1);
  assert.equal(payload.data.getLogsWithSvcQlStream.logs[0]!.message, 'hello live tail');
  assert.ok(BigInt(payload.data.getLogsWithSvcQlStream.logs[0]!.timestamp) <= now);
  assert.equal(payload.data.getLogsWithSvcQlStream.logs[0]!.facets, { n: 1 });
  sub.stop();
  await c.dispose();
});

test('live: older-than-startTs records are not sent; at most one page per interval of at most limit records', async () => {
  const c = client(ADMIN_TOKEN);
  const startMs = Date.now();
  const sub = subscribe(c, STREAM, { q: '*', live: true, limit: 2, s: new Date(startMs).toISOString() });
  await new Promise((r) => setTimeout(r, 300));
  const ingest = srv.lookout.kernel.get(Tokens.Ingest);
  const t = (ms: number) => BigInt(ms) * 1_000_000n;
  await ingest.write({
    logs: [
      { timestampNs: t(startMs - 60_000), message: 'old', labels: { svc_stream: 'logs' }, facets: {} },
      ...[1, 2, 3, 4, 5].map((i) => ({ timestampNs: t(startMs + i), message: `new ${i}`, labels: { svc_stream: 'logs' }, facets: {} })),
    ],
  });
  await waitFor(() => sub.result.next.flatMap((p: any) => p.data.getLogsWithSvcQlStream.logs).length >= 5);
  const pages = sub.result.next.map((p: any) => p.data.getLogsWithSvcQlStream.logs.map((l: { message: string }) => l.message));
  assert.equal(pages.flat(), ['new 1', 'new 2', 'new 3', 'new 4', 'new 5']);
  for (const p of pages) assert.ok(p.length >= 1 && p.length <= 2);
  sub.stop();
  await c.dispose();
});

test('paged (live: false): one next per getLogsWithSvcQl page, then complete; at most 100 pages', async () => {
  const ingest = srv.lookout.kernel.get(Tokens.Ingest);
  // 120 records in 2020, away from the live tests' records.
  const base = 1577836800n * 1_000_000_000n;
  await ingest.write({
    logs: Array.from({ length: 120 }, (_, i) => ({
      timestampNs: base + BigInt(i) * 1_000_000_000n,
      message: `paged ${i}`,
      labels: { svc_stream: 'logs', service: i % 2 ? 'odd' : 'even' },
      facets: {},
    })),
  });
  const range = { s: '2020-01-01T00:00:00Z', e: '2020-01-02T00:00:00Z' };
  const c = client(ADMIN_TOKEN);
  const few = subscribe(c, STREAM, { q: 'service=even', ...range, limit: 25 });
  await few.done;
  assert.ok(few.result.completed);
  const pages = few.result.next.map((p: any) => p.data.getLogsWithSvcQlStream);
  assert.equal(pages.map((p: { logs: unknown[] }) => p.logs.length), [25, 25, 10]);
  assert.is(pages[2].cursor, null);
  assert.is(pages[0].logs[0].message, 'paged 118');
  // limit 1 over 120 records: stops after 100 pages, the last cursor continues with getLogsWithSvcQl.
  const many = subscribe(c, STREAM, { q: '*', ...range, limit: 1 });
  await many.done;
  assert.ok(many.result.completed);
  assert.is(many.result.next.length, 100);
  const last = (many.result.next[99] as any).data.getLogsWithSvcQlStream;
  assert.is(last.logs[0].message, 'paged 20');
  assert.type(last.cursor, 'string');
  const rest = await fetch(srv.url + '/query', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({
      query: 'query($c: String, $s: Time!, $e: Time!) { getLogsWithSvcQl(query: "*", startTs: $s, endTs: $e, limit: 1000, cursor: $c) { logs { message } cursor } }',
      variables: { c: last.cursor, ...range },
    }),
  });
  const body = (await rest.json()) as any;
  assert.is(body.data.getLogsWithSvcQl.logs.length, 20);
  assert.is(body.data.getLogsWithSvcQl.logs[0].message, 'paged 19');
  // An empty range is one empty page, then complete.
  const empty = subscribe(c, STREAM, { q: '*', s: '2019-01-01T00:00:00Z', e: '2019-01-02T00:00:00Z' });
  await empty.done;
  assert.equal(empty.result.next, [{ data: { getLogsWithSvcQlStream: { logs: [], cursor: null } } }]);
  // SvcQL errors come as an error message with the position.
  const bad = subscribe(c, STREAM, { q: 'service=', ...range });
  await bad.done;
  assert.equal(bad.result.error, [
    {
      message: 'unexpected end of query at 1:9, expected value',
      path: ['getLogsWithSvcQlStream'],
      extensions: { code: 'SVCQL_SYNTAX_ERROR', component: 'logs', position: { line: 1, column: 9 } },
    },
  ]);
  await c.dispose();
});

test('live: the query filters the tail (search and where stages)', async () => {
  const c = client(ADMIN_TOKEN);
  const sub = subscribe(c, STREAM, { q: 'service=api "boom" | where @code >= 500', live: true });
  await new Promise((r) => setTimeout(r, 300));
  const now = BigInt(Date.now()) * 1_000_000n;
  await srv.lookout.kernel.get(Tokens.Ingest).write({
    logs: [
      { timestampNs: now, message: 'boom 1', labels: { svc_stream: 'logs', service: 'api' }, facets: { code: 500 } },
      { timestampNs: now, message: 'boom 2', labels: { svc_stream: 'logs', service: 'web' }, facets: { code: 500 } },
      { timestampNs: now, message: 'boom 3', labels: { svc_stream: 'logs', service: 'api' }, facets: { code: 200 } },
      { timestampNs: now, message: 'quiet', labels: { svc_stream: 'logs', service: 'api' }, facets: { code: 503 } },
      { timestampNs: now, message: 'BOOM 5', labels: { svc_stream: 'logs', service: 'api' }, facets: { code: 503 } },
    ],
  });
  await waitFor(() => sub.result.next.length > 0);
  await new Promise((r) => setTimeout(r, 300));
  const got = sub.result.next.flatMap((p: any) => p.data.getLogsWithSvcQlStream.logs.map((l: { message: string }) => l.message));
  assert.equal(got, ['boom 1', 'BOOM 5']);
  sub.stop();
  await c.dispose();
});

test('bad token: connection closed with 4403', async () => {
  let code = 0;
  const c = client('wrong-token', { onClose: (x) => (code = x) });
  const sub = subscribe(c, STREAM, { q: '*', live: true });
  await sub.done;
  await waitFor(() => code !== 0);
  assert.is(code, 4403);
  await c.dispose();
  let code2 = 0;
  const c2 = client(null, { onClose: (x) => (code2 = x) });
  await subscribe(c2, STREAM, { q: '*', live: true }).done;
  await waitFor(() => code2 !== 0);
  assert.is(code2, 4403);
  await c2.dispose();
});

test('errors before the first page: an error message (endTs with live, bad limit, missing range)', async () => {
  const c = client(ADMIN_TOKEN);
  const cases: [Record<string, unknown>, string][] = [
    [{ q: '*', live: true, e: '2025-11-22T10:05:00Z' }, 'BAD_USER_INPUT'],
    [{ q: '*', live: true, limit: 5000 }, 'BAD_USER_INPUT'],
    [{ q: '*', live: false }, 'BAD_USER_INPUT'],
    [{ q: '*', live: false, s: 'yesterday', e: '2025-11-22T10:05:00Z' }, 'BAD_USER_INPUT'],
    [{ q: 'x'.repeat(8193), live: true }, 'QUERY_TOO_LONG'],
  ];
  for (const [vars, code] of cases) {
    const sub = subscribe(c, STREAM, vars);
    await sub.done;
    assert.ok(Array.isArray(sub.result.error), `expected an error message for ${JSON.stringify(vars).slice(0, 80)}: ${JSON.stringify(sub.result)}`);
    const [err] = sub.result.error as { message: string; path: string[]; extensions: { code: string; component: string } }[];
    assert.equal(err!.extensions, { code, component: 'logs' });
    assert.equal(err!.path, ['getLogsWithSvcQlStream']);
    assert.equal(sub.result.next, []);
  }
  const bad = subscribe(c, 'subscription { nope }', {});
  await bad.done;
  assert.equal((bad.result.error as { extensions: { code: string } }[])[0]!.extensions.code, 'GRAPHQL_VALIDATION_FAILED');
  await c.dispose();
});

test('queries also run over the socket', async () => {
  const c = client(ADMIN_TOKEN);
  const sub = subscribe(c, '{ getFavoriteFacetGroups }', {});
  await sub.done;
  assert.equal(sub.result.next, [{ data: { getFavoriteFacetGroups: [] } }]);
  await c.dispose();
});

test('server stop closes open subscriptions promptly', async () => {
  const other = await startTestServer({});
  const c = createClient({
    url: other.url.replace(/^http/, 'ws') + '/query',
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: { Authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  const sub = subscribe(c, STREAM, { q: '*', live: true });
  await new Promise((r) => setTimeout(r, 200));
  const t0 = Date.now();
  await other.stop();
  assert.ok(Date.now() - t0 < 5000, `stop took ${Date.now() - t0} ms`);
  await sub.done;
  await c.dispose();
});

test.run();
