import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from 'node:http';
import { startTestServer } from '../helpers/server.js';
import { probePlugin } from './fixtures/probe-plugin.js';

const post = (url: string) =>
  fetch(url + '/ingester/probe/svc', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });

test('past ingestMaxConcurrent in-flight requests: 503 with Retry-After', async () => {
  const srv = await startTestServer({ limits: { ingestMaxConcurrent: 1 } }, { extraPlugins: [probePlugin] });
  const u = new URL(srv.url);
  // Hold one request in flight by sending its body slowly.
  const held = request({
    host: u.hostname,
    port: u.port,
    method: 'POST',
    path: '/ingester/probe/svc',
    headers: { 'content-type': 'application/json', 'content-length': '2' },
  });
  const heldDone = new Promise<number>((res) => held.on('response', (r) => (r.resume(), res(r.statusCode ?? 0))));
  held.write('{');
  await new Promise((r) => setTimeout(r, 200));
  try {
    const res = await post(srv.url);
    assert.is(res.status, 503);
    assert.is(res.headers.get('retry-after'), '1');
    held.end('}');
    assert.is(await heldDone, 200);
    assert.is((await post(srv.url)).status, 200);
    const metrics = await (await fetch(srv.url + '/metrics')).text();
    assert.match(metrics, /lookout_rejected_requests_total\{receiver="probe-svc",reason="overloaded"\} 1/);
    assert.match(metrics, /lookout_ingested_records_total\{receiver="probe-svc",signal="logs"\} 2/);
  } finally {
    held.destroy();
    await srv.stop();
  }
});

test('past ingestRatePerSecond: 429 with Retry-After', async () => {
  const srv = await startTestServer({ limits: { ingestRatePerSecond: 3 } }, { extraPlugins: [probePlugin] });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post(srv.url)).status);
    assert.equal(statuses.slice(0, 3), [200, 200, 200]);
    assert.ok(statuses.includes(429), statuses.join(','));
    const res = await post(srv.url);
    if (res.status === 429) assert.is(res.headers.get('retry-after'), '1');
    await new Promise((r) => setTimeout(r, 1100));
    assert.is((await post(srv.url)).status, 200);
  } finally {
    await srv.stop();
  }
});

test.run();
