import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gzipSync, deflateSync } from 'node:zlib';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { client, v2 } from '@datadog/datadog-api-client';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';
import { allLogs, series, trace } from './store.js';

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
});
test.after(async () => {
  await srv.stop();
});

const post = (path: string, body: string | Buffer, headers: Record<string, string>) =>
  fetch(srv.url + '/ingester' + path, { method: 'POST', body, headers });

const logsOf = async (service: string) => (await allLogs(srv)).filter((l) => l.labels.service === service);

test('/api/v2/logs: JSON array with ddtags, status and attributes → 202 {}', async () => {
  const body = JSON.stringify([
    {
      message: 'GET /users 200',
      status: 'warning',
      hostname: 'web-1',
      service: 'svc-v2',
      ddsource: 'nginx',
      ddtags: 'env:prod,version:1.2,team:core',
      timestamp: 1763805605123,
      http: { status_code: 200, method: 'GET' },
      duration: 12.5,
    },
    { message: 'second', service: 'svc-v2', status: 'err' },
  ]);
  const res = await post('/api/v2/logs', body, { 'content-type': 'application/json', 'dd-api-key': INGEST_KEY });
  assert.is(res.status, 202);
  assert.equal(await res.json(), {});
  const logs = await logsOf('svc-v2');
  assert.is(logs.length, 2);
  const first = logs.find((l) => l.message === 'GET /users 200')!;
  assert.equal(first.labels, { svc_stream: 'logs', service: 'svc-v2', host: 'web-1', level: 'warn', source: 'nginx', env: 'prod', version: '1.2', team: 'core' });
  assert.equal(first.facets, { 'http.status_code': 200, 'http.method': 'GET', duration: 12.5 });
  assert.is(first.timestampNs, 1763805605123000000n);
  assert.is(logs.find((l) => l.message === 'second')!.labels.level, 'error');
});

test('/v1/input: single object, gzip and deflate, Compat-Api-Key → 200 {}', async () => {
  for (const [enc, fn] of [['gzip', gzipSync], ['deflate', deflateSync]] as const) {
    const body = fn(Buffer.from(JSON.stringify({ message: `v1 ${enc}`, service: 'svc-v1', status: 'info' })));
    const res = await post('/v1/input', body, { 'content-type': 'application/json', 'content-encoding': enc, 'compat-api-key': INGEST_KEY });
    assert.is(res.status, 200, enc);
  }
  const logs = await logsOf('svc-v1');
  assert.equal(logs.map((l) => l.message).sort(), ['v1 deflate', 'v1 gzip']);
  assert.is(logs[0]!.labels.level, 'info');
});

test('/v1/input text/plain: one record per line, labels from the query', async () => {
  const res = await fetch(srv.url + '/ingester/v1/input?service=svc-plain&ddsource=shell&ddtags=env:dev', {
    method: 'POST',
    body: 'line one\nline two\n',
    headers: { 'content-type': 'text/plain', 'dd-api-key': INGEST_KEY },
  });
  assert.is(res.status, 200);
  const logs = await logsOf('svc-plain');
  assert.equal(logs.map((l) => l.message).sort(), ['line one', 'line two']);
  assert.equal(logs[0]!.labels, { svc_stream: 'logs', service: 'svc-plain', source: 'shell', env: 'dev' });
});

