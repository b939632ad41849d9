/**
 * The Tempo-compatible API under the lookout-traces datasource proxy, end to end: spans sent by
 * the OpenTelemetry JS SDK's OTLP/proto exporter and precise fixtures through the ingest
 * pipeline; every endpoint's shape, errors in Tempo's plain-text style, and the `apm` RBAC scope.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Tokens } from '../../kernel/services.js';
import { otlpRoot } from '../../plugins/ingest-otlp/codec.js';
import { INGEST_KEY, VIEWER_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';
import { call } from '../rbac/helpers.js';
import { T0, newSpanId, newTraceId, span } from './fixtures.js';

const BASE = '/dashboards/api/datasources/proxy/uid/lookout-traces';
const USER = { email: 'ana@example.com', name: 'Ana', login: 'ana', token: 'ana-token' };
let srv: TestServer;
const start = Number(T0 / 1_000_000_000n) - 10;
const end = Math.floor(Date.now() / 1000) + 60;
const range = `start=${start}&end=${end}`;

const shopTrace = newTraceId();
const rootId = newSpanId();
const childId = newSpanId();
const linkedTrace = newTraceId();
const otherTrace = newTraceId();
let sdkTraceId = '';

test.before(async () => {
  srv = await startTestServer({
    auth: { ingestApiKeys: [INGEST_KEY], users: [USER] },
    rbac: { enabled: true, defaultPolicy: 'deny' },
  });
  await srv.lookout.kernel.get(Tokens.Ingest).write({
    spans: [
      span({
        traceId: shopTrace,
        spanId: rootId,
        name: 'GET /checkout',
        kind: 'server',
        resource: { 'service.name': 'shop', 'deployment.environment': 'prod', 'host.cpus': 8 },
        scope: { name: 'http-lib', version: '1.0.0' },
        attributes: { 'http.method': 'GET', 'http.status_code': 500, ratio: 0.5, cached: false, tags: ['a', 'b'] },
        status: { code: 'error', message: 'boom' },
        durMs: 120,
      }),
      span({
        traceId: shopTrace,
        spanId: childId,
        parentSpanId: rootId,
        name: 'SELECT orders',
        kind: 'client',
        service: 'shop-db',
        startMs: 5,
        durMs: 50,
        attributes: { 'db.system': 'postgresql' },
        events: [{ timeUnixNano: T0 + 6_000_000n, name: 'exception', attributes: { 'exception.message': 'timeout' } }],
        links: [{ traceId: linkedTrace, spanId: rootId, attributes: { reason: 'retry' } }],
      }),
      span({ traceId: otherTrace, name: 'cron', service: 'batch', kind: 'internal', startMs: 1000, durMs: 5 }),
    ],
  });
  // The SDK path: OTLP/HTTP protobuf into the receiver.
  const exporter = new OTLPTraceExporter({ url: `${srv.url}/ingester/otlp/v1/traces`, headers: { 'Svc-Api-Key': INGEST_KEY } });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'sdk-app' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('sdk-test', '2.0.0');
  const root = tracer.startSpan('POST /order', { kind: SpanKind.SERVER, attributes: { 'http.route': '/order' } });
  sdkTraceId = root.spanContext().traceId;
  root.setStatus({ code: SpanStatusCode.ERROR, message: 'failed' });
  root.end();
  await provider.forceFlush();
  await provider.shutdown();
});
test.after(async () => {
  await srv.stop();
});

const get = (path: string, token?: string | null) => call(srv, 'GET', BASE + path, undefined, token);
const q = (s: string) => encodeURIComponent(s);

test('datasource list points at the proxy; echo and buildinfo answer like Tempo', async () => {
  const ds = await call(srv, 'GET', '/dashboards/api/datasources');
  assert.ok(ds.body.some((d: { uid: string; type: string }) => d.uid === 'lookout-traces' && d.type === 'tempo'));
  const echo = await get('/api/echo');
  assert.is(echo.status, 200);
  assert.is(echo.text, 'echo');
  const bi = await get('/api/status/buildinfo');
  assert.is(bi.status, 200);
  assert.match(bi.body.version, /^2\./);
  assert.is((await get('/api/echo', null)).status, 401);
});

test('search: SPEC result shape', async () => {
  const r = await get(`/api/search?q=${q('{ span.http.status_code >= 500 }')}&${range}`);
  assert.is(r.status, 200, r.text);
  assert.is(r.body.traces.length, 1);
  const t = r.body.traces[0];
  assert.is(t.traceID, shopTrace);
  assert.is(t.rootServiceName, 'shop');
  assert.is(t.rootTraceName, 'GET /checkout');
  assert.is(t.startTimeUnixNano, T0.toString());
  assert.is(t.durationMs, 120);
  assert.is(t.spanSets[0].matched, 1);
  const s = t.spanSets[0].spans[0];
  assert.is(s.spanID, rootId);
  assert.is(s.durationNanos, '120000000');
  assert.is(s.startTimeUnixNano, T0.toString());
  assert.ok(s.attributes.some((a: { key: string; value: { intValue?: string } }) => a.key === 'http.status_code' && a.value.intValue === '500'));
  assert.ok(s.attributes.some((a: { key: string; value: { stringValue?: string } }) => a.key === 'service.name' && a.value.stringValue === 'shop'));
  assert.equal(t.spanSet, t.spanSets[0]);
  assert.type(r.body.metrics.inspectedTraces, 'number');
  // The SDK-exported trace is searchable by its intrinsics.
  const sdk = await get(`/api/search?q=${q('{ resource.service.name = "sdk-app" && status = error && kind = server }')}&${range}`);
  assert.equal(sdk.body.traces.map((x: { traceID: string }) => x.traceID), [sdkTraceId]);
  // Events, links, arrays, instrumentation scope.
  for (const query of [
    '{ event:name = "exception" && event.exception.message = "timeout" }',
    `{ link:traceID = "${linkedTrace}" && link.reason = "retry" }`,
    '{ span.tags = "b" }',
    '{ instrumentation:name = "http-lib" && statusMessage = "boom" }',
    '{ resource.host.cpus > 4 && span.ratio < 1 && span.cached = false }',
    '{ rootName = "GET /checkout" && name = "SELECT orders" && traceDuration >= 120ms }',
  ]) {
    const res = await get(`/api/search?q=${q(query)}&${range}`);
    assert.equal(res.body.traces.map((x: { traceID: string }) => x.traceID), [shopTrace], query);
  }
});

test('legacy tags/minDuration search parameters map onto TraceQL', async () => {
  const r = await get(`/api/search?tags=${q('service.name=batch')}&${range}`);
  assert.equal(r.body.traces.map((x: { traceID: string }) => x.traceID), [otherTrace]);
  const d = await get(`/api/search?tags=${q('service.name=shop')}&minDuration=1s&${range}`);
  assert.equal(d.body.traces, []);
});

test('trace by id: OTLP JSON with base64 ids; protobuf on request; 404 and 400', async () => {
  const r = await get(`/api/traces/${shopTrace}`);
  assert.is(r.status, 200, r.text);
  const rs = r.body.trace.resourceSpans;
  assert.is(rs.length, 2);
  const shop = rs.find((x: { resource: { attributes: { key: string; value: { stringValue?: string } }[] } }) =>
    x.resource.attributes.some((a) => a.key === 'service.name' && a.value.stringValue === 'shop'),
  );
  assert.ok(shop.resource.attributes.some((a: { key: string; value: { intValue?: string } }) => a.key === 'host.cpus' && a.value.intValue === '8'));
  assert.equal(shop.scopeSpans[0].scope, { name: 'http-lib', version: '1.0.0' });
  const s = shop.scopeSpans[0].spans[0];
  assert.is(s.traceId, Buffer.from(shopTrace, 'hex').toString('base64'));
  assert.is(s.spanId, Buffer.from(rootId, 'hex').toString('base64'));
  assert.is(s.parentSpanId, undefined);
  assert.is(s.kind, 'SPAN_KIND_SERVER');
  assert.equal(s.status, { code: 'STATUS_CODE_ERROR', message: 'boom' });
  assert.is(s.startTimeUnixNano, T0.toString());
  assert.is(s.endTimeUnixNano, (T0 + 120_000_000n).toString());
  const byKey = Object.fromEntries(s.attributes.map((a: { key: string; value: unknown }) => [a.key, a.value]));
  assert.equal(byKey['http.method'], { stringValue: 'GET' });
  assert.equal(byKey['http.status_code'], { intValue: '500' });
  assert.equal(byKey.ratio, { doubleValue: 0.5 });
  assert.equal(byKey.cached, { boolValue: false });
  assert.equal(byKey.tags, { arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] } });
  const child = rs.find((x: typeof shop) => x !== shop).scopeSpans[0].spans[0];
  assert.is(child.parentSpanId, Buffer.from(rootId, 'hex').toString('base64'));
  assert.is(child.events[0].name, 'exception');
  assert.is(child.links[0].traceId, Buffer.from(linkedTrace, 'hex').toString('base64'));
  // v2 wraps the same trace.
  const v2 = await get(`/api/v2/traces/${shopTrace}`);
  assert.equal(v2.body.trace, r.body.trace);
  // Upper-case and short ids are accepted.
  assert.is((await get(`/api/traces/${shopTrace.toUpperCase()}`)).status, 200);
  // Protobuf, as Grafana's backend asks for it: decodes as OTLP TracesData.
  const res = await srv.fetch(`${BASE}/api/traces/${shopTrace}`, { headers: { accept: 'application/protobuf' } });
  assert.is(res.headers.get('content-type'), 'application/protobuf');
  const T = otlpRoot().lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  const decoded = T.toObject(T.decode(new Uint8Array(await res.arrayBuffer())), { bytes: String }) as {
    resourceSpans: { scopeSpans: { spans: { name: string; spanId: string }[] }[] }[];
  };
  const names = decoded.resourceSpans.flatMap((x) => x.scopeSpans.flatMap((y) => y.spans.map((z) => z.name))).sort();
  assert.equal(names, ['GET /checkout', 'SELECT orders']);
  const missing = await get(`/api/traces/${'f'.repeat(32)}`);
  assert.is(missing.status, 404);
  assert.match(missing.contentType, /^text\/plain/);
  assert.is((await get('/api/traces/not-hex')).status, 400);
  assert.is((await get(`/api/traces/${'a'.repeat(33)}`)).status, 400);
});

test('tags and tag values (v1 and v2, scopes, q filter)', async () => {
  const tags = await get(`/api/search/tags?${range}`);
  assert.is(tags.status, 200);
  for (const k of ['http.method', 'db.system', 'service.name', 'deployment.environment']) assert.ok(tags.body.tagNames.includes(k), k);
  const res = await get(`/api/search/tags?scope=resource&${range}`);
  assert.ok(res.body.tagNames.includes('service.name') && !res.body.tagNames.includes('http.method'));
  const intr = await get('/api/search/tags?scope=intrinsic');
  assert.ok(intr.body.tagNames.includes('status') && intr.body.tagNames.includes('duration'));
  assert.is((await get('/api/search/tags?scope=bogus')).status, 400);
  const v2 = await get(`/api/v2/search/tags?${range}`);
  const scopes = Object.fromEntries(v2.body.scopes.map((s: { name: string; tags: string[] }) => [s.name, s.tags]));
  assert.ok(scopes.resource.includes('service.name'));
  assert.ok(scopes.span.includes('http.status_code'));
  assert.ok(scopes.intrinsic.includes('kind'));
  assert.ok(scopes.event.includes('exception.message'));
  assert.ok(scopes.link.includes('reason'));

  const vals = await get(`/api/search/tag/service.name/values?${range}`);
  assert.is(vals.status, 200, vals.text);
  assert.equal(vals.body.tagValues, ['batch', 'sdk-app', 'shop', 'shop-db']);
  const filtered = await get(`/api/search/tag/service.name/values?${range}&q=${q('{ kind = client }')}`);
  assert.equal(filtered.body.tagValues, ['shop-db']);
  const typed = await get(`/api/v2/search/tag/${q('span.http.status_code')}/values?${range}`);
  assert.equal(typed.body.tagValues, [{ type: 'int', value: '500' }]);
  const status = await get(`/api/v2/search/tag/status/values?${range}`);
  assert.equal(status.body.tagValues.map((v: { type: string; value: string }) => `${v.type}:${v.value}`), ['keyword:error', 'keyword:unset']);
  const res2 = await get(`/api/v2/search/tag/${q('resource.service.name')}/values?${range}`);
  assert.ok(res2.body.tagValues.every((v: { type: string }) => v.type === 'string'));
  // SPEC: start and end are required for tag values.
  assert.is((await get('/api/search/tag/service.name/values')).status, 400);
});

test('errors: plain text 400 with positions; metrics endpoints unavailable', async () => {
  const cases: [string, RegExp][] = [
    [`/api/search?${range}`, /q \(TraceQL\) is required/],
    [`/api/search?q=${q('{}')}`, /start/],
    [`/api/search?q=${q('{}')}&start=10&end=5`, /end must not be before start/],
    [`/api/search?q=${q('{}')}&start=abc&end=5`, /invalid start/],
    [`/api/search?q=${q('{}')}&${range}&limit=-1`, /invalid limit/],
    [`/api/search?q=${q('{ span.a = }')}&${range}`, /parse error at line 1, col 12: syntax error: unexpected "}"/],
    [`/api/search?q=${q('{ name = "x" ')}&${range}`, /unexpected end of query/],
    [`/api/search?q=${q('{ name =~ "(" }')}&${range}`, /invalid regex/],
    [`/api/search?q=${q('{ foo = 1 }')}&${range}`, /attributes need a scope/],
    [`/api/search?q=${q('{ } | count() > ')}&${range}`, /parse error/],
    [`/api/search?q=${q('{ "unterminated }')}&${range}`, /unterminated string/],
    [`/api/search?q=${q('{ duration > 5parsecs }')}&${range}`, /invalid duration/],
  ];
  for (const [path, re] of cases) {
    const r = await get(path);
    assert.is(r.status, 400, path);
    assert.match(r.contentType, /^text\/plain/);
    assert.match(r.text, re, path);
  }
  const m = await get(`/api/metrics/query_range?q=${q('{} | rate()')}&${range}`);
  assert.is(m.status, 501);
  assert.match(m.text, /not available/);
  assert.is((await get('/api/metrics/query')).status, 501);
});

test('RBAC: the apm scope limits search, trace by id, tags and values', async () => {
  // Viewer service account without a policy: default deny.
  const denied = await get(`/api/search?q=${q('{}')}&${range}`, VIEWER_TOKEN);
  assert.is(denied.status, 200);
  assert.equal(denied.body.traces, []);
  assert.is((await get(`/api/traces/${shopTrace}`, VIEWER_TOKEN)).status, 404);
  // Ana may see the shop service's spans only.
  assert.is(
    (await call(srv, 'POST', '/rbac/policies', { name: 'apm-shop', scope: { type: 'custom', filters: [{ key: 'svc_stream', op: '=', value: 'apm' }, { key: 'service', op: '=', value: 'shop' }] } })).status,
    201,
  );
  assert.is((await call(srv, 'POST', '/rbac/policies/apm-shop/mappings', { entity_type: 'user', entity_name: USER.email })).status, 201);
  const s = await get(`/api/search?q=${q('{}')}&${range}&limit=100`, USER.token);
  assert.equal(s.body.traces.map((t: { traceID: string }) => t.traceID), [shopTrace]);
  assert.is(s.body.traces[0].spanSets[0].matched, 1, 'the shop-db span is invisible');
  const structural = await get(`/api/search?q=${q('{ name = "GET /checkout" } > { }')}&${range}`, USER.token);
  assert.equal(structural.body.traces, [], 'no visible child');
  const byId = await get(`/api/traces/${shopTrace}`, USER.token);
  assert.is(byId.body.trace.resourceSpans.length, 1);
  const vals = await get(`/api/search/tag/service.name/values?${range}`, USER.token);
  assert.equal(vals.body.tagValues, ['shop']);
  const tags = await get(`/api/search/tags?${range}`, USER.token);
  assert.not.ok(tags.body.tagNames.includes('db.system'));
});

test.run();
