/**
 * OTLP/HTTP protocol details against a real server: both encodings and every Content-Encoding,
 * the OTLP JSON mapping's variants, partialSuccess, google.rpc.Status errors, Kubernetes events
 * and objects, and the ingest limits (400/413/429/503) with nothing written.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { deflateSync, gzipSync } from 'node:zlib';
import snappy from 'snappyjs';
import protobuf from 'protobufjs';
import { otlpRoot } from '../../plugins/ingest-otlp/codec.js';
import { Tokens } from '../../kernel/services.js';
import type { StorageBackend } from '../../kernel/storage.js';
import type { EventRecord, LogRecord } from '../../kernel/models.js';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';

const LogsReq = otlpRoot().lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest');
const LogsResp = otlpRoot().lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse');
const TraceReq = otlpRoot().lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const TraceResp = otlpRoot().lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');
const MetricsReq = otlpRoot().lookupType('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest');

let srv: TestServer;
let storage: StorageBackend;
test.before(async () => {
  srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
  storage = srv.lookout.kernel.get(Tokens.Storage);
});
test.after(async () => {
  await srv.stop();
});

const nowNs = BigInt(Date.now()) * 1_000_000n;
function logsPayload(marker: string, n = 1): Record<string, unknown> {
  return {
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc-' + marker } }] },
        scopeLogs: [{ logRecords: Array.from({ length: n }, (_, i) => ({ timeUnixNano: String(nowNs + BigInt(i)), severityNumber: 17, body: { stringValue: `${marker} ${i}` } })) }],
      },
    ],
  };
}
const logsProto = (o: Record<string, unknown>): Uint8Array => LogsReq.encode(LogsReq.fromObject(o)).finish();

async function logsOf(service: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const b of storage.logs.scan({ startNs: 0n, endNs: nowNs + 3_600_000_000_000n, matchers: [{ name: 'service', op: '=', value: service }], order: 'asc' })) out.push(...b.records);
  return out;
}
async function eventsOf(reason: string): Promise<EventRecord[]> {
  const out: EventRecord[] = [];
  for await (const b of storage.events.scan({ startNs: 0n, endNs: nowNs + 3_600_000_000_000n, matchers: [{ name: 'reason', op: '=', value: reason }], order: 'asc' })) out.push(...b.events);
  return out;
}

function post(base: string, path: string, body: Uint8Array | string, headers: Record<string, string>): Promise<Response> {
  return fetch(base + '/ingester' + path, { method: 'POST', body: typeof body === 'string' ? body : Buffer.from(body), headers: { 'svc-api-key': INGEST_KEY, ...headers } });
}

const zstdCli = spawnSync('zstd', ['--version'], { stdio: 'ignore' }).status === 0;
function zstd(b: Uint8Array): Buffer {
  const r = spawnSync('zstd', ['-q', '-c'], { input: b });
  if (r.status !== 0) throw new Error('zstd failed');
  return r.stdout;
}
if (!zstdCli) console.log('SKIP: zstd CLI not installed; the zstd Content-Encoding case is skipped');

const ENCODINGS: [string, ((b: Uint8Array) => Uint8Array) | undefined][] = [
  ['identity', (b) => b],
  ['gzip', (b) => gzipSync(b)],
  ['deflate', (b) => deflateSync(b)],
  ['snappy', (b) => snappy.compress(b)],
  ['zstd', zstdCli ? zstd : undefined],
];

for (const [enc, fn] of ENCODINGS) {
  for (const ct of ['application/x-protobuf', 'application/json']) {
    const name = `logs ${ct} with Content-Encoding ${enc}`;
    if (!fn) {
      test.skip(name, () => {});
      continue;
    }
    test(name, async () => {
      const marker = `${enc}-${ct.endsWith('json') ? 'json' : 'pb'}`;
      const raw = ct.endsWith('json') ? Buffer.from(JSON.stringify(logsPayload(marker))) : logsProto(logsPayload(marker));
      const res = await post(srv.url, '/otlp/v1/logs', fn(raw), { 'content-type': ct, ...(enc === 'identity' ? {} : { 'content-encoding': enc }) });
      assert.is(res.status, 200);
      assert.is(res.headers.get('content-type'), ct);
      const body = new Uint8Array(await res.arrayBuffer());
      if (ct.endsWith('json')) assert.equal(JSON.parse(Buffer.from(body).toString()), {});
      else assert.equal(LogsResp.toObject(LogsResp.decode(body)), {});
      const recs = await logsOf('svc-' + marker);
      assert.is(recs.length, 1);
      assert.is(recs[0]!.message, `${marker} 0`);
      assert.is(recs[0]!.labels.level, 'error');
      assert.is(recs[0]!.timestampNs, nowNs);
    });
  }
}

test('OTLP JSON variants: snake_case keys, enum names, int64 as numbers, hex ids', async () => {
  const traceId = '5b8efff798038103d269b633813fc60c';
  const body = {
    resource_spans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { string_value: 'json-variants' } }] },
        scope_spans: [
          {
            scope: { name: 'x' },
            spans: [
              {
                trace_id: traceId,
                span_id: 'eee19b7ec3c1b174',
                parent_span_id: '',
                name: 'op',
                kind: 'SPAN_KIND_CONSUMER',
                start_time_unix_nano: 1700000000000000000,
                end_time_unix_nano: '1700000000500000000',
                attributes: [{ key: 'n', value: { int_value: '42' } }, { key: 'arr', value: { array_value: { values: [{ bool_value: true }] } } }],
                status: { code: 'STATUS_CODE_OK' },
              },
              { traceId, spanId: 'eee19b7ec3c1b175', name: 'camel', kind: 3, startTimeUnixNano: '1700000000000000001', endTimeUnixNano: '1700000000000000002' },
            ],
          },
        ],
      },
    ],
  };
  const res = await post(srv.url, '/otlp/traces', JSON.stringify(body), { 'content-type': 'application/json' });
  assert.is(res.status, 200, await res.clone().text());
  const spans = await storage.traces.getTrace(traceId);
  assert.is(spans.length, 2);
  const a = spans.find((s) => s.name === 'op')!;
  assert.is(a.kind, 'consumer');
  assert.is(a.status.code, 'ok');
  assert.is(a.attributes.n, 42);
  assert.equal(a.attributes.arr, [true]);
  assert.is(a.startTimeUnixNano, 1700000000000000000n);
  assert.is(a.endTimeUnixNano, 1700000000500000000n);
  assert.is(spans.find((s) => s.name === 'camel')!.kind, 'client');
});

test('partialSuccess: invalid spans are rejected, the rest stored (protobuf and JSON)', async () => {
  const good = Buffer.from('0af7651916cd43dd8448eb211c80319c', 'hex');
  const req = {
    resourceSpans: [
      {
        scopeSpans: [
          {
            spans: [
              { traceId: good, spanId: Buffer.from('b7ad6b7169203331', 'hex'), name: 'ok', startTimeUnixNano: '1', endTimeUnixNano: '2' },
              { traceId: Buffer.from('00', 'hex'), spanId: Buffer.from('b7ad6b7169203332', 'hex'), name: 'bad' },
            ],
          },
        ],
      },
    ],
  };
  const res = await post(srv.url, '/otlp/v1/traces', TraceReq.encode(TraceReq.fromObject(req)).finish(), { 'content-type': 'application/x-protobuf' });
  assert.is(res.status, 200);
  const out = TraceResp.toObject(TraceResp.decode(new Uint8Array(await res.arrayBuffer())), { longs: Number });
  assert.is(out.partialSuccess.rejectedSpans, 1);
  assert.match(out.partialSuccess.errorMessage, /invalid trace id/);
  assert.is((await storage.traces.getTrace(good.toString('hex'))).length, 1);

  const delta = {
    resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'd', sum: { aggregationTemporality: 'AGGREGATION_TEMPORALITY_DELTA', isMonotonic: true, dataPoints: [{ asInt: '1', timeUnixNano: String(nowNs) }] } }] }] }],
  };
  const r2 = await post(srv.url, '/otlp/v1/metrics', JSON.stringify(delta), { 'content-type': 'application/json' });
  assert.is(r2.status, 200);
  const j = (await r2.json()) as { partialSuccess: { rejectedDataPoints: string; errorMessage: string } };
  assert.is(j.partialSuccess.rejectedDataPoints, '1');
  assert.match(j.partialSuccess.errorMessage, /delta temporality/);
});

test('metrics: summaries, staleness flag, name normalisation and label sanitising', async () => {
  const t = String(nowNs);
  const req = {
    resourceMetrics: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'sumry' } }] },
        scopeMetrics: [
          {
            metrics: [
              {
                name: 'rpc.duration',
                unit: 'ms',
                summary: { dataPoints: [{ timeUnixNano: t, count: '4', sum: 10, quantileValues: [{ quantile: 0.5, value: 2 }, { quantile: 0.99, value: 5 }], attributes: [{ key: '0weird.key-name', value: { stringValue: 'v' } }] }] },
              },
              { name: 'http.server.active_requests', unit: '{request}', gauge: { dataPoints: [{ timeUnixNano: t, asInt: '3', flags: 1 }] } },
            ],
          },
        ],
      },
    ],
  };
  const res = await post(srv.url, '/otlp/metrics', MetricsReq.encode(MetricsReq.fromObject(req)).finish(), { 'content-type': 'application/x-protobuf' });
  assert.is(res.status, 200);
  const sel = async (name: string) => {
    const out = [];
    for await (const s of storage.metrics.select([{ name: '__name__', op: '=', value: name }, { name: 'job', op: '=', value: 'sumry' }], 0, Date.now() + 3600_000)) out.push(s);
    return out;
  };
  const q = await sel('rpc_duration_milliseconds');
  assert.equal(q.map((s) => s.labels.quantile).sort(), ['0.5', '0.99']);
  assert.is(q[0]!.labels.key_0weird_key_name, 'v');
  assert.is((await sel('rpc_duration_milliseconds_count'))[0]!.values[0], 4);
  assert.is((await sel('rpc_duration_milliseconds_sum'))[0]!.values[0], 10);
  const stale = await sel('http_server_active_requests');
  assert.ok(Number.isNaN(stale[0]!.values[0]), 'NoRecordedValue flag becomes a staleness marker');
});

test('k8s events (k8seventsreceiver shape) and objects (k8sobjectsreceiver watch shape)', async () => {
  const ev = {
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'k8s.object.kind', value: { stringValue: 'Pod' } }, { key: 'k8s.object.name', value: { stringValue: 'web-1' } }, { key: 'k8s.object.uid', value: { stringValue: 'u-1' } }] },
        scopeLogs: [
          {
            logRecords: [
              {
                timeUnixNano: String(nowNs),
                severityText: 'Warning',
                severityNumber: 13,
                body: { stringValue: 'Back-off restarting failed container' },
                attributes: [
                  { key: 'k8s.event.reason', value: { stringValue: 'BackOffTest' } },
                  { key: 'k8s.event.uid', value: { stringValue: 'e-1' } },
                  { key: 'k8s.namespace.name', value: { stringValue: 'shop' } },
                  { key: 'k8s.event.count', value: { intValue: 4 } },
                ],
              },
            ],
          },
        ],
      },
    ],
  };
  assert.is((await post(srv.url, '/otlp/k8s_events', logsProto(ev), { 'content-type': 'application/x-protobuf' })).status, 200);
  const [e] = await eventsOf('BackOffTest');
  assert.ok(e);
  assert.equal({ ...e!.labels }, { svc_stream: 'events', source: 'kubernetes', namespace: 'shop', kind: 'Pod', reason: 'BackOffTest', type: 'Warning' });
  assert.is(e!.title, 'BackOffTest: Pod/web-1');
  assert.is(e!.text, 'Back-off restarting failed container');
  assert.is(e!.attributes['k8s.event.count'], 4);

  const obj = {
    resourceLogs: [
      {
        scopeLogs: [
          {
            logRecords: [
              {
                observedTimeUnixNano: String(nowNs),
                body: {
                  kvlistValue: {
                    values: [
                      { key: 'type', value: { stringValue: 'ADDED' } },
                      {
                        key: 'object',
                        value: {
                          kvlistValue: {
                            values: [
                              { key: 'kind', value: { stringValue: 'Event' } },
                              { key: 'reason', value: { stringValue: 'ScheduledTest' } },
                              { key: 'type', value: { stringValue: 'Normal' } },
                              { key: 'message', value: { stringValue: 'Successfully assigned shop/web-2 to node-1' } },
                              { key: 'metadata', value: { kvlistValue: { values: [{ key: 'namespace', value: { stringValue: 'shop' } }, { key: 'uid', value: { stringValue: 'e-2' } }] } } },
                              { key: 'involvedObject', value: { kvlistValue: { values: [{ key: 'kind', value: { stringValue: 'Pod' } }, { key: 'name', value: { stringValue: 'web-2' } }] } } },
                            ],
                          },
                        },
                      },
                    ],
                  },
                },
                attributes: [{ key: 'event.domain', value: { stringValue: 'k8s' } }],
              },
            ],
          },
        ],
      },
    ],
  };
  assert.is((await post(srv.url, '/otlp/k8s_objects', JSON.stringify(obj), { 'content-type': 'application/json' })).status, 200);
  const [o] = await eventsOf('ScheduledTest');
  assert.ok(o);
  assert.is(o!.title, 'ScheduledTest: Pod/web-2');
  assert.is(o!.text, 'Successfully assigned shop/web-2 to node-1');
  assert.is(o!.labels.type, 'Normal');
  assert.is(o!.labels.namespace, 'shop');
  assert.is(o!.timestampNs, nowNs);
  assert.is(o!.attributes.action, 'ADDED');
});

test('errors: bad key, malformed (protobuf and JSON), unsupported type; google.rpc.Status; nothing written', async () => {
  const good = logsProto(logsPayload('never'));
  assert.is((await post(srv.url, '/otlp/v1/logs', good, { 'content-type': 'application/x-protobuf', 'svc-api-key': 'nope' })).status, 400);
  const noKey = await fetch(srv.url + '/ingester/otlp/v1/logs', { method: 'POST', body: Buffer.from(good), headers: { 'content-type': 'application/x-protobuf' } });
  assert.is(noKey.status, 400);

  const truncated = good.slice(0, good.length - 3);
  const r1 = await post(srv.url, '/otlp/v1/logs', truncated, { 'content-type': 'application/x-protobuf' });
  assert.is(r1.status, 400);
  assert.is(r1.headers.get('content-type'), 'application/x-protobuf');
  const st = decodeStatus(new Uint8Array(await r1.arrayBuffer()));
  assert.is(st.code, 3);
  assert.match(st.message, /malformed OTLP protobuf/);

  const r2 = await post(srv.url, '/otlp/v1/logs', '{"resourceLogs": [', { 'content-type': 'application/json' });
  assert.is(r2.status, 400);
  const j = (await r2.json()) as { code: number; message: string };
  assert.is(j.code, 3);
  assert.match(j.message, /malformed OTLP JSON/);

  const r3 = await post(srv.url, '/otlp/v1/traces', JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'zz' }] }] }] }), { 'content-type': 'application/json' });
  assert.is(r3.status, 400);
  assert.match(((await r3.json()) as { message: string }).message, /traceId/);

  const r4 = await post(srv.url, '/otlp/v1/logs', 'hello', { 'content-type': 'text/plain' });
  assert.is(r4.status, 400);
  assert.match(decodeStatus(new Uint8Array(await r4.arrayBuffer())).message, /unsupported content type/);
  assert.equal(await logsOf('svc-never'), []);
});

function decodeStatus(b: Uint8Array): { code: number; message: string } {
  const r = protobuf.Reader.create(b);
  const out = { code: 0, message: '' };
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag === 8) out.code = r.int32();
    else if (tag === 18) out.message = r.string();
    else r.skipType(tag & 7);
  }
  return out;
}

test('limits: 413 over maxBodyBytes (raw and gzip bomb), 503 past ingestMaxConcurrent', async () => {
  const lim = await startTestServer({ limits: { maxBodyBytes: 64 * 1024, ingestMaxConcurrent: 1 } });
  try {
    const big = logsProto(logsPayload('big', 10000));
    assert.ok(big.length > 64 * 1024);
    const r1 = await post(lim.url, '/otlp/v1/logs', big, { 'content-type': 'application/x-protobuf' });
    assert.is(r1.status, 413);
    const bomb = gzipSync(Buffer.alloc(20 * 1024 * 1024));
    assert.ok(bomb.length < 64 * 1024);
    const r2 = await post(lim.url, '/otlp/v1/logs', bomb, { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' });
    assert.is(r2.status, 413);

    // Hold one request in flight (headers sent, body unfinished), then a second one is refused.
    const url = new URL(lim.url + '/ingester/otlp/v1/logs');
    const body = Buffer.from(logsProto(logsPayload('held')));
    const held = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/x-protobuf', 'content-length': body.length } });
    const heldDone = new Promise<number>((resolve, reject) => {
      held.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      held.on('error', reject);
    });
    held.write(body.subarray(0, 5));
    held.flushHeaders();
    await new Promise((r) => setTimeout(r, 200));
    const r3 = await post(lim.url, '/otlp/v1/logs', logsProto(logsPayload('refused')), { 'content-type': 'application/x-protobuf' });
    assert.is(r3.status, 503);
    assert.ok(r3.headers.get('retry-after'));
    assert.is(decodeStatus(new Uint8Array(await r3.arrayBuffer())).code, 14);
    held.end(body.subarray(5));
    assert.is(await heldDone, 200);
    const lst = lim.lookout.kernel.get(Tokens.Storage);
    const names: string[] = [];
    for await (const b of lst.logs.scan({ startNs: 0n, endNs: nowNs + 3_600_000_000_000n })) for (const r of b.records) names.push(r.labels.service!);
    assert.equal(names, ['svc-held']);
  } finally {
    await lim.stop();
  }
});

test('limits: 429 past ingestRatePerSecond with Retry-After', async () => {
  const rate = await startTestServer({ limits: { ingestRatePerSecond: 1 } });
  try {
    const b = logsProto(logsPayload('rate'));
    const statuses: number[] = [];
    let retry: string | null = null;
    for (let i = 0; i < 3; i++) {
      const r = await post(rate.url, '/otlp/v1/logs', b, { 'content-type': 'application/x-protobuf' });
      statuses.push(r.status);
      if (r.status === 429) retry = r.headers.get('retry-after');
      await r.arrayBuffer();
    }
    assert.is(statuses[0], 200);
    assert.ok(statuses.includes(429), `statuses ${statuses}`);
    assert.ok(retry);
    const names: LogRecord[] = [];
    for await (const x of rate.lookout.kernel.get(Tokens.Storage).logs.scan({ startNs: 0n, endNs: nowNs + 3_600_000_000_000n })) names.push(...x.records);
    assert.is(names.length, statuses.filter((s) => s === 200).length);
  } finally {
    await rate.stop();
  }
});

test.run();
