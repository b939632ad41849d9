/**
 * The vendor agent's code path, for real: an OpenTelemetry Collector with the vendor's Datadog
 * exporter (built by scripts/agents/build-otelcol-datadog.sh; the exporter is made of the
 * agent's serializer, trace writer and logs pipeline) runs
 * examples/agents/datadog-agent/otelcol-datadog-exporter.yaml against Lookout's agent-compatible
 * endpoints. OTLP data posted to the collector comes back over PromQL, SvcQL and the trace API.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { INGEST_KEY, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { agentBinary, b64ToHex, canIsolateNetwork, exampleConfig, getTrace, promQuery, queryLogs, startIsolatedAgent, waitFor, type RunningAgent } from './harness.js';

const VERSION = process.env.OTELCOL_DATADOG_VERSION ?? '0.155.0';
const bin = agentBinary(`otelcol-datadog-${VERSION}/otelcol-datadog`);

let srv: TestServer | undefined;
let agent: RunningAgent | undefined;
let otlpUrl = '';

const kv = (key: string, value: string | number) => ({
  key,
  value: typeof value === 'string' ? { stringValue: value } : Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value },
});
const resource = { attributes: [kv('service.name', 'dd-checkout'), kv('host.name', 'dd-web-1'), kv('deployment.environment', 'test')] };

async function postOtlp(signal: 'traces' | 'metrics' | 'logs', body: unknown): Promise<void> {
  const res = await fetch(`${otlpUrl}/v1/${signal}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.is(res.status, 200, `collector accepted ${signal}: ${await res.text()}`);
}

if (!bin) {
  console.log('SKIP: otelcol-datadog binary not built (run scripts/agents/build-otelcol-datadog.sh)');
  test.skip('datadog exporter → agent-compatible endpoints', () => {});
} else if (!canIsolateNetwork()) {
  console.log('SKIP: otelcol-datadog needs a network namespace (unshare -rn) to keep its cloud metadata probes on this machine');
  test.skip('datadog exporter → agent-compatible endpoints', () => {});
} else {
  test.before(async () => {
    srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
    const dir = tempDir('lookout-otelcol-dd-');
    const cfg = join(dir, 'config.yaml');
    writeFileSync(cfg, exampleConfig('datadog-agent/otelcol-datadog-exporter.yaml', [['0.0.0.0:4318', '127.0.0.1:4318']]));
    // Its own network namespace: the exporter probes cloud metadata services (169.254.169.254)
    // for the host name whatever its configuration says; there those probes go nowhere.
    const isolated = await startIsolatedAgent(bin, [
      `--config=${cfg}`,
      '--set=service::telemetry::metrics::level=none',
      '--set=processors::batch::timeout=200ms',
      '--set=exporters::datadog/lookout::hostname=lookout-test-host',
    ], {
      dir,
      env: { LOOKOUT_URL: srv.url, LOOKOUT_INGEST_KEY: INGEST_KEY, AWS_EC2_METADATA_DISABLED: 'true' },
      outPorts: [Number(new URL(srv.url).port)],
      inPorts: [4318],
    });
    agent = isolated;
    otlpUrl = `http://127.0.0.1:${isolated.port(4318)}`;
    await waitFor('the collector to listen', async () => {
      try {
        await fetch(otlpUrl + '/v1/logs', { signal: AbortSignal.timeout(2000) });
        return true;
      } catch {
        return undefined;
      }
    }, agent, 30_000);
  });
  test.after(async () => {
    await agent?.stop();
    await srv?.stop();
  });

  test('datadog exporter: logs arrive through /api/v2/logs with service, host, level and attributes', async () => {
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    await postOtlp('logs', {
      resourceLogs: [{
        resource,
        scopeLogs: [{ logRecords: [{ timeUnixNano: String(nowNs), severityNumber: 13, severityText: 'WARN', body: { stringValue: 'dd-marker disk almost full' }, attributes: [kv('disk.free_mb', 12)] }] }],
      }],
    });
    const logs = await waitFor('the log', async () => {
      const l = await queryLogs(srv!, '"dd-marker"');
      return l.length ? l : undefined;
    }, agent);
    assert.is(logs.length, 1);
    const l = logs[0]!;
    assert.is(l.message, 'dd-marker disk almost full');
    assert.is(l.labels.service, 'dd-checkout');
    assert.is(l.labels.host, 'dd-web-1');
    assert.is(l.labels.level, 'warn');
    assert.is(l.facets['disk.free_mb'], 12, 'attributes of the JSON message → facets');
    assert.is(l.facets['deployment.environment'], 'test');
    assert.is(l.facets.ddtags, undefined);
  });

  test('datadog exporter: gauges and counters arrive through /api/v2/series', async () => {
    // Cumulative sums become deltas in the exporter: the second point (same start) yields 5.
    const startNs = BigInt(Date.now() - 60_000) * 1_000_000n;
    for (const [i, v] of [[0, 10], [1, 15]] as const) {
      const t = BigInt(Date.now() - 2000 + i * 1000) * 1_000_000n;
      await postOtlp('metrics', {
        resourceMetrics: [{
          resource,
          scopeMetrics: [{
            metrics: [
              { name: 'dd.queue.depth', gauge: { dataPoints: [{ timeUnixNano: String(t), asDouble: 3.5 + i, attributes: [kv('queue', 'orders')] }] } },
              {
                name: 'dd.requests',
                sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: [{ startTimeUnixNano: String(startNs), timeUnixNano: String(t), asInt: String(v), attributes: [kv('route', '/pay')] }] },
              },
            ],
          }],
        }],
      });
      await new Promise((r) => setTimeout(r, 300));
    }
    const gauge = await waitFor('dd_queue_depth', async () => {
      const r = await promQuery(srv!, 'dd_queue_depth{queue="orders"}');
      return r.length && r[0]!.value[1] === '4.5' ? r : undefined;
    }, agent);
    assert.is(gauge[0]!.metric.host, 'dd-web-1');
    assert.is(gauge[0]!.metric.service, 'dd-checkout');
    const count = await waitFor('dd_requests', async () => {
      const r = await promQuery(srv!, 'dd_requests{route="/pay"}');
      return r.length ? r : undefined;
    }, agent);
    assert.is(count[0]!.value[1], '5');
  });

  test('datadog exporter: a 128-bit trace arrives through /api/v0.2/traces with its full id', async () => {
    const traceId = randomBytes(16).toString('hex');
    const root = randomBytes(8).toString('hex');
    const child = randomBytes(8).toString('hex');
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    await postOtlp('traces', {
      resourceSpans: [{
        resource,
        scopeSpans: [{
          spans: [
            { traceId, spanId: root, name: 'POST /pay', kind: 2, startTimeUnixNano: String(nowNs - 50_000_000n), endTimeUnixNano: String(nowNs), attributes: [kv('http.method', 'POST'), kv('http.route', '/pay')] },
            { traceId, spanId: child, parentSpanId: root, name: 'charge card', kind: 3, startTimeUnixNano: String(nowNs - 40_000_000n), endTimeUnixNano: String(nowNs - 10_000_000n), status: { code: 2, message: 'declined' } },
          ],
        }],
      }],
    });
    const t = await waitFor(`trace ${traceId}`, async () => {
      const r = await getTrace(srv!, traceId);
      return r && r.spans.length >= 2 ? r : undefined;
    }, agent);
    assert.is(t.spans.length, 2);
    assert.ok(t.spans.every((s) => b64ToHex(s.traceId) === traceId), 'the 128-bit trace id survives (_dd.p.tid)');
    const c = t.spans.find((s) => b64ToHex(s.spanId) === child)!;
    assert.ok(c, 'child span stored');
    assert.is(b64ToHex(c.parentSpanId!), root);
    assert.is(t.resources[0]!['service.name'], 'dd-checkout');
  });
}

test.run();
