/**
 * Requests recorded from the real Datadog exporter (collector 0.155.0, see
 * datadog-exporter.test.ts) replayed byte for byte, with their original Content-Type and
 * Content-Encoding, so the compatibility fixes they led to stay tested where the exporter is not
 * built: JSON-in-`message` logs, the (empty) SketchPayload on every flush, the 128-bit trace id
 * carried in `otel.trace_id`, and the serializer's deflated MetricPayload.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';
import { b64ToHex, getTrace, queryLogs } from './harness.js';

const dir = new URL('./fixtures/datadog-exporter-0.155.0/', import.meta.url);
const fixture = (name: string) => readFileSync(new URL(name, dir));

let srv: TestServer;
test.before(async () => {
  // The recordings carry their recording time: keep everything, however old it is by now.
  srv = await startTestServer({
    auth: { ingestApiKeys: [INGEST_KEY] },
    storage: { retention: { metrics: '0', logs: '0', traces: '0', events: '0' } },
  });
});
test.after(async () => {
  await srv.stop();
});

async function replay(path: string, file: string, contentType: string, encoding: string): Promise<Response> {
  return fetch(`${srv.url}/ingester${path}`, {
    method: 'POST',
    headers: { 'content-type': contentType, 'content-encoding': encoding, 'dd-api-key': INGEST_KEY },
    body: fixture(file),
  });
}

test('logs: the JSON message is parsed into message, level and facets', async () => {
  const res = await replay('/api/v2/logs', 'logs.json.gz', 'application/json', 'gzip');
  assert.is(res.status, 202);
  const logs = await queryLogs(srv, '"dd-marker"');
  assert.is(logs.length, 1);
  const l = logs[0]!;
  assert.is(l.message, 'dd-marker disk');
  assert.equal(
    { service: l.labels.service, host: l.labels.host, level: l.labels.level, source: l.labels.source, otel_source: l.labels.otel_source },
    { service: 'dd-checkout', host: 'h1', level: 'warn', source: 'otlp_log_ingestion', otel_source: 'datadog_exporter' },
  );
  assert.is(l.facets['disk.x'], 'y');
  assert.is(l.facets['otel.severity_text'], 'WARN');
  assert.is(l.facets.message, undefined, 'the inner message is the message, not a facet');
});

test('sketches: the empty SketchPayload of every flush is accepted', async () => {
  const res = await replay('/api/beta/sketches', 'sketches.pb.deflate', 'application/x-protobuf', 'deflate');
  assert.is(res.status, 202);
  assert.equal(await res.json(), {});
});

test('series: the serializer MetricPayload (deflate) stores the delta count', async () => {
  const res = await replay('/api/v2/series', 'series.pb.deflate', 'application/x-protobuf', 'deflate');
  assert.is(res.status, 202);
  // The recorded point is from the recording's time: look it up with an explicit evaluation time.
  const r = await srv.fetch(`/api/v1/series?match[]=dd_requests&start=0&end=${Math.ceil(Date.now() / 1000) + 10 * 365 * 86400}`);
  const body = (await r.json()) as { data: Record<string, string>[] };
  assert.is(body.data.length, 1);
  assert.is(body.data[0]!.host, 'h1');
  assert.is(body.data[0]!.service, 'dd-checkout');
});

test('traces: the 128-bit id comes back from otel.trace_id', async () => {
  const res = await replay('/api/v0.2/traces', 'traces.pb.gz', 'application/x-protobuf', 'gzip');
  assert.is(res.status, 202);
  const t = await getTrace(srv, 'ed8396410fbedaf0891ed853ee78ce7e');
  assert.ok(t, 'trace found under its full 128-bit id');
  assert.is(t!.spans.length, 1);
  assert.is(b64ToHex(t!.spans[0]!.traceId), 'ed8396410fbedaf0891ed853ee78ce7e');
  assert.is(t!.spans[0]!.name, 'POST /pay');
});

test.run();
