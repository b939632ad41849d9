/**
 * The OpenTelemetry JS SDK's own OTLP/HTTP exporters (protobuf and JSON) send traces, metrics and
 * logs to a real Lookout server; the stored records are read back through the storage service.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as TraceProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as TraceJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPMetricExporter as MetricProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPMetricExporter as MetricJson } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPLogExporter as LogProto } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPLogExporter as LogJson } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { AggregationType, MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { LoggerProvider, SimpleLogRecordProcessor, type LogRecordExporter } from '@opentelemetry/sdk-logs';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { Tokens } from '../../kernel/services.js';
import type { StorageBackend } from '../../kernel/storage.js';
import type { LabelMatcher } from '../../kernel/matchers.js';
import type { StoredSeries } from '../../kernel/storage.js';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';

let srv: TestServer;
let storage: StorageBackend;
const headers = { 'Svc-Api-Key': INGEST_KEY };

test.before(async () => {
  srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
  storage = srv.lookout.kernel.get(Tokens.Storage);
});
test.after(async () => {
  await srv.stop();
});

async function select(matchers: LabelMatcher[]): Promise<StoredSeries[]> {
  const out: StoredSeries[] = [];
  for await (const s of storage.metrics.select(matchers, 0, Date.now() + 3600_000)) out.push(s);
  return out;
}
const eq = (name: string, value: string): LabelMatcher => ({ name, op: '=', value });

for (const [enc, Exporter] of [
  ['protobuf', TraceProto],
  ['json', TraceJson],
] as const) {
  test(`traces over OTLP/HTTP ${enc} are stored complete`, async () => {
    const exporter: SpanExporter = new Exporter({ url: `${srv.url}/ingester/otlp/v1/traces`, headers });
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': `checkout-${enc}`, 'deployment.environment': 'test' }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    const tracer = provider.getTracer('lookout-test', '1.2.3');
    let traceId = '';
    const rootSpan = tracer.startSpan('GET /cart', { kind: SpanKind.SERVER, attributes: { 'http.method': 'GET', 'http.status_code': 500 } });
    traceId = rootSpan.spanContext().traceId;
    const childSpan = tracer.startSpan(
      'db.query',
      { kind: SpanKind.CLIENT, links: [{ context: rootSpan.spanContext(), attributes: { why: 'test' } }] },
      trace.setSpan(ROOT_CONTEXT, rootSpan),
    );
    childSpan.addEvent('rows fetched', { rows: 3 });
    childSpan.end();
    rootSpan.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
    rootSpan.end();
    await provider.forceFlush();
    await provider.shutdown();
    const spans = await storage.traces.getTrace(traceId);
    assert.is(spans.length, 2, 'both spans stored');
    const root = spans.find((s) => s.name === 'GET /cart')!;
    const child = spans.find((s) => s.name === 'db.query')!;
    assert.is(root.kind, 'server');
    assert.equal(root.status, { code: 'error', message: 'boom' });
    assert.is(root.attributes['http.status_code'], 500);
    assert.is(root.resource['service.name'], `checkout-${enc}`);
    assert.equal(root.scope.name, 'lookout-test');
    assert.is(root.scope.version, '1.2.3');
    assert.is(child.parentSpanId, root.spanId);
    assert.is(child.kind, 'client');
    assert.is(child.events.length, 1);
    assert.is(child.events[0]!.name, 'rows fetched');
    assert.is(child.events[0]!.attributes.rows, 3);
    assert.is(child.links.length, 1);
    assert.is(child.links[0]!.spanId, root.spanId);
    assert.is(child.links[0]!.attributes.why, 'test');
    assert.ok(root.endTimeUnixNano >= root.startTimeUnixNano && root.startTimeUnixNano > 1_600_000_000_000_000_000n);
  });
}

for (const [enc, Exporter] of [
  ['protobuf', MetricProto],
  ['json', MetricJson],
] as const) {
  test(`metrics over OTLP/HTTP ${enc} map to Prometheus series`, async () => {
    const exporter: PushMetricExporter = new Exporter({ url: `${srv.url}/ingester/otlp/v1/metrics`, headers });
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3600_000 });
    const svc = `api-${enc}`;
    const provider = new MeterProvider({
      resource: resourceFromAttributes({
        'service.name': svc,
        'service.namespace': 'shop',
        'service.instance.id': 'pod-1',
        'k8s.cluster.name': 'prod',
      }),
      readers: [reader],
      views: [{ instrumentName: 'payload.size', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } }],
    });
    const meter = provider.getMeter('m');
    meter.createCounter('http.server.requests', { unit: '{request}' }).add(5, { 'http.route': '/a' });
    meter.createUpDownCounter('queue.depth').add(-2);
    meter.createHistogram('http.server.duration', { unit: 's', description: 'request latency' }).record(0.3, { 'http.route': '/a' });
    meter.createGauge('cpu.utilization', { unit: '1' }).record(0.5);
    const exp = meter.createHistogram('payload.size', { unit: 'By' });
    for (const v of [1, 2, 4, 100, 1000]) exp.record(v);
    await reader.forceFlush();
    await provider.shutdown();

    const job = `shop/${svc}`;
    const counter = await select([eq('__name__', 'http_server_requests_total'), eq('job', job)]);
    assert.is(counter.length, 1, 'counter with _total');
    assert.is(counter[0]!.labels.instance, 'pod-1');
    assert.is(counter[0]!.labels.http_route, '/a');
    assert.is(counter[0]!.values[0], 5);
    assert.ok(counter[0]!.startTimestamps && counter[0]!.startTimestamps[0]! > 0, 'start timestamp kept');
    const updown = await select([eq('__name__', 'queue_depth'), eq('job', job)]);
    assert.is(updown[0]?.values[0], -2);
    const buckets = await select([eq('__name__', 'http_server_duration_seconds_bucket'), eq('job', job)]);
    assert.ok(buckets.length > 2, 'classic buckets');
    const inf = buckets.find((b) => b.labels.le === '+Inf')!;
    assert.is(inf.values[0], 1);
    // The JS SDK's default boundaries are 0, 5, 10, 25, ...
    const le5 = buckets.find((b) => b.labels.le === '5')!;
    assert.is(le5.values[0], 1);
    const le0 = buckets.find((b) => b.labels.le === '0')!;
    assert.is(le0.values[0], 0);
    const sum = await select([eq('__name__', 'http_server_duration_seconds_sum'), eq('job', job)]);
    assert.is(sum[0]?.values[0], 0.3);
    const count = await select([eq('__name__', 'http_server_duration_seconds_count'), eq('job', job)]);
    assert.is(count[0]?.values[0], 1);
    const gauge = await select([eq('__name__', 'cpu_utilization_ratio'), eq('job', job)]);
    assert.is(gauge[0]?.values[0], 0.5);
    const native = await select([eq('__name__', 'payload_size_bytes'), eq('job', job)]);
    assert.is(native.length, 1, 'exponential histogram stored as a native histogram');
    const h = native[0]!.histograms?.[0];
    assert.ok(h, 'histogram sample');
    assert.is(h!.count, 5);
    assert.is(h!.sum, 1107);
    assert.is(h!.positiveBuckets.reduce((a, b) => a + b, 0) + h!.zeroCount, 5);
    const info = await select([eq('__name__', 'target_info'), eq('job', job)]);
    assert.is(info.length, 1);
    assert.is(info[0]!.labels.k8s_cluster_name, 'prod');
    assert.is(info[0]!.labels.instance, 'pod-1');
    const md = await storage.metrics.metadata('http_server_duration_seconds');
    assert.equal(md.get('http_server_duration_seconds')?.[0], {
      metric: 'http_server_duration_seconds',
      type: 'histogram',
      help: 'request latency',
      unit: 's',
    });
  });
}

for (const [enc, Exporter] of [
  ['protobuf', LogProto],
  ['json', LogJson],
] as const) {
  test(`logs over OTLP/HTTP ${enc} become log records`, async () => {
    const exporter: LogRecordExporter = new Exporter({ url: `${srv.url}/ingester/otlp/v1/logs`, headers });
    const svc = `web-${enc}`;
    const provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': svc, 'host.name': 'node-7', 'cloud.region': 'eu-1' }),
      processors: [new SimpleLogRecordProcessor(exporter)],
    });
    const logger = provider.getLogger('app');
    logger.emit({
      severityNumber: SeverityNumber.WARN,
      severityText: 'WARN',
      body: 'disk almost full',
      attributes: { 'disk.free_mb': 12, user: { id: 7 }, ok: false },
    });
    logger.emit({ severityText: 'error', body: { structured: true, n: 1 } });
    await provider.forceFlush();
    await provider.shutdown();
    const recs = [];
    for await (const b of storage.logs.scan({ startNs: 0n, endNs: BigInt(Date.now() + 60_000) * 1_000_000n, matchers: [eq('service', svc)], order: 'asc' })) recs.push(...b.records);
    assert.is(recs.length, 2);
    const warn = recs.find((r) => r.message === 'disk almost full')!;
    assert.equal(
      { ...warn.labels },
      { svc_stream: 'logs', service: svc, host: 'node-7', cloud_region: 'eu-1', level: 'warn', source: 'otlp', ...pick(warn.labels, ['telemetry_sdk_language', 'telemetry_sdk_name', 'telemetry_sdk_version']) },
    );
    assert.is(warn.facets['disk.free_mb'], 12);
    assert.is(warn.facets.ok, false);
    assert.is(warn.facets.user, '{"id":7}');
    assert.ok(warn.timestampNs > 1_600_000_000_000_000_000n);
    const err = recs.find((r) => r.labels.level === 'error')!;
    assert.is(err.message, '{"structured":true,"n":1}');
  });
}

function pick(o: Record<string, string>, keys: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k]!;
  return out;
}

test.run();
