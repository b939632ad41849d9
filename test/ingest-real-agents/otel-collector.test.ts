/**
 * The real OpenTelemetry Collector (built by scripts/agents/build-otelcol.sh with the
 * collector's builder) runs examples/agents/otel-collector/config.yaml: OTLP traces, metrics and
 * logs posted to its receiver, and lines of a tailed file (filelog receiver), are exported by its
 * otlphttp exporter to Lookout — once with `encoding: proto`, once with `encoding: json` — and
 * read back over PromQL, SvcQL (GraphQL) and the trace-by-id API. remote-write.yaml (the contrib
 * prometheusremotewrite exporter) is run the same way for metrics.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { INGEST_KEY, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import {
  agentBinary,
  b64ToHex,
  exampleConfig,
  freePort,
  getTrace,
  promMetadata,
  promQuery,
  queryLogs,
  startAgent,
  waitFor,
  type RunningAgent,
} from './harness.js';

const VERSION = process.env.OTELCOL_VERSION ?? '0.160.0';
const bin = agentBinary(`otelcol-${VERSION}/otelcol-lookout`);

let srv: TestServer | undefined;
const agents: RunningAgent[] = [];

interface Collector {
  agent: RunningAgent;
  otlpUrl: string;
}

/** Starts the collector on an example config; the receivers listen on free loopback ports. */
async function startCollector(configFile: string, encoding: 'proto' | 'json', service: string): Promise<Collector> {
  const dir = tempDir('lookout-otelcol-');
  mkdirSync(join(dir, 'app'));
  writeFileSync(join(dir, 'app', 'app.log'), Array.from({ length: 20 }, (_, i) => `${service} file line ${i}\n`).join(''));
  const httpPort = await freePort();
  let text = exampleConfig(`otel-collector/${configFile}`, [['0.0.0.0:4318', `127.0.0.1:${httpPort}`]]);
  if (configFile === 'config.yaml') {
    text = text
      .replace('0.0.0.0:4317', `127.0.0.1:${await freePort()}`)
      .replace('/var/log/app/*.log', join(dir, 'app', '*.log'))
      .replace('service.name: app', `service.name: ${service}-file`);
    if (!text.includes('encoding: proto')) throw new Error('config.yaml has no `encoding: proto` line');
    text = text.replace('encoding: proto', `encoding: ${encoding}`);
  }
  const cfg = join(dir, 'config.yaml');
  writeFileSync(cfg, text);
  const agent = startAgent(bin!, [
    `--config=${cfg}`,
    // Test-only: no internal telemetry endpoint (it would bind a fixed port), short batches.
    '--set=service::telemetry::metrics::level=none',
    ...(configFile === 'config.yaml' ? ['--set=processors::batch::timeout=200ms'] : []),
  ], { env: { LOOKOUT_URL: srv!.url, LOOKOUT_INGEST_KEY: INGEST_KEY } });
  agents.push(agent);
  const otlpUrl = `http://127.0.0.1:${httpPort}`;
  await waitFor('the collector to listen', async () => {
    try {
      await fetch(otlpUrl + '/v1/logs', { method: 'GET', signal: AbortSignal.timeout(2000) });
      return true;
    } catch {
      return undefined;
    }
  }, agent, 30_000);
  return { agent, otlpUrl };
}

const kv = (key: string, value: string | number | boolean) => ({
  key,
  value: typeof value === 'string' ? { stringValue: value } : typeof value === 'boolean' ? { boolValue: value } : Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value },
});

