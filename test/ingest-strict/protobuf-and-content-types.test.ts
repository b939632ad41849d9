/**
 * Strictness of every protobuf receiver over HTTP (OTLP metrics/logs/traces/k8s, remote write
 * 1.0/2.0, agent series/traces): a valid message followed by invalid protobuf — field number
 * 0, wire types 3/7, a truncated varint, a truncated length-delimited field, a known field with
 * the wrong wire type — answers 400 "malformed" and writes nothing, not even the valid records
 * before the damage. Zero bytes stay a valid empty message (remote write 204, OTLP 200 with an
 * empty response). Also the shipper bulk content types: the shippers' and the official client's
 * accepted, text/plain refused.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import snappy from 'snappyjs';
import protobuf from 'protobufjs';
import { otlpRoot } from '../../plugins/ingest-otlp/codec.js';
import { loadProtoRoot, PROMETHEUS_PROTO_FILES } from '../../plugins/ingest-otlp/proto-root.js';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';
import { allEvents, allLogs, series, trace } from '../ingest-agents/store.js';

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
});
test.after(async () => {
  await srv.stop();
});

const otlp = otlpRoot();
const prom = loadProtoRoot(PROMETHEUS_PROTO_FILES);
const agent = (() => {
  const base = join(process.cwd(), 'proto', 'agent');
  const root = new protobuf.Root();
  root.resolvePath = (_o, t) => join(base, t);
  root.loadSync(['datadog/agentpayload/agent_payload.proto', 'datadog/trace/agent_payload.proto'], { keepCase: true });
  return root;
})();
const enc = (root: protobuf.Root, type: string, obj: Record<string, unknown>): Buffer => {
  const T = root.lookupType(type);
  return Buffer.from(T.encode(T.fromObject(obj)).finish());
};

const nowNs = BigInt(Date.now()) * 1_000_000n;
const nowMs = Date.now();

/** Trailing damage appended to a valid message; each must make the whole request 400. */
const DAMAGE: [string, number[]][] = [
  ['field number 0', [0x00, 0x00]],
  ['wire type 3 (group start)', [0x0b]],
  ['wire type 7', [0x0f]],
  ['truncated varint', [0x28, 0x80]],
  ['truncated length-delimited field', [0x2a, 0x05, 0x01]],
];

interface Case {
  name: string;
  path: string;
  headers: Record<string, string>;
  valid: Buffer;
  /** Tag byte of a known top-level length-delimited field, sent with wire type 0 instead. */
  wrongWireKnown: number[];
  compress?: (b: Buffer) => Buffer;
  emptyStatus?: number;
  stored(): Promise<number>;
}

const logsReq = (svc: string) => ({
  resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: svc } }] }, scopeLogs: [{ logRecords: [{ timeUnixNano: String(nowNs), severityNumber: 9, body: { stringValue: 'x' } }] }] }],
});
const OTLP_TRACE_ID = 'aa'.repeat(16);
const AGENT_TID = '65f0a1b200000001';

const CASES: Case[] = [
  {
    name: 'OTLP logs',
    path: '/otlp/v1/logs',
    headers: { 'content-type': 'application/x-protobuf' },
    valid: enc(otlp, 'opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest', logsReq('strict-logs')),
    wrongWireKnown: [0x08, 0x01],
    emptyStatus: 200,
    stored: async () => (await allLogs(srv)).filter((l) => l.labels.service === 'strict-logs').length,
  },
  {
    name: 'OTLP k8s events',
    path: '/otlp/k8s_events',
    headers: { 'content-type': 'application/x-protobuf' },
    valid: enc(otlp, 'opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest', {
      resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: String(nowNs), body: { stringValue: 'm' }, attributes: [{ key: 'k8s.event.reason', value: { stringValue: 'StrictReason' } }] }] }] }],
    }),
    wrongWireKnown: [0x08, 0x01],
    emptyStatus: 200,
    stored: async () => (await allEvents(srv)).filter((e) => e.labels.reason === 'StrictReason').length,
  },
  {
    name: 'OTLP traces',
    path: '/otlp/v1/traces',
    headers: { 'content-type': 'application/x-protobuf' },
    valid: enc(otlp, 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest', {
      resourceSpans: [
        {
          scopeSpans: [
            { spans: [{ traceId: Buffer.from(OTLP_TRACE_ID, 'hex'), spanId: Buffer.alloc(8, 1), name: 's', startTimeUnixNano: String(nowNs), endTimeUnixNano: String(nowNs + 1000n) }] },
          ],
        },
      ],
    }),
    wrongWireKnown: [0x08, 0x01],
    emptyStatus: 200,
    stored: async () => (await trace(srv, OTLP_TRACE_ID)).length,
  },
  {
    name: 'OTLP metrics',
    path: '/otlp/v1/metrics',
    headers: { 'content-type': 'application/x-protobuf' },
    valid: enc(otlp, 'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest', {
      resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'strict_otlp_gauge', gauge: { dataPoints: [{ timeUnixNano: String(nowNs), asDouble: 1 }] } }] }] }],
    }),
    wrongWireKnown: [0x08, 0x01],
    emptyStatus: 200,
    stored: async () => (await series(srv, 'strict_otlp_gauge')).length,
  },
  {
    name: 'remote write 1.0',
    path: '/write',
    headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', authorization: `Bearer ${INGEST_KEY}` },
    compress: (b) => Buffer.from(snappy.compress(b)),
    valid: enc(prom, 'prometheus.WriteRequest', { timeseries: [{ labels: [{ name: '__name__', value: 'strict_rw1' }], samples: [{ value: 1, timestamp: nowMs }] }] }),
    wrongWireKnown: [0x08, 0x01],
    emptyStatus: 204,
    stored: async () => (await series(srv, 'strict_rw1')).length,
  },
  {
    name: 'remote write 2.0',
    path: '/write',
    headers: { 'content-type': 'application/x-protobuf;proto=io.prometheus.write.v2.Request', 'content-encoding': 'snappy', authorization: `Bearer ${INGEST_KEY}` },
    compress: (b) => Buffer.from(snappy.compress(b)),
    valid: enc(prom, 'io.prometheus.write.v2.Request', { symbols: ['', '__name__', 'strict_rw2'], timeseries: [{ labelsRefs: [1, 2], samples: [{ value: 1, timestamp: nowMs }] }] }),
    wrongWireKnown: [0x20, 0x01],
    emptyStatus: 204,
    stored: async () => (await series(srv, 'strict_rw2')).length,
  },
  {
    name: 'agent series',
    path: '/api/v2/series',
    headers: { 'content-type': 'application/x-protobuf', 'dd-api-key': INGEST_KEY },
    valid: enc(agent, 'datadog.agentpayload.MetricPayload', { series: [{ metric: 'strict.agent', type: 3, points: [{ timestamp: Math.floor(nowMs / 1000), value: 1 }] }] }),
    wrongWireKnown: [0x08, 0x01],
    stored: async () => (await series(srv, 'strict_agent')).length,
  },
  {
    name: 'agent traces',
    path: '/api/v0.2/traces',
    headers: { 'content-type': 'application/x-protobuf', 'dd-api-key': INGEST_KEY },
    valid: enc(agent, 'datadog.trace.AgentPayload', {
      hostName: 'h',
      tracerPayloads: [
        { chunks: [{ spans: [{ service: 's', name: 'n', resource: 'r', traceID: 7, spanID: 1, start: String(nowNs), duration: 10, meta: { '_dd.p.tid': AGENT_TID } }] }] },
      ],
    }),
    wrongWireKnown: [0x08, 0x01],
    stored: async () => (await trace(srv, AGENT_TID + '0000000000000007')).length,
  },
];

