import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gzipSync } from 'node:zlib';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';
import { series, seriesCount } from './store.js';

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
});
test.after(async () => {
  await srv.stop();
});

const T = 1763805600000;
const line = (metric: string, ts: number, value: Record<string, number>, dims: Record<string, string> = { InstanceId: 'i-1' }) =>
  JSON.stringify({
    metric_stream_name: 'lookout-stream',
    account_id: '123456789012',
    region: 'eu-west-1',
    namespace: 'AWS/EC2',
    metric_name: metric,
    dimensions: dims,
    timestamp: ts,
    value,
    unit: 'Percent',
  });

const b64 = (s: string) => Buffer.from(s).toString('base64');

const deliver = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(srv.url + '/ingester/cloud_stream', {
    method: 'POST',
    body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', 'x-amz-firehose-request-id': 'req-h', 'x-amz-firehose-access-key': INGEST_KEY, ...headers },
  });

test('delivery request with metric-stream JSON lines → series per statistic; answers {requestId, timestamp}', async () => {
  const rec1 = line('CPUUtilization', T, { max: 90, min: 10, sum: 150, count: 3 }) + '\n' + line('CPUUtilization', T + 60000, { max: 80, min: 20, sum: 100, count: 2 }) + '\n';
  const rec2 = line('NetworkIn', T, { sum: 1024, count: 1 }, { InstanceId: 'i-2', AutoScalingGroupName: 'asg' });
  const res = await deliver({ requestId: 'req-1', timestamp: T, records: [{ data: b64(rec1) }, { data: b64(rec2) }] }, { 'x-cloud-firehose-access-key': INGEST_KEY });
  assert.is(res.status, 200);
  const body = (await res.json()) as { requestId: string; timestamp: number };
  assert.is(body.requestId, 'req-1');
  assert.type(body.timestamp, 'number');
  const max = await series(srv, 'aws_ec2_cpu_utilization_max');
  assert.is(max.length, 1);
  assert.equal(max[0]!.labels, {
    __name__: 'aws_ec2_cpu_utilization_max',
    namespace: 'AWS/EC2',
    metric: 'CPUUtilization',
    statistic: 'max',
    region: 'eu-west-1',
    account_id: '123456789012',
    metric_stream_name: 'lookout-stream',
    instance_id: 'i-1',
  });
  assert.equal(max[0]!.samples, [
    [T, 90],
    [T + 60000, 80],
  ]);
  const net = await series(srv, 'aws_ec2_network_in_sum');
  assert.is(net[0]!.labels.auto_scaling_group_name, 'asg');
  assert.equal(net[0]!.samples, [[T, 1024]]);
});

test('gzip body with the X-Amz-Firehose-Access-Key header', async () => {
  const body = gzipSync(JSON.stringify({ requestId: 'req-2', timestamp: T, records: [{ data: b64(line('DiskReadOps', T, { sum: 5 })) }] }));
  const res = await deliver(body, { 'content-encoding': 'gzip' });
  assert.is(res.status, 200);
  assert.is((await series(srv, 'aws_ec2_disk_read_ops_sum')).length, 1);
});

test('errors answer {requestId, timestamp, errorMessage}; nothing written', async () => {
  const before = await seriesCount(srv);
  const bad = async (body: unknown, headers: Record<string, string> = {}, re: RegExp = /./) => {
    const res = await deliver(body, headers);
    assert.is(res.status, 400);
    const j = (await res.json()) as { requestId: string; errorMessage: string; timestamp: number };
    assert.is(j.requestId, 'req-h');
    assert.match(j.errorMessage, re);
  };
  await bad('{"requestId":', {}, /malformed JSON/);
  await bad({ requestId: 'r', timestamp: T, records: [{ data: b64(line('A', T, { sum: 1 })) }, { data: '%%%' }] }, {}, /record 2: "data" is not valid base64/);
  await bad({ requestId: 'r', timestamp: T, records: [{ data: b64(line('A', T, { sum: 1 }) + '\n{"namespace": "x"') }] }, {}, /record 1 line 2/);
  await bad({ requestId: 'r', timestamp: T, records: [{ data: b64('{"namespace":"AWS/EC2","metric_name":"X","timestamp":1,"value":{"max":"high"}}') }] }, {}, /statistic "max"/);
  await bad({ requestId: 'r', records: 'none' }, {}, /"records" must be an array/);
  const wrongType = await deliver('x', { 'content-type': 'text/csv' });
  assert.is(wrongType.status, 400);
  const noKey = await fetch(srv.url + '/ingester/cloud_stream', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  assert.is(noKey.status, 400);
  assert.is(await seriesCount(srv), before);
});

test.run();