test('errors: bad or missing key 400, malformed 400 with nothing written, unsupported type 400', async () => {
  const before = (await allLogs(srv)).length;
  const good = JSON.stringify([{ message: 'x', service: 'svc-err' }]);
  let res = await post('/api/v2/logs', good, { 'content-type': 'application/json' });
  assert.is(res.status, 400);
  res = await post('/api/v2/logs', good, { 'content-type': 'application/json', 'dd-api-key': 'wrong' });
  assert.is(res.status, 400);
  res = await post('/api/v2/logs', '[{"message":"a","service":"svc-err"}, {"message":', { 'content-type': 'application/json', 'dd-api-key': INGEST_KEY });
  assert.is(res.status, 400);
  assert.match(((await res.json()) as { errors: string[] }).errors[0]!, /malformed JSON/);
  res = await post('/api/v2/logs', '[{"message":"a","service":"svc-err"}, 42]', { 'content-type': 'application/json', 'dd-api-key': INGEST_KEY });
  assert.is(res.status, 400);
  assert.match(await res.text(), /log 2 is not a JSON object/);
  res = await post('/api/v2/logs', '[{"message":"a","service":"svc-err","ddtags":["x"]}]', { 'content-type': 'application/json', 'dd-api-key': INGEST_KEY });
  assert.is(res.status, 400);
  res = await post('/api/v2/logs', good, { 'content-type': 'application/xml', 'dd-api-key': INGEST_KEY });
  assert.is(res.status, 400);
  assert.match(await res.text(), /unsupported content type/);
  res = await post('/api/v2/series', '{"series": 3}', { 'content-type': 'application/json', 'dd-api-key': INGEST_KEY });
  assert.is(res.status, 400);
  res = await post('/api/v2/series', Buffer.from([0x0a, 0xff, 0xff]), { 'content-type': 'application/x-protobuf', 'dd-api-key': INGEST_KEY });
  assert.is(res.status, 400);
  assert.match(await res.text(), /malformed MetricPayload/);
  res = await post('/api/v0.2/traces', Buffer.from([0x2a, 0x05, 0x01]), { 'content-type': 'application/x-protobuf', 'dd-api-key': INGEST_KEY });
  assert.is(res.status, 400);
  assert.is((await allLogs(srv)).length, before);
});

test('GET /api/v1/validate checks the key like the agent expects', async () => {
  const ok = await fetch(srv.url + '/ingester/api/v1/validate', { headers: { 'dd-api-key': INGEST_KEY } });
  assert.is(ok.status, 200);
  assert.equal(await ok.json(), { valid: true });
  const bad = await fetch(srv.url + '/ingester/api/v1/validate', { headers: { 'dd-api-key': 'nope' } });
  assert.is(bad.status, 400);
});

function ddClient() {
  return client.createConfiguration({
    authMethods: { apiKeyAuth: INGEST_KEY },
    baseServer: new client.BaseServerConfiguration(srv.url + '/ingester', {}),
    enableRetry: false,
  });
}

test('official API client: MetricsApi.submitMetrics (JSON) → series with tags as labels', async () => {
  const api = new v2.MetricsApi(ddClient());
  const now = Math.floor(Date.now() / 1000);
  const r = await api.submitMetrics({
    body: {
      series: [
        {
          metric: 'app.requests.count',
          type: 1,
          points: [
            { timestamp: now - 10, value: 3 },
            { timestamp: now, value: 5 },
          ],
          resources: [{ type: 'host', name: 'web-9' }],
          tags: ['env:prod', 'kube-namespace:shop'],
          unit: 'request',
          interval: 10,
        },
      ],
    },
  });
  assert.equal(r.errors ?? [], []);
  const s = await series(srv, 'app_requests_count');
  assert.is(s.length, 1);
  assert.equal(s[0]!.labels, { __name__: 'app_requests_count', host: 'web-9', env: 'prod', kube_namespace: 'shop' });
  assert.equal(s[0]!.samples, [
    [(now - 10) * 1000, 3],
    [now * 1000, 5],
  ]);
});

test('official API client: LogsApi.submitLog (gzip too) → logs', async () => {
  const api = new v2.LogsApi(ddClient());
  await api.submitLog({
    body: [{ message: 'from the client', service: 'svc-client', hostname: 'h1', ddsource: 'node', ddtags: 'env:staging', additionalProperties: { status: 'error' } } as v2.HTTPLogItem],
  });
  await api.submitLog({ body: [{ message: 'gzipped', service: 'svc-client' }], contentEncoding: 'gzip' });
  const logs = await logsOf('svc-client');
  assert.equal(logs.map((l) => l.message).sort(), ['from the client', 'gzipped']);
  const l = logs.find((x) => x.message === 'from the client')!;
  assert.is(l.labels.env, 'staging');
  assert.is(l.labels.level, 'error');
  assert.is(l.labels.source, 'node');
});

const vendorRoot = (() => {
  const base = join(process.cwd(), 'proto', 'agent');
  const root = new protobuf.Root();
  root.resolvePath = (_o, t) => join(base, t);
  root.loadSync(['datadog/agentpayload/agent_payload.proto', 'datadog/trace/agent_payload.proto'], { keepCase: true });
  return root;
})();

