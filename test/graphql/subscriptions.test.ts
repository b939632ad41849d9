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
  // Let the subscription start before ingesting (it reads from lastSeq at subscribe time).
  await new Promise((r) => setTimeout(r, 300));
  const now = BigInt(Date.now()) * 1_000_000n;
  await srv.lookout.kernel.get(Tokens.Ingest).write({
    logs: [{ timestampNs: now, message: 'hello live tail', labels: { svc_stream: 'logs', service: 'api' }, facets: { n: 1 } }],
  });
  await waitFor(() => sub.result.next.length > 0);
  const payload = sub.result.next[0] as { data: { getLogsWithSvcQlStream: { logs: { message: string; timestamp: string; facets: unknown }[]; cursor: null } } };
  assert.equal(payload.data.getLogsWithSvcQlStream.cursor, null);
  assert.equal(payload.data.getLogsWithSvcQlStream.logs.length, 1);
  assert.equal(payload.data.getLogsWithSvcQlStream.logs[0]!.message, 'hello live tail');
  assert.equal(payload.data.getLogsWithSvcQlStream.logs[0]!.timestamp, now.toString());
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
