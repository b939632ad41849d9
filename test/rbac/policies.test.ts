/** SPEC.md "RBAC policies": every endpoint and status, through HTTP. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EDITOR_TOKEN, VIEWER_TOKEN, type TestServer } from '../helpers/server.js';
import { call, enc, rbacServer } from './helpers.js';

let srv: TestServer;
test.before(async () => {
  srv = await rbacServer();
});
test.after(async () => {
  await srv.stop();
});

const custom = (name: string, filters: unknown[]) => ({ name, scope: { type: 'custom', filters } });

test('every /rbac route: 401 without or with a bad token, 403 for non-Admin, json error body', async () => {
  const routes: Array<[string, string, unknown?]> = [
    ['GET', '/rbac/policies'],
    ['POST', '/rbac/policies', custom('x', [])],
    ['GET', '/rbac/policies/x'],
    ['PUT', '/rbac/policies/x', custom('x', [])],
    ['DELETE', '/rbac/policies/x'],
    ['GET', '/rbac/policies/x/mappings'],
    ['POST', '/rbac/policies/x/mappings', { entity_type: 'group', entity_name: 'g' }],
    ['DELETE', '/rbac/policies/x/mappings/group/g'],
    ['GET', '/rbac/groups/g/effective-policies'],
    ['GET', `/rbac/users/${enc('ana@example.com')}/effective-policies`],
    ['GET', '/rbac/service-accounts/reader/effective-policies'],
    ['GET', '/rbac/allowed-labels'],
  ];
  for (const [m, p, b] of routes) {
    const none = await call(srv, m, p, b, null);
    assert.is(none.status, 401, `${m} ${p} without token`);
    assert.is(none.body.error, 'unauthorized');
    assert.is((await call(srv, m, p, b, 'wrong-token')).status, 401, `${m} ${p} bad token`);
    for (const t of [VIEWER_TOKEN, EDITOR_TOKEN, 'ana-token']) {
      const r = await call(srv, m, p, b, t);
      assert.is(r.status, 403, `${m} ${p} as ${t}`);
      assert.match(r.contentType, /application\/json/);
      assert.equal(r.body, { error: 'forbidden', message: 'Forbidden' });
    }
  }
  // Nothing was created by the refused requests.
  assert.equal((await call(srv, 'GET', '/rbac/policies')).body, { policies: [] });
});

test('create (201), get, list, conflict (409)', async () => {
  const p = custom('logs team/a', [
    { key: 'svc_stream', op: '=', value: 'logs' },
    { key: 'service', op: '=~', value: 'checkout|cart' },
  ]);
  const c = await call(srv, 'POST', '/rbac/policies', p);
  assert.is(c.status, 201);
  assert.equal(c.body, p);
  const g = await call(srv, 'GET', `/rbac/policies/${enc('logs team/a')}`);
  assert.is(g.status, 200);
  assert.equal(g.body, p);
  const all = await call(srv, 'POST', '/rbac/policies', { name: 'everything', scope: { type: 'all', filters: [] } });
  assert.is(all.status, 201);
  const l = await call(srv, 'GET', '/rbac/policies');
  assert.equal(l.body.policies.map((x: { name: string }) => x.name), ['logs team/a', 'everything']);
  const dup = await call(srv, 'POST', '/rbac/policies', p);
  assert.is(dup.status, 409);
  assert.is(dup.body.error, 'conflict');
});

test('400: invalid scope type, missing fields, bad op, bad regex, disallowed label, malformed JSON', async () => {
  const bad: unknown[] = [
    { name: 'b', scope: { type: 'some', filters: [] } },
    { name: 'b', scope: { filters: [] } },
    { name: 'b' },
    { scope: { type: 'all', filters: [] } },
    { name: '', scope: { type: 'all', filters: [] } },
    { name: 'b', scope: 'all' },
    { name: 'b', scope: { type: 'custom', filters: {} } },
    custom('b', [{ op: '=', value: 'x' }]),
    custom('b', [{ key: 'service', value: 'x' }]),
    custom('b', [{ key: 'service', op: '=' }]),
    custom('b', [{ key: 'service', op: '==', value: 'x' }]),
    custom('b', [{ key: 'service', op: '=~', value: '(unclosed' }]),
    custom('b', [{ key: 'service', op: '!~', value: 'a(?=b)' }]),
    custom('b', [{ key: 'not_a_label', op: '=', value: 'x' }]),
    custom('b', [
      { key: 'svc_stream', op: '=', value: 'logs' },
      { key: 'job', op: '=', value: 'x' },
    ]),
    custom('b', [{ key: 'svc_stream', op: '=', value: 'nosuchstream' }]),
    [1, 2],
  ];
  for (const b of bad) {
    const r = await call(srv, 'POST', '/rbac/policies', b);
    assert.is(r.status, 400, JSON.stringify(b));
    assert.is(r.body.error, 'bad_request');
    assert.type(r.body.message, 'string');
  }
  const scopeType = await call(srv, 'POST', '/rbac/policies', { name: 'b', scope: { type: 'some' } });
  assert.match(scopeType.body.message, /invalid scope type/);
  const malformed = await call(srv, 'POST', '/rbac/policies', '{"name":');
  assert.is(malformed.status, 400);
  const empty = await call(srv, 'POST', '/rbac/policies', '');
  assert.is(empty.status, 400);
  assert.is((await call(srv, 'GET', '/rbac/policies/b')).status, 404);
});

test('job is allowed for metrics: a metrics-only policy on job is valid', async () => {
  const r = await call(srv, 'POST', '/rbac/policies', custom('jobs', [
    { key: 'svc_stream', op: '=~', value: 'metrics' },
    { key: 'job', op: '!=', value: 'secret' },
  ]));
  assert.is(r.status, 201);
});

test('PUT replaces in full; name mismatch 400; unknown 404', async () => {
  const p = custom('logs team/a', [{ key: 'env', op: '!~', value: 'prod|staging' }]);
  const r = await call(srv, 'PUT', `/rbac/policies/${enc('logs team/a')}`, p);
  assert.is(r.status, 200);
  assert.equal(r.body, p);
  assert.equal((await call(srv, 'GET', `/rbac/policies/${enc('logs team/a')}`)).body, p);
  const mismatch = await call(srv, 'PUT', `/rbac/policies/${enc('logs team/a')}`, { ...p, name: 'other' });
  assert.is(mismatch.status, 400);
  assert.match(mismatch.body.message, /does not match/);
  const badType = await call(srv, 'PUT', `/rbac/policies/${enc('logs team/a')}`, { name: 'logs team/a', scope: { type: 'x' } });
  assert.is(badType.status, 400);
  const missing = await call(srv, 'PUT', '/rbac/policies/ghost', custom('ghost', []));
  assert.is(missing.status, 404);
  assert.is(missing.body.error, 'not_found');
  // The name may be left out of the body: the path names the policy.
  const noName = await call(srv, 'PUT', '/rbac/policies/everything', { scope: { type: 'none', filters: [] } });
  assert.is(noName.status, 200);
  assert.equal(noName.body, { name: 'everything', scope: { type: 'none', filters: [] } });
});

test('mappings: create 201, list with created_at (µs), 400 unknown entity/type, 404 policy, delete 204/404', async () => {
  assert.is((await call(srv, 'POST', '/rbac/groups', { name: 'sre team' })).status, 201);
  const path = `/rbac/policies/${enc('logs team/a')}/mappings`;
  const targets: Array<[string, string]> = [
    ['group', 'sre team'],
    ['user', 'cy+ops@example.com'],
    ['service_account', 'reader'],
  ];
  for (const [t, n] of targets) {
    const r = await call(srv, 'POST', path, { policy_name: 'logs team/a', entity_type: t, entity_name: n });
    assert.is(r.status, 201);
    assert.equal(Object.keys(r.body).sort(), ['entity_name', 'entity_type', 'message', 'policy_name']);
    assert.is(r.body.policy_name, 'logs team/a');
    assert.is(r.body.entity_type, t);
    assert.is(r.body.entity_name, n);
    assert.type(r.body.message, 'string');
  }
  const list = await call(srv, 'GET', path);
  assert.is(list.status, 200);
  assert.is(list.body.mappings.length, 3);
  for (const m of list.body.mappings) {
    assert.match(m.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.ok(Math.abs(Date.parse(m.created_at) - Date.now()) < 60_000);
  }
  assert.equal(
    list.body.mappings.map((m: any) => [m.entity_type, m.entity_name]),
    targets,
  );
  // Assigning again is idempotent and keeps created_at.
  const again = await call(srv, 'POST', path, { entity_type: 'group', entity_name: 'sre team' });
  assert.is(again.status, 201);
  assert.equal((await call(srv, 'GET', path)).body, list.body);

  for (const b of [
    { entity_type: 'group', entity_name: 'no such team' },
    { entity_type: 'user', entity_name: 'nobody@example.com' },
    { entity_type: 'service_account', entity_name: 'ghost' },
    { entity_type: 'robot', entity_name: 'x' },
    { entity_name: 'sre team' },
    { entity_type: 'group' },
    { policy_name: 'other', entity_type: 'group', entity_name: 'sre team' },
  ]) {
    const r = await call(srv, 'POST', path, b);
    assert.is(r.status, 400, JSON.stringify(b));
  }
  assert.is((await call(srv, 'POST', '/rbac/policies/ghost/mappings', { entity_type: 'group', entity_name: 'sre team' })).status, 404);
  assert.is((await call(srv, 'GET', '/rbac/policies/ghost/mappings')).status, 404);

  const del = await srv.fetch(`${path}/service_account/reader`, { method: 'DELETE' });
  assert.is(del.status, 204);
  assert.is(await del.text(), '');
  assert.is((await call(srv, 'DELETE', `${path}/service_account/reader`)).status, 404);
  assert.is((await call(srv, 'DELETE', `/rbac/policies/ghost/mappings/group/${enc('sre team')}`)).status, 404);
  assert.is((await call(srv, 'DELETE', `${path}/robot/x`)).status, 400);
  assert.is((await call(srv, 'GET', path)).body.mappings.length, 2);
});

test('effective policies: exact shape for group, user (teams + direct) and service account', async () => {
  assert.is((await call(srv, 'PUT', `/rbac/groups/${enc('sre team')}/users/${enc('ana@example.com')}`, { role: 'Member' })).status, 200);
  await call(srv, 'POST', '/rbac/policies', { name: 'metrics-all', scope: { type: 'all', filters: [] } });
  await call(srv, 'POST', '/rbac/policies/metrics-all/mappings', { entity_type: 'user', entity_name: 'ana@example.com' });

  const g = await call(srv, 'GET', `/rbac/groups/${enc('sre team')}/effective-policies`);
  assert.is(g.status, 200);
  const envFilter = [{ key: 'env', op: '!~', value: 'prod|staging' }];
  const customEntry = { type: 'custom', filters: envFilter, policy_name: 'logs team/a' };
  assert.equal(g.body, {
    name: 'sre team',
    entity_type: 'group',
    policies: [{ name: 'logs team/a', scope: { type: 'custom', filters: envFilter } }],
    scopes: { logs: [customEntry], metrics: [customEntry], events: [customEntry], apm: [customEntry], rum: [customEntry] },
    direct_policy_count: 1,
    total_policy_count: 1,
  });

  const u = await call(srv, 'GET', `/rbac/users/${enc('ana@example.com')}/effective-policies`);
  assert.is(u.status, 200);
  const allEntry = { type: 'all', filters: [], policy_name: 'metrics-all' };
  assert.equal(u.body, {
    name: 'ana@example.com',
    entity_type: 'user',
    policies: [{ name: 'metrics-all', scope: { type: 'all', filters: [] } }],
    scopes: {
      logs: [allEntry, customEntry],
      metrics: [allEntry, customEntry],
      events: [allEntry, customEntry],
      apm: [allEntry, customEntry],
      rum: [allEntry, customEntry],
    },
    direct_policy_count: 1,
    total_policy_count: 2,
  });

  // A service account with nothing assigned: the default-deny entry on every stream.
  const deny = [{ type: 'none', policy_name: 'default-deny-policy' }];
  const sa = await call(srv, 'GET', '/rbac/service-accounts/reader/effective-policies');
  assert.is(sa.status, 200);
  assert.equal(sa.body, {
    name: 'reader',
    entity_type: 'service_account',
    policies: [],
    scopes: { logs: deny, metrics: deny, events: deny, apm: deny, rum: deny },
    direct_policy_count: 0,
    total_policy_count: 0,
  });

  // svc_stream selects streams; a none policy is listed but grants nothing.
  await call(srv, 'POST', '/rbac/policies/jobs/mappings', { entity_type: 'service_account', entity_name: 'reader' });
  await call(srv, 'POST', '/rbac/policies/everything/mappings', { entity_type: 'service_account', entity_name: 'reader' });
  const sa2 = await call(srv, 'GET', '/rbac/service-accounts/reader/effective-policies');
  const jobs = {
    type: 'custom',
    filters: [
      { key: 'svc_stream', op: '=~', value: 'metrics' },
      { key: 'job', op: '!=', value: 'secret' },
    ],
    policy_name: 'jobs',
  };
  const none = { type: 'none', policy_name: 'everything' };
  assert.equal(sa2.body.scopes, {
    logs: [none, ...deny],
    metrics: [jobs, none],
    events: [none, ...deny],
    apm: [none, ...deny],
    rum: [none, ...deny],
  });
  assert.is(sa2.body.direct_policy_count, 2);
  assert.is(sa2.body.total_policy_count, 2);

  assert.is((await call(srv, 'GET', '/rbac/groups/ghost/effective-policies')).status, 404);
  assert.is((await call(srv, 'GET', `/rbac/users/${enc('nobody@example.com')}/effective-policies`)).status, 404);
  assert.is((await call(srv, 'GET', '/rbac/service-accounts/ghost/effective-policies')).status, 404);
});

test('DELETE policy: 204 empty, removes its assignments, 404 after', async () => {
  const res = await srv.fetch(`/rbac/policies/${enc('logs team/a')}`, { method: 'DELETE' });
  assert.is(res.status, 204);
  assert.is(await res.text(), '');
  assert.is((await call(srv, 'GET', `/rbac/policies/${enc('logs team/a')}`)).status, 404);
  assert.is((await call(srv, 'DELETE', `/rbac/policies/${enc('logs team/a')}`)).status, 404);
  const g = await call(srv, 'GET', `/rbac/groups/${enc('sre team')}/policies`);
  assert.equal(g.body, { policies: [] });
  const u = await call(srv, 'GET', `/rbac/users/${enc('ana@example.com')}/effective-policies`);
  assert.is(u.body.total_policy_count, 1);
  // Recreating the name does not bring old assignments back.
  await call(srv, 'POST', '/rbac/policies', custom('logs team/a', []));
  assert.equal((await call(srv, 'GET', `/rbac/policies/${enc('logs team/a')}/mappings`)).body, { mappings: [] });
});

test('allowed-labels: keyed by stream, svc_stream always allowed', async () => {
  const r = await call(srv, 'GET', '/rbac/allowed-labels');
  assert.is(r.status, 200);
  assert.equal(Object.keys(r.body).sort(), ['apm', 'events', 'logs', 'metrics', 'rum']);
  for (const keys of Object.values(r.body) as string[][]) {
    assert.ok(keys.includes('svc_stream'));
    assert.ok(keys.includes('service'));
  }
  assert.ok(r.body.metrics.includes('job'));
  assert.not.ok(r.body.logs.includes('job'));
});

test.run();
