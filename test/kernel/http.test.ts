import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gzipSync, deflateSync, deflateRawSync } from 'node:zlib';
import snappy from 'snappyjs';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { zstdBomb, zstdFrame } from '../helpers/zstd-frame.js';
import { probePlugin } from './fixtures/probe-plugin.js';

const LIMIT = 1024 * 1024;
let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ limits: { maxBodyBytes: LIMIT } }, { extraPlugins: [probePlugin] });
});
test.after(async () => srv.stop());

const payload = Buffer.from(JSON.stringify({ msg: 'x'.repeat(5000), n: [1, 2, 3] }));

const send = (body: Uint8Array, encoding?: string, contentType = 'application/json') =>
  srv.fetch('/ingester/probe/svc', {
    method: 'POST',
    token: null,
    headers: { 'content-type': contentType, ...(encoding ? { 'content-encoding': encoding } : {}) },
    body,
  });

const logCount = async () =>
  ((await (await srv.fetch('/probe/count-logs', { token: null })).json()) as { count: number }).count;

const ENCODERS: Record<string, (b: Buffer) => Uint8Array> = {
  identity: (b) => b,
  gzip: (b) => gzipSync(b),
  'x-gzip': (b) => gzipSync(b),
  deflate: (b) => deflateSync(b),
  'deflate (raw)': (b) => deflateRawSync(b),
  zstd: (b) => zstdFrame(b),
  snappy: (b) => snappy.compress(b),
};

for (const [name, enc] of Object.entries(ENCODERS)) {
  test(`Content-Encoding ${name} is decoded`, async () => {
    const header = name === 'deflate (raw)' ? 'deflate' : name;
    const res = await send(enc(payload), header);
    assert.is(res.status, 200);
    assert.equal(await res.json(), { bytes: payload.length, principal: 'ingest' });
  });
}

test('stacked encodings apply in order (gzip, then snappy)', async () => {
  const res = await send(snappy.compress(gzipSync(payload)), 'gzip, snappy');
  assert.is(res.status, 200);
  assert.equal(((await res.json()) as { bytes: number }).bytes, payload.length);
});

test('compression bombs are 413 and write nothing', async () => {
  const before = await logCount();
  const big = Buffer.alloc(50 * LIMIT, 0x20);
  const bombs: Array<[string, Uint8Array]> = [
    ['gzip', gzipSync(big)],
    ['deflate', deflateSync(big)],
    ['zstd', zstdBomb(400)],
    ['snappy', snappy.compress(Buffer.alloc(2 * LIMIT, 0x20))],
  ];
  for (const [enc, body] of bombs) {
    assert.ok(body.length < LIMIT, `${enc} bomb is small on the wire`);
    const res = await send(body, enc);
    assert.is(res.status, 413, enc);
    assert.match(await res.text(), /exceeds the limit/);
  }
  assert.is(await logCount(), before);
});

test('bodies arriving in several pieces, with and without Content-Length, are read whole', async () => {
  const { request } = await import('node:http');
  const body = Buffer.from(JSON.stringify({ msg: 'y'.repeat(300_000) }));
  const url = new URL(srv.url + '/ingester/probe/svc');
  for (const declared of [true, false]) {
    const out = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(declared ? { 'content-length': body.length } : {}) },
        },
        (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', reject);
      // Pieces with pauses, so the server sees several chunks.
      let at = 0;
      const next = () => {
        if (at >= body.length) return void req.end();
        req.write(body.subarray(at, (at += 70_001)));
        setTimeout(next, 5);
      };
      next();
    });
    assert.is(out.status, 200, `declared=${declared}`);
    assert.equal(JSON.parse(out.text), { bytes: body.length, principal: 'ingest' });
  }
});

test('a body over the limit is 413 (declared or streamed)', async () => {
  const res = await send(Buffer.alloc(LIMIT + 10, 0x20));
  assert.is(res.status, 413);
});

test('malformed compressed data is 400; unknown encodings are 400', async () => {
  assert.is((await send(Buffer.from('not gzip'), 'gzip')).status, 400);
  assert.is((await send(Buffer.from('not zstd'), 'zstd')).status, 400);
  const br = await send(payload, 'br');
  assert.is(br.status, 400);
  assert.match(await br.text(), /unsupported Content-Encoding "br"/);
});

test('unsupported content type is 400 and names it', async () => {
  const res = await send(payload, undefined, 'application/xml');
  assert.is(res.status, 400);
  assert.match(await res.text(), /unsupported content type "application\/xml"/);
});

test('a malformed payload is 400 and writes nothing', async () => {
  const before = await logCount();
  const res = await send(Buffer.from('{"a":'));
  assert.is(res.status, 400);
  assert.is(await logCount(), before);
});

test('every response carries a request id; a given one is echoed', async () => {
  const a = await srv.fetch('/-/healthy', { token: null });
  assert.match(a.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  const b = await srv.fetch('/-/healthy', { token: null, headers: { 'x-request-id': 'abc-123' } });
  assert.is(b.headers.get('x-request-id'), 'abc-123');
});

test('error formats per API family', async () => {
  const prom = await srv.fetch('/probe/error/prometheus/execution', { token: null });
  assert.is(prom.status, 422);
  assert.equal(await prom.json(), { status: 'error', errorType: 'execution', error: 'probe execution' });
  const promBad = await srv.fetch('/probe/error/prometheus/bad_request', { token: null });
  assert.is(promBad.status, 400);
  assert.equal(((await promBad.json()) as { errorType: string }).errorType, 'bad_data');
  const promTimeout = await srv.fetch('/probe/error/prometheus/timeout', { token: null });
  assert.is(promTimeout.status, 503);
  assert.equal(((await promTimeout.json()) as { errorType: string }).errorType, 'timeout');

  const plain = await srv.fetch('/probe/error/plain/bad_request', { token: null });
  assert.is(plain.status, 400);
  assert.match(plain.headers.get('content-type') ?? '', /text\/plain/);
  assert.is(await plain.text(), 'probe bad_request\n');
  const plainJson = await srv.fetch('/probe/error/plain/json-body', { token: null, method: 'POST', body: '{bad' });
  assert.is(plainJson.status, 400);
  assert.match(await plainJson.text(), /^unmarshal failure/);

  const json = await srv.fetch('/probe/error/json/conflict', { token: null });
  assert.is(json.status, 409);
  assert.equal(await json.json(), { error: 'conflict', message: 'probe conflict' });

  const gql = await srv.fetch('/probe/error/graphql/forbidden', { token: null });
  assert.is(gql.status, 200);
  assert.equal(await gql.json(), {
    errors: [{ message: 'probe forbidden', path: [], extensions: { code: 'FORBIDDEN', component: 'graphql' } }],
  });
  const gqlBody = await srv.fetch('/probe/error/graphql/json-body', { token: null, method: 'POST', body: 'nope' });
  assert.is(gqlBody.status, 400);

  const tempo = await srv.fetch('/probe/error/tempo/not_found', { token: null });
  assert.is(tempo.status, 404);
  assert.is(await tempo.text(), 'probe not_found\n');
});

test('unexpected errors are 500 without leaking internals', async () => {
  const res = await srv.fetch('/probe/error/json/crash', { token: null });
  assert.is(res.status, 500);
  const text = await res.text();
  assert.not.ok(text.includes('secret internal detail'));
});

test('unknown paths are 404', async () => {
  const res = await srv.fetch('/no/such/path', { token: null });
  assert.is(res.status, 404);
  assert.is(await res.text(), '404 page not found\n');
});

test.run();
