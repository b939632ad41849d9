import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gzipSync } from 'node:zlib';
import { Client } from '@elastic/elasticsearch';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';
import { allLogs } from './store.js';

let srv: TestServer;
let es: Client;
test.before(async () => {
  srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
  es = new Client({
    node: srv.url + '/ingester/api/v1/shipper',
    auth: { apiKey: Buffer.from(`shipper-id:${INGEST_KEY}`).toString('base64') },
  });
});
test.after(async () => {
  await es.close();
  await srv.stop();
});

const BULK = '/ingester/api/v1/shipper/_bulk';
const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
  fetch(srv.url + path, { method: 'POST', body, headers: { 'content-type': 'application/x-ndjson', 'svc-api-key': INGEST_KEY, ...headers } });

const logsOf = async (service: string) => (await allLogs(srv)).filter((l) => l.labels.service === service);

test('official client: info, license and cluster health see a search engine 8.x', async () => {
  const info = await es.info();
  assert.match(info.version.number, /^8\./);
  assert.is(info.tagline, 'You Know, for Search');
  const lic = await es.license.get();
  assert.is(lic.license.status, 'active');
  const health = await es.cluster.health();
  assert.is(health.status, 'green');
  const head = await fetch(srv.url + '/ingester/api/v1/shipper/', { method: 'HEAD', headers: { 'svc-api-key': INGEST_KEY } });
  assert.is(head.status, 200);
  assert.is(head.headers.get('x-elastic-product'), 'Elasticsearch');
});

test('official client: template, ILM and pipeline setup calls are acknowledged and remembered', async () => {
  assert.is(await es.indices.existsIndexTemplate({ name: 'filebeat-8.15.0' }), false);
  const put = await es.indices.putIndexTemplate({ name: 'filebeat-8.15.0', index_patterns: ['filebeat-*'], template: {} });
  assert.is(put.acknowledged, true);
  assert.is(await es.indices.existsIndexTemplate({ name: 'filebeat-8.15.0' }), true);
  const got = await es.indices.getIndexTemplate({ name: 'filebeat-8.15.0' });
  assert.is(got.index_templates[0]!.name, 'filebeat-8.15.0');
  assert.is((await es.ilm.putLifecycle({ name: 'filebeat', policy: { phases: {} } })).acknowledged, true);
  const pol = await es.ilm.getLifecycle({ name: 'filebeat' });
  assert.ok(pol.filebeat);
  assert.is((await es.ingest.putPipeline({ id: 'p1', processors: [] })).acknowledged, true);
});

test('official client bulk helper with ApiKey auth: every document stored', async () => {
  const docs = Array.from({ length: 500 }, (_, i) => ({
    '@timestamp': new Date(Date.UTC(2025, 10, 22, 10, 0, i % 60, 123)).toISOString(),
    message: `request ${i}`,
    log: { level: i % 10 === 0 ? 'ERROR' : 'info' },
    service: { name: 'bulk-helper' },
    host: { name: `web-${i % 3}` },
    http: { response: { status_code: 200 + (i % 2) } },
    'user.name': 'ana',
  }));
  const stats = await es.helpers.bulk({
    datasource: docs,
    onDocument: () => ({ index: { _index: 'logs-app-default' } }),
    flushBytes: 20_000,
  });
  assert.is(stats.total, 500);
  assert.is(stats.successful, 500);
  assert.is(stats.failed, 0);
  const logs = await logsOf('bulk-helper');
  assert.is(logs.length, 500);
  const l = logs.find((x) => x.message === 'request 10')!;
  assert.equal(l.labels, { svc_stream: 'logs', level: 'error', service: 'bulk-helper', host: 'web-1' });
  assert.equal(l.facets, { 'http.response.status_code': 200, 'user.name': 'ana', _index: 'logs-app-default' });
  assert.is(l.timestampNs, BigInt(Date.UTC(2025, 10, 22, 10, 0, 10, 123)) * 1_000_000n);
});

test('client.bulk: create succeeds, delete and update get per-item errors', async () => {
  const r = await es.bulk({
    operations: [
      { create: { _index: 'x', _id: 'c1' } },
      { message: 'created doc', service: { name: 'bulk-ops' } },
      { delete: { _index: 'x', _id: 'd1' } },
      { update: { _index: 'x', _id: 'u1' } },
      { doc: { a: 1 } },
    ],
  });
  assert.is(r.errors, true);
  assert.is(r.items.length, 3);
  assert.is(r.items[0]!.create!.status, 201);
  assert.is(r.items[0]!.create!._id, 'c1');
  assert.is(r.items[0]!.create!.result, 'created');
  assert.is(r.items[1]!.delete!.status, 400);
  assert.is(r.items[1]!.delete!.error!.type, 'illegal_argument_exception');
  assert.is(r.items[2]!.update!.status, 400);
  assert.is((await logsOf('bulk-ops')).length, 1);
});

test('raw bulk: <ignored>:<KEY> Svc-Api-Key form, gzip, index from the path, filter_path', async () => {
  const body = gzipSync('{"index":{}}\n{"message":"gz","service.name":"bulk-raw"}\n');
  const res = await post('/ingester/api/v1/shipper/my-index/_bulk?filter_path=errors,items.*.status', body, {
    'content-encoding': 'gzip',
    'svc-api-key': `ignored:${INGEST_KEY}`,
  });
  assert.is(res.status, 200);
  assert.is(res.headers.get('x-elastic-product'), 'Elasticsearch');
  assert.equal(await res.json(), { errors: false, items: [{ index: { status: 201 } }] });
  const logs = await logsOf('bulk-raw');
  assert.is(logs[0]!.facets._index, 'my-index');
});

test('errors: malformed line → 400 naming the line, nothing written; bad key; unsupported type', async () => {
  const before = (await allLogs(srv)).length;
  let res = await post(BULK, '{"index":{}}\n{"message":"ok","service.name":"bulk-bad"}\n{"index":{}}\n{"message": oops}\n');
  assert.is(res.status, 400);
  const err = (await res.json()) as { error: { type: string; reason: string }; status: number };
  assert.is(err.status, 400);
  assert.is(err.error.type, 'parse_exception');
  assert.match(err.error.reason, /line 4/);
  res = await post(BULK, '{"explode":{}}\n{}\n');
  assert.is(res.status, 400);
  assert.match(await res.text(), /expected one of \[create, delete, index, update\]/);
  res = await post(BULK, '{"index":{}}\n');
  assert.is(res.status, 400);
  res = await post(BULK, '{"index":{}}\n[1,2]\n');
  assert.is(res.status, 400);
  res = await post(BULK, '{"index":{}}\n{"message":"x"}\n', { 'svc-api-key': 'wrong' });
  assert.is(res.status, 400);
  res = await fetch(srv.url + BULK, { method: 'POST', body: '{"index":{}}\n{}\n', headers: { 'content-type': 'application/x-ndjson' } });
  assert.is(res.status, 400);
  res = await post(BULK, '{"index":{}}\n{}\n', { 'content-type': 'application/xml' });
  assert.is(res.status, 400);
  assert.match(await res.text(), /unsupported content type/);
  assert.is((await allLogs(srv)).length, before);
});

test.run();
