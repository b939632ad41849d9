/**
 * QUERY_TIMEOUT (GRAPHQL.md "Errors and limits"), with the operation budget shortened through
 * the plugin's `queryTimeoutMs` option and a ScopeResolver that stalls.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import type { Principal } from '../../kernel/auth.js';
import { definePlugin } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import { EDITOR_TOKEN, VIEWER_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';
import { at, gql, ingestExampleData } from './helpers.js';

let readerCalls = 0;
const slowScopes = definePlugin({
  name: 'test-slow-scopes',
  after: ['rbac', 'teams'],
  register(ctx) {
    ctx.provide(Tokens.ScopeResolver, {
      async scopeFor(p: Principal) {
        // editor: always slow; reader: fast once (the first page), slow afterwards.
        const slow = p.name === 'editor' || (p.name === 'reader' && ++readerCalls > 1);
        if (slow) await new Promise((r) => setTimeout(r, 1500));
        return undefined;
      },
    });
  },
});

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ pluginOptions: { 'api-graphql': { queryTimeoutMs: 300 } } }, { extraPlugins: [slowScopes] });
  await ingestExampleData(srv);
});
test.after(async () => srv.stop());

const RANGE = { s: at('10:00:00'), e: at('10:05:00') };

test('queries past their budget answer QUERY_TIMEOUT in time, data.<op>: null', async () => {
  const t0 = Date.now();
  const r = await gql(
    srv,
    `query($s: Time!, $e: Time!) { getLogMetricsResultWithSvcQl(query: "* | count", startTs: $s, endTs: $e) { TableResult } }`,
    RANGE,
    EDITOR_TOKEN,
  );
  assert.ok(Date.now() - t0 < 1200, `answered after ${Date.now() - t0} ms`);
  assert.is(r.status, 200);
  assert.equal(r.data, { getLogMetricsResultWithSvcQl: null });
  assert.equal(r.errors, [
    { message: 'query timed out', path: ['getLogMetricsResultWithSvcQl'], extensions: { code: 'QUERY_TIMEOUT', component: 'logs' } },
  ]);
  const ev = await gql(srv, `query($s: Time!, $e: Time!) { getEvents(startTs: $s, endTs: $e) { cursor } }`, RANGE, EDITOR_TOKEN);
  assert.equal(ev.errors![0]!.extensions, { code: 'QUERY_TIMEOUT', component: 'events' });
});

test('streams: timeout before the first page is an error message; later, a next with errors then complete', async () => {
  const open = (token: string) =>
    createClient({
      url: srv.url.replace(/^http/, 'ws') + '/query',
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      connectionParams: { Authorization: `Bearer ${token}` },
    });
  const run = (c: ReturnType<typeof open>) =>
    new Promise<{ next: any[]; error?: any; completed: boolean }>((resolve) => {
      const out: { next: any[]; error?: any; completed: boolean } = { next: [], completed: false };
      c.subscribe(
        {
          query: `subscription($s: Time, $e: Time) { getLogsWithSvcQlStream(query: "*", startTs: $s, endTs: $e, limit: 5) { logs { message } cursor } }`,
          variables: RANGE,
        },
        {
          next: (v) => void out.next.push(v),
          error: (e) => resolve({ ...out, error: e }),
          complete: () => resolve({ ...out, completed: true }),
        },
      );
    });
  const editor = open(EDITOR_TOKEN);
  const first = await run(editor);
  assert.equal(first.next, []);
  assert.equal(first.error, [
    { message: 'query timed out', path: ['getLogsWithSvcQlStream'], extensions: { code: 'QUERY_TIMEOUT', component: 'logs' } },
  ]);
  await editor.dispose();
  const reader = open(VIEWER_TOKEN);
  const later = await run(reader);
  assert.ok(later.completed);
  assert.is(later.next.length, 2);
  assert.is(later.next[0].data.getLogsWithSvcQlStream.logs.length, 5);
  assert.equal(later.next[1], {
    data: { getLogsWithSvcQlStream: null },
    errors: [{ message: 'query timed out', path: ['getLogsWithSvcQlStream'], extensions: { code: 'QUERY_TIMEOUT', component: 'logs' } }],
  });
  await reader.dispose();
});

test.run();
