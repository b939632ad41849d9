import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.js';

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer();
});
test.after(async () => {
  await srv.stop();
});

test('health and readiness answer 200', async () => {
  const h = await srv.fetch('/-/healthy', { token: null });
  assert.is(h.status, 200);
  const r = await srv.fetch('/-/ready', { token: null });
  assert.is(r.status, 200);
});

test('/metrics exposes request counters in Prometheus text format', async () => {
  await srv.fetch('/-/healthy', { token: null });
  const res = await srv.fetch('/metrics', { token: null });
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
  const text = await res.text();
  assert.match(text, /# TYPE lookout_http_requests_total counter/);
  assert.match(text, /lookout_http_requests_total\{route="\/-\/healthy",method="GET",status="200"\} \d+/);
});

test('/metrics has query durations by language and storage sizes by signal', async () => {
  const q = await srv.fetch('/api/v1/query?query=vector(1)');
  assert.is(q.status, 200);
  const text = await (await srv.fetch('/metrics', { token: null })).text();
  assert.match(text, /lookout_query_duration_seconds_count\{language="promql",outcome="ok"\} \d+/);
  assert.match(text, /# TYPE lookout_storage_bytes gauge/);
  assert.match(text, /lookout_storage_bytes\{signal="metrics"\} \d+/);
});

test('datasources list the prometheus and tempo datasources', async () => {
  const res = await srv.fetch('/dashboards/api/datasources');
  const body = (await res.json()) as Array<{ uid: string; type: string }>;
  assert.equal(
    body.map((d) => [d.uid, d.type]),
    [
      ['lookout-prometheus', 'prometheus'],
      ['lookout-traces', 'tempo'],
    ],
  );
});

test.run();
