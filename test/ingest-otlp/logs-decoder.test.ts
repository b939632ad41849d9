/**
 * OTLP logs protobuf goes through a hand-written decoder (plugins/ingest-otlp/logs-decode.ts),
 * OTLP JSON through protobufjs and mapLogs: the same request in both encodings, sent over HTTP
 * to a real server, must store identical records (every AnyValue kind, ids, severities, both
 * timestamps, resource attributes, a resource after its scope logs on the wire).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { otlpRoot } from '../../plugins/ingest-otlp/codec.js';
import { Tokens } from '../../kernel/services.js';
import type { LogRecord } from '../../kernel/models.js';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';

const T = otlpRoot().lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest');
let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
});
test.after(async () => {
  await srv.stop();
});

const t0 = BigInt(Date.now()) * 1_000_000n;
function request(svc: string) {
  return {
    resourceLogs: [
      {
        resource: {
          attributes: [
            { key: 'service.name', value: { stringValue: svc } },
            { key: 'host.name', value: { stringValue: 'h1' } },
            { key: 'k8s.pod.name', value: { stringValue: 'pod-1' } },
            { key: 'replicas', value: { intValue: 3 } },
            { key: 'empty', value: {} },
          ],
        },
        scopeLogs: [
          {
            scope: { name: 'sc', version: '1', attributes: [{ key: 'a', value: { stringValue: 'b' } }] },
            logRecords: [
              {
                timeUnixNano: String(t0),
                severityNumber: 13,
                severityText: 'WARN',
                body: { stringValue: 'héllo wörld, a body longer than thirty-two bytes' },
                attributes: [
                  { key: 'http.method', value: { stringValue: 'GET' } },
                  { key: 'neg', value: { intValue: -7 } },
                  { key: 'ratio', value: { doubleValue: 1.5 } },
                  { key: 'ok', value: { boolValue: false } },
                  { key: 'kv', value: { kvlistValue: { values: [{ key: 'x', value: { intValue: 1 } }, { key: 'n', value: {} }] } } },
                  { key: 'list', value: { arrayValue: { values: [{ stringValue: 'a' }, { doubleValue: 2 }] } } },
                  { key: 'raw', value: { bytesValue: Buffer.from('hi').toString('base64') } },
                  { key: 'blank', value: { stringValue: '' } },
                  { key: 'novalue' },
                ],
                traceId: 'ab'.repeat(16),
                spanId: '0c'.repeat(8),
                eventName: 'ev',
                flags: 1,
              },
              { observedTimeUnixNano: String(t0 + 1n), severityText: 'Warning2', body: { kvlistValue: { values: [{ key: 'm', value: { doubleValue: 2 } }] } } },
              { timeUnixNano: String(t0 + 2n), severityNumber: 21, body: { intValue: 3 } },
              { timeUnixNano: String(t0 + 3n), body: { arrayValue: { values: [{ stringValue: 'z' }, { boolValue: true }] } } },
            ],
          },
        ],
      },
    ],
  };
}

function protobufOf(o: ReturnType<typeof request>): Buffer {
  // protobufjs' fromObject reads ids as base64; the OTLP JSON mapping sends hex.
  const clone = JSON.parse(JSON.stringify(o)) as ReturnType<typeof request>;
  for (const r of clone.resourceLogs[0]!.scopeLogs[0]!.logRecords as Record<string, unknown>[]) {
    if (typeof r.traceId === 'string') r.traceId = Buffer.from(r.traceId, 'hex');
    if (typeof r.spanId === 'string') r.spanId = Buffer.from(r.spanId, 'hex');
  }
  const encoded = Buffer.from(T.encode(T.fromObject(clone)).finish());
  // Move the resource (field 1, first on the wire) after the scope logs: protobuf allows any order.
  const rlStart = 1 + lenBytes(encoded, 1);
  const inner = encoded.subarray(rlStart);
  const resLen = inner[1]!; // the test resource is < 128 bytes
  const resource = inner.subarray(0, 2 + resLen);
  const rest = inner.subarray(2 + resLen);
  return Buffer.concat([encoded.subarray(0, rlStart), rest, resource]);
}
function lenBytes(b: Buffer, at: number): number {
  let n = 0;
  while (b[at + n]! & 0x80) n++;
  return n + 1;
}

async function stored(svc: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  const storage = srv.lookout.kernel.get(Tokens.Storage);
  for await (const b of storage.logs.scan({ startNs: 0n, endNs: t0 + 3_600_000_000_000n, matchers: [{ name: 'service', op: '=', value: svc }], order: 'asc' })) out.push(...b.records);
  return out;
}

test('protobuf (hand decoder) and JSON (protobufjs) store identical records', async () => {
  const post = (body: string | Buffer, ct: string) =>
    fetch(srv.url + '/ingester/otlp/v1/logs', { method: 'POST', body, headers: { 'content-type': ct, 'svc-api-key': INGEST_KEY } });
  const rp = await post(protobufOf(request('dec-pb')), 'application/x-protobuf');
  assert.is(rp.status, 200);
  const rj = await post(JSON.stringify(request('dec-json')), 'application/json');
  assert.is(rj.status, 200);
  const pb = await stored('dec-pb');
  const js = await stored('dec-json');
  assert.is(pb.length, 4);
  const norm = (l: LogRecord) => ({ ...l, labels: { ...l.labels, service: 'x' } });
  assert.equal(pb.map(norm), js.map(norm));
  const first = pb.find((l) => l.timestampNs === t0)!;
  assert.is(first.labels.level, 'warn');
  assert.is(first.labels.k8s_pod_name, 'pod-1');
  assert.is(first.facets.trace_id, 'ab'.repeat(16));
  assert.is(first.facets.neg, -7);
  assert.is(first.facets.kv, '{"x":1,"n":null}');
  assert.is(pb.find((l) => l.timestampNs === t0 + 1n)!.labels.level, 'warn');
  assert.is(pb.find((l) => l.timestampNs === t0 + 2n)!.message, '3');
});

test.run();
