import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, TEST_BACKEND, type TestServer } from '../helpers/server.js';

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
  if (TEST_BACKEND !== 'memory') {
    // The memory backend holds nothing on disk and reports no sizes.
    assert.match(text, /# TYPE lookout_storage_bytes gauge/);
    assert.match(text, /lookout_storage_bytes\{signal="metrics"\} \d+/);
  }
});

test('/metrics counts samples the embedded backend drops outside the out-of-order window', async () => {
  if (TEST_BACKEND !== 'embedded') {
    console.log(`SKIP: dropped-sample counter is specific to the embedded backend (running on ${TEST_BACKEND})`);
    return;
  }
  const { Tokens } = await import('../../kernel/services.js');
  const metrics = srv.lookout.kernel.get(Tokens.Storage).metrics;
  const now = Date.now();
  const labels = { __name__: 'ooo_probe', job: 'smoke' };
  await metrics.append([{ labels, samples: [{ t: now, v: 1 }] }]);
  await metrics.append([{ labels, samples: [{ t: now - 3 * 3600_000, v: 2 }] }]);
  const text = await (await srv.fetch('/metrics', { token: null })).text();
  assert.match(text, /# TYPE lookout_storage_dropped_total counter/);
  assert.match(text, /lookout_storage_dropped_total\{reason="out_of_order_window"\} 1/);
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