async function postOtlp(c: Collector, signal: 'traces' | 'metrics' | 'logs', body: unknown): Promise<void> {
  const res = await fetch(`${c.otlpUrl}/v1/${signal}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.is(res.status, 200, `collector accepted ${signal}: ${await res.text()}`);
}

function resource(service: string) {
  return { attributes: [kv('service.name', service), kv('service.instance.id', 'i-1'), kv('host.name', 'web-1'), kv('deployment.environment', 'test')] };
}

async function sendAll(c: Collector, service: string, traceId: string): Promise<void> {
  const nowNs = BigInt(Date.now()) * 1_000_000n;
  const root = randomBytes(8).toString('hex');
  const child = randomBytes(8).toString('hex');
  await postOtlp(c, 'traces', {
    resourceSpans: [{
      resource: resource(service),
      scopeSpans: [{
        scope: { name: 'real-agent-test', version: '1.0' },
        spans: [
          {
            traceId, spanId: root, name: 'GET /orders', kind: 2,
            startTimeUnixNano: String(nowNs - 50_000_000n), endTimeUnixNano: String(nowNs),
            attributes: [kv('http.route', '/orders'), kv('http.status_code', 200)],
            status: { code: 1 },
          },
          {
            traceId, spanId: child, parentSpanId: root, name: 'SELECT orders', kind: 3,
            startTimeUnixNano: String(nowNs - 40_000_000n), endTimeUnixNano: String(nowNs - 10_000_000n),
            attributes: [kv('db.system', 'postgresql')],
            events: [{ timeUnixNano: String(nowNs - 20_000_000n), name: 'retry', attributes: [kv('attempt', 2)] }],
            links: [{ traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') }],
            status: { code: 2, message: 'deadlock' },
          },
        ],
      }],
    }],
  });
  const start = String(nowNs - 60_000_000_000n);
  await postOtlp(c, 'metrics', {
    resourceMetrics: [{
      resource: resource(service),
      scopeMetrics: [{
        metrics: [
          {
            name: 'demo.requests', unit: '1', description: 'requests served',
            sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: [{ startTimeUnixNano: start, timeUnixNano: String(nowNs), asInt: '42', attributes: [kv('route', '/orders')] }] },
          },
          { name: 'demo.queue.depth', gauge: { dataPoints: [{ timeUnixNano: String(nowNs), asDouble: 3.5 }] } },
          {
            name: 'demo.latency', unit: 's',
            histogram: {
              aggregationTemporality: 2,
              dataPoints: [{ startTimeUnixNano: start, timeUnixNano: String(nowNs), count: '10', sum: 2.5, bucketCounts: ['4', '5', '1'], explicitBounds: [0.1, 0.5] }],
            },
          },
        ],
      }],
    }],
  });
  await postOtlp(c, 'logs', {
    resourceLogs: [{
      resource: resource(service),
      scopeLogs: [{
        logRecords: [{
          timeUnixNano: String(nowNs), severityNumber: 17, severityText: 'ERROR',
          body: { stringValue: `${service} payment failed` },
          attributes: [kv('order.id', 'o-7'), kv('amount', 12.5)],
          traceId, spanId: root,
        }],
      }],
    }],
  });
}

async function checkEverything(c: Collector, service: string, traceId: string): Promise<void> {
  const t = await waitFor(`trace ${traceId}`, () => getTrace(srv!, traceId), c.agent);
  const names = t.spans.map((s) => s.name).sort();
  assert.equal(names, ['GET /orders', 'SELECT orders']);
  const db = t.spans.find((s) => s.name === 'SELECT orders')!;
  assert.is(b64ToHex(db.parentSpanId!), b64ToHex(t.spans.find((s) => s.name === 'GET /orders')!.spanId));
  assert.equal(db.events?.map((e) => e.name), ['retry']);
  assert.is(t.resources[0]!['service.name'], service);

  const counter = await waitFor('demo_requests_total', async () => {
    const r = await promQuery(srv!, `demo_requests_total{job="${service}"}`);
    return r.length ? r : undefined;
  }, c.agent);
  assert.is(counter[0]!.value[1], '42');
  assert.is(counter[0]!.metric.instance, 'i-1');
  assert.is(counter[0]!.metric.route, '/orders');
  const gauge = await promQuery(srv!, `demo_queue_depth{job="${service}"}`);
  assert.is(gauge[0]?.value[1], '3.5');
  const buckets = await promQuery(srv!, `demo_latency_seconds_bucket{job="${service}"}`);
  assert.equal(buckets.map((b) => [b.metric.le, b.value[1]]).sort(), [['+Inf', '10'], ['0.1', '4'], ['0.5', '9']]);
  const info = await promQuery(srv!, `target_info{job="${service}"}`);
  assert.is(info[0]?.metric.deployment_environment, 'test');
  assert.is((await promMetadata(srv!, 'demo_requests_total'))[0]?.type, 'counter');

  const logs = await waitFor('the OTLP log', async () => {
    const l = await queryLogs(srv!, `service=${service}`);
    return l.length ? l : undefined;
  }, c.agent);
  assert.is(logs.length, 1);
  assert.is(logs[0]!.message, `${service} payment failed`);
  assert.is(logs[0]!.labels.level, 'error');
  assert.is(logs[0]!.labels.host, 'web-1');
  assert.is(logs[0]!.facets['order.id'], 'o-7');
  assert.is(logs[0]!.facets.amount, 12.5);
  assert.is(logs[0]!.facets.trace_id, traceId);

  const fileLines = await waitFor('the tailed file lines', async () => {
    const l = await queryLogs(srv!, `service=${service}-file`);
    return l.length >= 20 ? l : undefined;
  }, c.agent);
  assert.is(fileLines.length, 20);
  assert.ok(fileLines.some((l) => l.message === `${service} file line 7`));
  assert.not.match(c.agent.log(), /Exporting failed/i);
}

if (!bin) {
  console.log('SKIP: otel-collector binary not built (run scripts/agents/build-otelcol.sh)');
  test.skip('otel collector → OTLP/HTTP', () => {});
} else {
  test.before(async () => {
    srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
  });
  test.after(async () => {
    for (const a of agents) await a.stop();
    await srv?.stop();
  });

  for (const encoding of ['proto', 'json'] as const) {
    test(`otlphttp exporter, encoding ${encoding}: traces, metrics, logs and a tailed file arrive`, async () => {
      const service = `otelcol-${encoding}`;
      const c = await startCollector('config.yaml', encoding, service);
      const traceId = randomBytes(16).toString('hex');
      await sendAll(c, service, traceId);
      await checkEverything(c, service, traceId);
      await c.agent.stop();
    });
  }

  test('prometheusremotewrite exporter (remote-write.yaml): metrics arrive as remote write', async () => {
    const service = 'otelcol-rw';
    const c = await startCollector('remote-write.yaml', 'proto', service);
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    await postOtlp(c, 'metrics', {
      resourceMetrics: [{
        resource: resource(service),
        scopeMetrics: [{
          metrics: [
            {
              name: 'rw.requests', unit: '1', description: 'requests via remote write',
              sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: [{ startTimeUnixNano: String(nowNs - 60_000_000_000n), timeUnixNano: String(nowNs), asInt: '7', attributes: [kv('route', '/a')] }] },
            },
            { name: 'rw.temperature', unit: 'Cel', gauge: { dataPoints: [{ timeUnixNano: String(nowNs), asDouble: 21.5 }] } },
          ],
        }],
      }],
    });
    const counter = await waitFor('rw_requests_total', async () => {
      const r = await promQuery(srv!, `rw_requests_total{job="${service}"}`);
      return r.length ? r : undefined;
    }, c.agent);
    assert.is(counter[0]!.value[1], '7');
    assert.is(counter[0]!.metric.route, '/a');
    assert.is(counter[0]!.metric.instance, 'i-1');
    const gauge = await waitFor('rw_temperature', async () => {
      const r = await promQuery(srv!, `{__name__=~"rw_temperature.*", job="${service}"}`);
      return r.length ? r : undefined;
    }, c.agent);
    assert.is(gauge[0]!.value[1], '21.5');
    const info = await waitFor('target_info', async () => {
      const r = await promQuery(srv!, `target_info{job="${service}"}`);
      return r.length ? r : undefined;
    }, c.agent);
    assert.is(info[0]!.metric.host_name, 'web-1');
    assert.not.match(c.agent.log(), /Exporting failed/i);
    await c.agent.stop();
  });
}

test.run();
