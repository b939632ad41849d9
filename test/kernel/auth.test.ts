import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN_TOKEN, EDITOR_TOKEN, VIEWER_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';
import { probePlugin } from './fixtures/probe-plugin.js';
import { safeEqual } from '../../kernel/auth.js';

const KEY = 'k-123';
let srv: TestServer;
test.before(async () => {
  srv = await startTestServer(
    {
      auth: {
        ingestApiKeys: [KEY, 'k-other'],
        users: [{ email: 'ana@example.com', name: 'Ana', login: 'ana', token: 'ana-token' }],
      },
      log: { level: 'info', access: true },
    },
    { extraPlugins: [probePlugin] },
  );
});
test.after(async () => srv.stop());

const post = (family: string, headers: Record<string, string>) =>
  srv.fetch(`/ingester/probe/${family}`, {
    method: 'POST',
    token: null,
    headers: { 'content-type': 'application/json', ...headers },
    body: '{"a":1}',
  });

const FAMILY_HEADERS: Record<string, (k: string) => Record<string, string>> = {
  svc: (k) => ({ 'svc-api-key': k }),
  compat: (k) => ({ 'compat-api-key': k }),
  'remote-write': (k) => ({ authorization: `Bearer ${k}` }),
  firehose: (k) => ({ 'x-cloud-firehose-access-key': k }),
};

for (const [family, hdr] of Object.entries(FAMILY_HEADERS)) {
  test(`ingest family ${family}: missing key 400, wrong key 400, right key 200`, async () => {
    const missing = await post(family, {});
    assert.is(missing.status, 400);
    assert.match(await missing.text(), /API key/);
    assert.is((await post(family, hdr('wrong'))).status, 400);
    const ok = await post(family, hdr(KEY));
    assert.is(ok.status, 200);
    assert.equal(await ok.json(), { bytes: 7, principal: 'ingest' });
  });
}

test('a key in another family\'s header is not accepted', async () => {
  assert.is((await post('compat', { 'svc-api-key': KEY })).status, 400);
  assert.is((await post('svc', { 'compat-api-key': KEY })).status, 400);
  // Every pairing of SPEC.md's table: only the family's own header counts (acceptance audit:
  // `Authorization: Bearer <key>` used to pass on the Svc-Api-Key family).
  for (const family of Object.keys(FAMILY_HEADERS)) {
    for (const [other, hdr] of Object.entries(FAMILY_HEADERS)) {
      if (other === family) continue;
      assert.is((await post(family, hdr(KEY))).status, 400, `${other} header on ${family}`);
    }
  }
});

test('real-client header forms: DD-API-KEY, ApiKey base64(id:key), <ignored>:<key>', async () => {
  assert.is((await post('compat', { 'dd-api-key': KEY })).status, 200);
  const apiKey = Buffer.from(`some-id:${KEY}`).toString('base64');
  assert.is((await post('svc', { authorization: `ApiKey ${apiKey}` })).status, 200);
  assert.is((await post('svc', { 'svc-api-key': `ignored:${KEY}` })).status, 200);
  assert.is((await post('firehose', { 'x-amz-firehose-access-key': KEY })).status, 200);
});

test('bearer: missing 401, invalid 401, valid 200 with the principal', async () => {
  assert.is((await srv.fetch('/probe/whoami', { token: null })).status, 401);
  assert.is((await srv.fetch('/probe/whoami', { token: 'nope' })).status, 401);
  assert.is((await srv.fetch('/probe/whoami', { headers: { authorization: 'Basic abc' }, token: null })).status, 401);
  const res = await srv.fetch('/probe/whoami', { token: VIEWER_TOKEN });
  assert.is(res.status, 200);
  const p = (await res.json()) as Record<string, unknown>;
  assert.is(p.kind, 'service_account');
  assert.is(p.name, 'reader');
  assert.is(p.role, 'Viewer');
  const user = (await (await srv.fetch('/probe/whoami', { token: 'ana-token' })).json()) as Record<string, unknown>;
  assert.is(user.kind, 'user');
  assert.is(user.name, 'ana@example.com');
  assert.is(user.role, 'Viewer');
  assert.equal(user.teams, []);
});

test('roles: insufficient role is 403, sufficient is 200', async () => {
  assert.is((await srv.fetch('/probe/admin-only', { token: VIEWER_TOKEN })).status, 403);
  assert.is((await srv.fetch('/probe/admin-only', { token: EDITOR_TOKEN })).status, 403);
  assert.is((await srv.fetch('/probe/admin-only', { token: ADMIN_TOKEN })).status, 200);
  assert.is((await srv.fetch('/probe/editor-only', { token: VIEWER_TOKEN })).status, 403);
  assert.is((await srv.fetch('/probe/editor-only', { token: EDITOR_TOKEN })).status, 200);
  assert.is((await srv.fetch('/probe/editor-only', { token: ADMIN_TOKEN })).status, 200);
});

test('tokens never reach the logs', async () => {
  const lines: string[] = [];
  const orig = process.stderr.write.bind(process.stderr);
  (process.stderr as { write: unknown }).write = (chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  };
  try {
    await srv.fetch('/probe/whoami', { token: ADMIN_TOKEN });
    await post('svc', { 'svc-api-key': KEY });
    await post('svc', { 'svc-api-key': 'wrong-secret-value' });
  } finally {
    (process.stderr as { write: unknown }).write = orig;
  }
  const text = lines.join('');
  assert.ok(text.includes('"path":"/probe/whoami"'), 'access log written');
  for (const secret of [ADMIN_TOKEN, KEY, 'wrong-secret-value']) assert.not.ok(text.includes(secret), secret);
});

test('safeEqual compares in constant time over hashes', () => {
  assert.ok(safeEqual('abc', 'abc'));
  assert.not.ok(safeEqual('abc', 'abd'));
  assert.not.ok(safeEqual('abc', 'abcd'));
  assert.not.ok(safeEqual('', 'x'));
});

test('without configured ingest keys ingest is open', async () => {
  const open = await startTestServer({}, { extraPlugins: [probePlugin] });
  try {
    const res = await open.fetch('/ingester/probe/svc', {
      method: 'POST',
      token: null,
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.is(res.status, 200);
  } finally {
    await open.stop();
  }
});

test.run();
