import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gzipSync } from 'node:zlib';
import { pack } from 'msgpackr';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';
import { allLogs } from './store.js';

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
});
test.after(async () => {
  await srv.stop();
});

const post = (path: string, body: string | Buffer, headers: Record<string, string>) =>
  fetch(srv.url + '/ingester' + path, { method: 'POST', body, headers: { 'svc-api-key': INGEST_KEY, ...headers } });

const logsOf = async (service: string) => (await allLogs(srv)).filter((l) => l.labels.service === service);

const k8s = {
  pod_name: 'api-7d9f',
  namespace_name: 'shop',
  container_name: 'api',
  host: 'node-3',
  labels: { app: 'fb-json' },
};

test('forwarder_a JSON array with Fluent Bit `date` (float seconds) and kubernetes metadata', async () => {
  const body = JSON.stringify([
    { date: 1763805605.25, log: 'GET / 200', level: 'WARNING', stream: 'stdout', kubernetes: k8s },
    { date: 1763805606.5, log: 'second', kubernetes: k8s },
  ]);
  const res = await post('/v1/forwarder_a', body, { 'content-type': 'application/json' });
  assert.is(res.status, 200);
  assert.equal(await res.json(), { accepted: 2 });
  const logs = await logsOf('fb-json');
  assert.is(logs.length, 2);
  const l = logs.find((x) => x.message === 'GET / 200')!;
  assert.equal(l.labels, { svc_stream: 'logs', level: 'warn', namespace: 'shop', pod: 'api-7d9f', container: 'api', host: 'node-3', service: 'fb-json' });
  assert.is(l.timestampNs, 1763805605250000000n);
  assert.equal(l.facets, { stream: 'stdout', 'kubernetes.labels.app': 'fb-json' });
});

test('forwarder_a msgpack: [EventTime, record], [[ts, meta], record] and bare maps with date; gzip', async () => {
  // EventTime ext type 0: uint32 seconds + uint32 nanoseconds.
  const ext = Buffer.alloc(10);
  ext[0] = 0xd7; // fixext 8
  ext[1] = 0x00; // type 0
  ext.writeUInt32BE(1763805600, 2);
  ext.writeUInt32BE(123456789, 6);
  const entry1 = Buffer.concat([Buffer.from([0x92]), ext, pack({ log: 'event-time', service: 'fb-mp' })]);
  const entry2 = pack([[1763805601.5, {}], { message: 'v2 format', service: 'fb-mp' }]);
  const entry3 = pack({ date: 1763805602, log: 'bare map', service: 'fb-mp', n: 3 });
  const body = gzipSync(Buffer.concat([entry1, entry2, entry3]));
  const res = await post('/v1/forwarder_a', body, { 'content-type': 'application/msgpack', 'content-encoding': 'gzip' });
  assert.is(res.status, 200);
  const logs = await logsOf('fb-mp');
  const by = Object.fromEntries(logs.map((l) => [l.message, l]));
  assert.is(by['event-time']!.timestampNs, 1763805600123456789n);
  assert.is(by['v2 format']!.timestampNs, 1763805601500000000n);
  assert.is(by['bare map']!.timestampNs, 1763805602000000000n);
  assert.equal(by['bare map']!.facets, { n: 3 });
});

test('forwarder_a ?date_key= and ISO dates (Vector/Logstash style @timestamp)', async () => {
  let res = await post('/v1/forwarder_a?date_key=ts_custom', JSON.stringify([{ ts_custom: '2025-11-22T10:00:05.123456789Z', message: 'custom', service: 'fb-date' }]), {
    'content-type': 'application/json',
  });
  assert.is(res.status, 200);
  res = await post('/v1/forwarder_a', JSON.stringify({ '@timestamp': '2025-11-22T10:00:06.5+01:00', message: 'logstash', service: 'fb-date' }), {
    'content-type': 'application/json',
  });
  assert.is(res.status, 200);
  const logs = await logsOf('fb-date');
  const by = Object.fromEntries(logs.map((l) => [l.message, l]));
  assert.is(by.custom!.timestampNs, 1763805605123456789n);
  assert.is(by.logstash!.timestampNs, 1763802006500000000n);
});

test('forwarder_b NDJSON (x-ndjson and json_lines sent as application/json)', async () => {
  const lines = '{"timestamp":"2025-11-22T10:00:00Z","message":"a","service":"fb-nd","severity":"error"}\n\n{"message":"b","service":"fb-nd"}\n';
  let res = await post('/v1/forwarder_b', lines, { 'content-type': 'application/x-ndjson' });
  assert.is(res.status, 200);
  assert.equal(await res.json(), { accepted: 2 });
  res = await post('/v1/forwarder_b', '{"date":1763805600,"log":"c","service":"fb-nd"}\n{"date":1763805601,"log":"d","service":"fb-nd"}', { 'content-type': 'application/json' });
  assert.is(res.status, 200);
  const logs = await logsOf('fb-nd');
  assert.equal(logs.map((l) => l.message).sort(), ['a', 'b', 'c', 'd']);
  assert.is(logs.find((l) => l.message === 'a')!.labels.level, 'error');
});

test('errors: malformed bodies write nothing; bad key; unsupported type', async () => {
  const before = (await allLogs(srv)).length;
  let res = await post('/v1/forwarder_b', '{"message":"ok"}\n{"message": nope}\n', { 'content-type': 'application/x-ndjson' });
  assert.is(res.status, 400);
  assert.match(await res.text(), /line 2/);
  res = await post('/v1/forwarder_a', '[{"log":"ok"}, "str"]', { 'content-type': 'application/json' });
  assert.is(res.status, 400);
  assert.match(await res.text(), /record 2 is not a JSON object/);
  res = await post('/v1/forwarder_a', '[{"log":"ok","date":"yesterday"}]', { 'content-type': 'application/json' });
  assert.is(res.status, 400);
  assert.match(await res.text(), /invalid timestamp/);
  res = await post('/v1/forwarder_a', Buffer.from([0xc1, 0x00]), { 'content-type': 'application/msgpack' });
  assert.is(res.status, 400);
  res = await post('/v1/forwarder_a', pack('just a string'), { 'content-type': 'application/msgpack' });
  assert.is(res.status, 400);
  res = await post('/v1/forwarder_a', '[{"log":"x"}]', { 'content-type': 'application/json', 'svc-api-key': 'bad' });
  assert.is(res.status, 400);
  res = await post('/v1/forwarder_a', '[{"log":"x"}]', { 'content-type': 'image/png' });
  assert.is(res.status, 400);
  assert.match(await res.text(), /unsupported content type/);
  // text/plain is not among SPEC.md's types for either route (acceptance audit).
  for (const path of ['/v1/forwarder_a', '/v1/forwarder_b']) {
    res = await post(path, '{"log":"x"}\n', { 'content-type': 'text/plain' });
    assert.is(res.status, 400, path);
    assert.match(await res.text(), /unsupported content type "text\/plain"/);
  }
  assert.is((await allLogs(srv)).length, before);
});

test.run();
