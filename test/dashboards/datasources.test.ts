/**
 * The dashboards component's datasource API as Grafana users script against it, and the
 * Prometheus API reached through the `lookout-prometheus` datasource proxy path (OPERATIONS.md,
 * "Dashboards component"), against a real server.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { VIEWER_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';
import { remoteWrite } from '../helpers/remote-write.js';

let srv: TestServer;
const PROM = '/dashboards/api/datasources/proxy/uid/lookout-prometheus';

test.before(async () => {
  srv = await startTestServer();
  const t = Date.now();
  await remoteWrite(`${srv.url}/ingester/write`, [
    { labels: { __name__: 'ds_probe', job: 'a' }, samples: [{ t, v: 7 }] },
  ]);
});
test.after(async () => {
  await srv.stop();
});

test('datasource discovery answers with or without a token (the proxied APIs need one)', async () => {
  assert.is((await srv.fetch('/dashboards/api/datasources', { token: null })).status, 200);
  const res = await srv.fetch('/dashboards/api/datasources', { token: VIEWER_TOKEN });
  assert.is(res.status, 200);
  const list = (await res.json()) as { uid: string; type: string; url: string }[];
  assert.ok(list.some((d) => d.uid === 'lookout-prometheus' && d.type === 'prometheus'));
  assert.ok(list.some((d) => d.uid === 'lookout-traces' && d.type === 'tempo'));
});

test('Grafana-style lookups by uid and by (URL-encoded) name; unknown ones are 404', async () => {
  const byUid = await srv.fetch('/dashboards/api/datasources/uid/lookout-traces');
  assert.is(byUid.status, 200);
  assert.is(((await byUid.json()) as { type: string }).type, 'tempo');
  const byName = await srv.fetch('/dashboards/api/datasources/name/' + encodeURIComponent('Lookout Prometheus'));
  assert.is(byName.status, 200);
  assert.is(((await byName.json()) as { uid: string }).uid, 'lookout-prometheus');
  const missing = await srv.fetch('/dashboards/api/datasources/uid/nope');
  assert.is(missing.status, 404);
  assert.equal(await missing.json(), { message: 'Data source not found' });
  assert.is((await srv.fetch('/dashboards/api/datasources/uid/lookout-traces', { token: null })).status, 200);
});

test('the Prometheus API answers under the lookout-prometheus proxy path (GET and POST form)', async () => {
  const get = await srv.fetch(`${PROM}/api/v1/query?query=ds_probe`);
  assert.is(get.status, 200);
  const body = (await get.json()) as { status: string; data: { result: { value: [number, string] }[] } };
  assert.is(body.status, 'success');
  assert.is(body.data.result[0]!.value[1], '7');
  const post = await srv.fetch(`${PROM}/api/v1/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'query=ds_probe',
  });
  assert.is(post.status, 200);
  const values = await srv.fetch(`${PROM}/api/v1/label/__name__/values`);
  assert.ok(((await values.json()) as { data: string[] }).data.includes('ds_probe'));
  const build = await srv.fetch(`${PROM}/api/v1/status/buildinfo`);
  assert.is(build.status, 200);
  assert.is((await srv.fetch(`${PROM}/api/v1/query?query=ds_probe`, { token: null })).status, 401);
});

test.run();
