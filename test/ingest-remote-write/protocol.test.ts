/**
 * Prometheus remote write 1.0 and 2.0 over HTTP against a real server: payloads encoded with
 * protobufjs from the official .proto files in proto/, snappy-compressed, read back from storage.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import snappy from 'snappyjs';
import { loadProtoRoot, PROMETHEUS_PROTO_FILES } from '../../plugins/ingest-otlp/proto-root.js';
import { Tokens } from '../../kernel/services.js';
import { STALE_NAN, isStaleMarker } from '../../kernel/models.js';
import type { StorageBackend, StoredSeries } from '../../kernel/storage.js';
import type { LabelMatcher } from '../../kernel/matchers.js';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';

const root = loadProtoRoot(PROMETHEUS_PROTO_FILES);
const WriteRequest = root.lookupType('prometheus.WriteRequest');
const V2Request = root.lookupType('io.prometheus.write.v2.Request');

let srv: TestServer;
let storage: StorageBackend;
test.before(async () => {
  srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
  storage = srv.lookout.kernel.get(Tokens.Storage);
});
test.after(async () => {
  await srv.stop();
});

const eq = (name: string, value: string): LabelMatcher => ({ name, op: '=', value });
async function select(matchers: LabelMatcher[]): Promise<StoredSeries[]> {
  const out: StoredSeries[] = [];
  for await (const s of storage.metrics.select(matchers, 0, Date.now() + 3600_000)) out.push(s);
  return out;
}

function encodeV1(obj: Record<string, unknown>): Uint8Array {
  return WriteRequest.encode(WriteRequest.fromObject(obj)).finish();
}
function post(path: string, body: Uint8Array, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(srv.url + '/ingester' + path, {
    method: 'POST',
    body: Buffer.from(snappy.compress(body)),
    headers: {
      'content-type': 'application/x-protobuf',
      'content-encoding': 'snappy',
      'x-prometheus-remote-write-version': '0.1.0',
      authorization: `Bearer ${INGEST_KEY}`,
      ...headers,
    },
  });
}

const now = Date.now();

test('RW 1.0 samples, staleness markers and metadata are stored; 204', async () => {
  const body = encodeV1({
    timeseries: [
      {
        labels: [{ name: '__name__', value: 'rw_requests_total' }, { name: 'job', value: 'api' }, { name: 'empty', value: '' }],
        samples: [
          { value: 1, timestamp: now - 2000 },
          { value: 2.5, timestamp: now - 1000 },
          { value: STALE_NAN, timestamp: now },
        ],
      },
    ],
    metadata: [{ type: 'COUNTER', metricFamilyName: 'rw_requests_total', help: 'Requests.', unit: '' }],
  });
  // The pipeline's batch listener sees exactly what storage was handed.
  const seen: boolean[] = []; // booleans: pushing a NaN into a JS array may canonicalise it
  srv.lookout.kernel.get(Tokens.Ingest).onBatch((b) => {
    for (const s of b.metrics ?? []) if (s.labels.__name__ === 'rw_requests_total') for (const x of s.samples) seen.push(isStaleMarker(x.v));
    const c = b.metricColumns; // float samples arrive in columnar form
    if (c) {
      c.series.forEach((h, k) => {
        if (h.labels.__name__ === 'rw_requests_total') for (let i = c.offsets[k]!; i < c.offsets[k + 1]!; i++) seen.push(isStaleMarker(c.values[i]!));
      });
    }
  });
  const res = await post('/write', body);
  assert.is(res.status, 204);
  assert.equal(seen, [false, false, true], 'staleness marker bit pattern handed to storage');
  const s = await select([eq('__name__', 'rw_requests_total')]);
  assert.is(s.length, 1);
  assert.equal({ ...s[0]!.labels }, { __name__: 'rw_requests_total', job: 'api' });
  assert.equal([...s[0]!.timestamps], [now - 2000, now - 1000, now]);
  assert.is(s[0]!.values[1], 2.5);
  // Backends keep values in Float64Arrays; a JS number[] would canonicalise the NaN payload.
  assert.ok(Number.isNaN(s[0]!.values[2]!), 'staleness marker stored');
  const md = await storage.metrics.metadata('rw_requests_total');
  assert.equal(md.get('rw_requests_total')?.[0], { metric: 'rw_requests_total', type: 'counter', help: 'Requests.', unit: '' });
});

test('concurrent requests of different sizes each store their own samples (decompression buffers are reused)', async () => {
  const n = 24;
  const bodies = Array.from({ length: n }, (_, k) => {
    // Sizes from a few hundred bytes to ~400 KB decompressed, so buffers of several sizes are lent.
    const series = k % 4 === 0 ? 3000 : 1 + (k % 7) * 40;
    return encodeV1({
      timeseries: Array.from({ length: series }, (_, i) => ({
        labels: [{ name: '__name__', value: 'rw_concurrent' }, { name: 'req', value: String(k) }, { name: 'i', value: String(i) }, { name: 'pad', value: 'p'.repeat(60 + k) }],
        samples: [{ value: k * 100_000 + i, timestamp: now }],
      })),
    });
  });
  const statuses = await Promise.all(bodies.map((b) => post('/write', b).then((r) => r.status)));
  assert.equal(statuses, Array(n).fill(204));
  const s = await select([eq('__name__', 'rw_concurrent')]);
  assert.is(s.length, bodies.reduce((a, _, k) => a + (k % 4 === 0 ? 3000 : 1 + (k % 7) * 40), 0));
  for (const x of s) {
    const k = Number(x.labels.req);
    assert.is(x.labels.pad, 'p'.repeat(60 + k));
    assert.equal([...x.values], [k * 100_000 + Number(x.labels.i)]);
  }
});

test('RW 1.0 native histograms: integer deltas become absolute float buckets', async () => {
  const body = encodeV1({
    timeseries: [
      {
        labels: [{ name: '__name__', value: 'rw_latency' }],
        histograms: [
          {
            countInt: 9,
            sum: 18.4,
            schema: 1,
            zeroThreshold: 0.001,
            zeroCountInt: 2,
            positiveSpans: [{ offset: 0, length: 2 }, { offset: 1, length: 2 }],
            positiveDeltas: [1, 1, -1, 0],
            negativeSpans: [{ offset: 0, length: 1 }],
            negativeDeltas: [2],
            resetHint: 'NO',
            timestamp: now,
          },
        ],
      },
      {
        labels: [{ name: '__name__', value: 'rw_latency_float' }],
        histograms: [
          { countFloat: 3.5, sum: 1, schema: 0, zeroCountFloat: 0.5, positiveSpans: [{ offset: -1, length: 2 }], positiveCounts: [1, 2], resetHint: 'GAUGE', timestamp: now },
        ],
      },
    ],
  });
  const res = await post('/write', body);
  assert.is(res.status, 204);
  const [h] = await select([eq('__name__', 'rw_latency')]);
  const hist = h!.histograms![0]!;
  assert.equal(hist, {
    counterResetHint: 'not_reset',
    schema: 1,
    zeroThreshold: 0.001,
    zeroCount: 2,
    count: 9,
    sum: 18.4,
    positiveSpans: [{ offset: 0, length: 2 }, { offset: 1, length: 2 }],
    positiveBuckets: [1, 2, 1, 1],
    negativeSpans: [{ offset: 0, length: 1 }],
    negativeBuckets: [2],
  });
  const [f] = await select([eq('__name__', 'rw_latency_float')]);
  assert.is(f!.histograms![0]!.counterResetHint, 'gauge');
  assert.equal(f!.histograms![0]!.positiveBuckets, [1, 2]);
  assert.is(f!.histograms![0]!.count, 3.5);
});

test('/cloud_metrics labels series with svc_origin="cloud_metrics"', async () => {
  const body = encodeV1({ timeseries: [{ labels: [{ name: '__name__', value: 'aws_ec2_cpu' }], samples: [{ value: 7, timestamp: now }] }] });
  assert.is((await post('/cloud_metrics', body)).status, 204);
  const s = await select([eq('__name__', 'aws_ec2_cpu')]);
  assert.equal({ ...s[0]!.labels }, { __name__: 'aws_ec2_cpu', svc_origin: 'cloud_metrics' });
});

test('RW 2.0: symbols, metadata, created timestamp; written-count headers', async () => {
  const body = V2Request.encode(
    V2Request.fromObject({
      symbols: ['', '__name__', 'rw2_jobs_total', 'job', 'batch', 'Jobs done.', 'le'],
      timeseries: [
        {
          labelsRefs: [1, 2, 3, 4],
          samples: [{ value: 3, timestamp: now }],
          metadata: { type: 'METRIC_TYPE_COUNTER', helpRef: 5, unitRef: 0 },
          createdTimestamp: now - 60_000,
        },
      ],
    }),
  ).finish();
  const res = await post('/write', body, { 'content-type': 'application/x-protobuf;proto=io.prometheus.write.v2.Request', 'x-prometheus-remote-write-version': '2.0.0' });
  assert.is(res.status, 204);
  assert.is(res.headers.get('x-prometheus-remote-write-samples-written'), '1');
  assert.is(res.headers.get('x-prometheus-remote-write-histograms-written'), '0');
  const s = await select([eq('__name__', 'rw2_jobs_total')]);
  assert.equal({ ...s[0]!.labels }, { __name__: 'rw2_jobs_total', job: 'batch' });
  assert.is(s[0]!.startTimestamps?.[0], now - 60_000);
  const md = await storage.metrics.metadata('rw2_jobs_total');
  assert.is(md.get('rw2_jobs_total')?.[0]?.help, 'Jobs done.');
});

test('an unknown proto= message type is 415', async () => {
  const res = await post('/write', encodeV1({}), { 'content-type': 'application/x-protobuf;proto=foo.Bar' });
  assert.is(res.status, 415);
});

test('empty WriteRequest answers 204', async () => {
  assert.is((await post('/write', new Uint8Array(0))).status, 204);
});

test('errors: missing snappy, bad key, wrong content type, malformed body; nothing written', async () => {
  const good = encodeV1({ timeseries: [{ labels: [{ name: '__name__', value: 'rw_never' }], samples: [{ value: 1, timestamp: now }] }] });
  const plain = await fetch(srv.url + '/ingester/write', {
    method: 'POST',
    body: Buffer.from(good),
    headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${INGEST_KEY}` },
  });
  assert.is(plain.status, 400);
  assert.match(await plain.text(), /snappy/);
  assert.is((await post('/write', good, { authorization: 'Bearer wrong' })).status, 400);
  const noAuth = await fetch(srv.url + '/ingester/write', { method: 'POST', body: Buffer.from(snappy.compress(good)), headers: { 'content-encoding': 'snappy' } });
  assert.is(noAuth.status, 400);
  assert.is((await post('/write', good, { 'content-type': 'application/json' })).status, 400);
  // A valid first series followed by garbage: the request is refused whole.
  const broken = new Uint8Array([...good, 0x0a, 0xff, 0x01]);
  const bad = await post('/write', broken);
  assert.is(bad.status, 400);
  assert.match(await bad.text(), /malformed remote write request/);
  // A series without a metric name is malformed too.
  const noName = encodeV1({ timeseries: [{ labels: [{ name: 'job', value: 'x' }], samples: [{ value: 1, timestamp: now }] }] });
  assert.is((await post('/write', noName)).status, 400);
  assert.equal(await select([eq('__name__', 'rw_never')]), []);
});

test.run();