const send = (c: Case, body: Buffer) =>
  fetch(srv.url + '/ingester' + c.path, { method: 'POST', body: c.compress ? c.compress(body) : body, headers: { 'svc-api-key': INGEST_KEY, ...c.headers } });

for (const c of CASES) {
  test(`${c.name}: invalid protobuf → 400 malformed, nothing written`, async () => {
    for (const [what, bytes] of [...DAMAGE, ['known field with the wrong wire type', c.wrongWireKnown] as [string, number[]]]) {
      const res = await send(c, Buffer.concat([c.valid, Buffer.from(bytes)]));
      assert.is(res.status, 400, `${c.name}, ${what}`);
      const text = Buffer.from(await res.arrayBuffer()).toString('latin1');
      assert.match(text, /malformed/i, `${c.name}, ${what}: ${text}`);
    }
    // 50 zero bytes: the case that used to be acknowledged.
    assert.is((await send(c, Buffer.alloc(50))).status, 400);
    assert.is(await c.stored(), 0, `${c.name}: nothing written`);
    // The same valid message alone is accepted, so the checks above tested the damage only.
    const ok = await send(c, c.valid);
    assert.ok(ok.status >= 200 && ok.status < 300, `${c.name}: valid → ${ok.status}`);
    assert.is(await c.stored(), 1);
  });
}

test('an empty body is a valid empty message: remote write 204, OTLP 200 with an empty response', async () => {
  for (const c of CASES.filter((x) => x.emptyStatus)) {
    const res = await send(c, Buffer.alloc(0));
    assert.is(res.status, c.emptyStatus, c.name);
    if (c.emptyStatus === 200) assert.is((await res.arrayBuffer()).byteLength, 0, c.name);
  }
});

test('OTLP logs: printf "\\x00\\x00" as application/x-protobuf → 400', async () => {
  const res = await fetch(srv.url + '/ingester/otlp/v1/logs', { method: 'POST', body: Buffer.from([0, 0]), headers: { 'content-type': 'application/x-protobuf', 'svc-api-key': INGEST_KEY } });
  assert.is(res.status, 400);
});

test('shipper bulk content types: x-ndjson, json and the 8.x client type accepted; text/plain refused', async () => {
  const BULK = srv.url + '/ingester/api/v1/shipper/_bulk';
  const body = (svc: string) => `{"create":{}}\n{"message":"m","service.name":"${svc}"}\n`;
  const types = ['application/x-ndjson', 'application/json', 'application/vnd.elasticsearch+x-ndjson; compatible-with=8', 'application/json; charset=UTF-8'];
  for (const [i, ct] of types.entries()) {
    const res = await fetch(BULK, { method: 'POST', body: body(`ct-ok-${i}`), headers: { 'content-type': ct, 'svc-api-key': INGEST_KEY } });
    assert.is(res.status, 200, ct);
  }
  for (const ct of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
    const res = await fetch(BULK, { method: 'POST', body: body('ct-bad'), headers: { 'content-type': ct, 'svc-api-key': INGEST_KEY } });
    assert.is(res.status, 400, ct);
    assert.match(await res.text(), /unsupported content type/);
  }
  const logs = await allLogs(srv);
  assert.is(logs.filter((l) => l.labels.service === 'ct-bad').length, 0);
  assert.is(logs.filter((l) => l.labels.service?.startsWith('ct-ok-')).length, types.length);
});

test.run();