test('/api/v2/series protobuf MetricPayload (deflate, as the agent sends it)', async () => {
  const T = vendorRoot.lookupType('datadog.agentpayload.MetricPayload');
  const ts = Math.floor(Date.now() / 1000);
  const msg = T.create({
    series: [
      {
        metric: 'system.cpu.user',
        type: 3,
        points: [{ timestamp: ts, value: 12.5 }],
        resources: [{ type: 'host', name: 'node-1' }],
        tags: ['cpu:0', 'role:db'],
        unit: 'percent',
        interval: 15,
      },
    ],
  });
  const body = deflateSync(Buffer.from(T.encode(msg).finish()));
  const res = await post('/api/v2/series', body, { 'content-type': 'application/x-protobuf', 'content-encoding': 'deflate', 'dd-api-key': INGEST_KEY });
  assert.is(res.status, 202);
  const s = await series(srv, 'system_cpu_user');
  assert.equal(s[0]!.labels, { __name__: 'system_cpu_user', host: 'node-1', cpu: '0', role: 'db' });
  assert.equal(s[0]!.samples, [[ts * 1000, 12.5]]);
});

test('/api/v0.2/traces AgentPayload protobuf → spans with hex ids, resource and attributes', async () => {
  const T = vendorRoot.lookupType('datadog.trace.AgentPayload');
  const start = BigInt(Date.now()) * 1_000_000n;
  const traceLow = '12345678901234567890';
  const msg = T.create({
    hostName: 'agent-host',
    env: 'prod',
    agentVersion: '7.50.0',
    tracerPayloads: [
      {
        containerID: 'c0ffee',
        languageName: 'go',
        tracerVersion: '1.60.0',
        env: 'prod',
        hostname: 'app-host',
        appVersion: '2.0.0',
        chunks: [
          {
            priority: 1,
            spans: [
              {
                service: 'checkout',
                name: 'http.request',
                resource: 'GET /cart',
                traceID: traceLow,
                spanID: 1,
                parentID: 0,
                start: start.toString(),
                duration: 5_000_000,
                error: 1,
                meta: { '_dd.p.tid': '65f0a1b200000000', 'http.method': 'GET', 'span.kind': 'server', 'error.message': 'boom' },
                metrics: { '_sampling_priority_v1': 1, 'http.status_code': 500 },
                type: 'web',
                spanEvents: [{ time_unix_nano: start.toString(), name: 'retry', attributes: { attempt: { type: 2, int_value: 2 } } }],
              },
              {
                service: 'checkout',
                name: 'postgres.query',
                resource: 'SELECT 1',
                traceID: traceLow,
                spanID: 2,
                parentID: 1,
                start: (start + 1000n).toString(),
                duration: 1000,
                meta: { '_dd.p.tid': '65f0a1b200000000' },
                type: 'sql',
              },
            ],
          },
        ],
      },
    ],
  });
  const body = gzipSync(Buffer.from(T.encode(msg).finish()));
  const res = await post('/api/v0.2/traces', body, { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip', 'dd-api-key': INGEST_KEY });
  assert.is(res.status, 202);
  const traceId = '65f0a1b200000000' + BigInt('12345678901234567890').toString(16).padStart(16, '0');
  const spans = await trace(srv, traceId);
  assert.is(spans.length, 2);
  const root = spans.find((s) => s.parentSpanId === '')!;
  assert.is(root.spanId, '0000000000000001');
  assert.is(root.name, 'GET /cart');
  assert.is(root.kind, 'server');
  assert.equal(root.status, { code: 'error', message: 'boom' });
  assert.is(root.endTimeUnixNano - root.startTimeUnixNano, 5_000_000n);
  assert.is(root.resource['service.name'], 'checkout');
  assert.is(root.resource['deployment.environment'], 'prod');
  assert.is(root.resource['host.name'], 'app-host');
  assert.is(root.resource['service.version'], '2.0.0');
  assert.is(root.attributes['http.status_code'], 500);
  assert.is(root.attributes['operation.name'], 'http.request');
  assert.equal(root.events[0]!.attributes, { attempt: 2 });
  const child = spans.find((s) => s.parentSpanId !== '')!;
  assert.is(child.parentSpanId, '0000000000000001');
  assert.is(child.kind, 'client');
});

test.run();
