/** SPEC.md "Teams": every endpoint and status through HTTP, team-Admin membership rights, enricher. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { definePlugin } from '../../kernel/plugin.js';
import { EDITOR_TOKEN, VIEWER_TOKEN, type TestServer } from '../helpers/server.js';
import { call, enc, rbacServer } from './helpers.js';

/** A test-only route that shows the authenticated principal (as query plugins see it). */
const whoami = definePlugin({
  name: 'test-whoami',
  register(ctx) {
    ctx.route({ method: 'GET', path: '/__test/whoami', family: 'json', auth: 'bearer', handler: (req) => req.principal });
  },
});

let srv: TestServer;
test.before(async () => {
  srv = await rbacServer({}, { extraPlugins: [whoami] });
});
test.after(async () => {
  await srv.stop();
});

const ANA = enc('ana@example.com');
const BOB = enc('bob@example.com');
const CY = enc('cy+ops@example.com');

test('create 201 with member_count 0, email "", integer local_dashboard_id; 409; 400', async () => {
  const a = await call(srv, 'POST', '/rbac/groups', { name: 'platform/sre' });
  assert.is(a.status, 201);
  assert.equal(Object.keys(a.body).sort(), ['email', 'local_dashboard_id', 'member_count', 'name']);
  assert.is(a.body.name, 'platform/sre');
  assert.is(a.body.email, '');
  assert.is(a.body.member_count, 0);
  assert.ok(Number.isInteger(a.body.local_dashboard_id));
  const b = await call(srv, 'POST', '/rbac/groups', { name: 'payments' });
  assert.is(b.status, 201);
  assert.is.not(b.body.local_dashboard_id, a.body.local_dashboard_id);
  const dup = await call(srv, 'POST', '/rbac/groups', { name: 'payments' });
  assert.is(dup.status, 409);
  assert.is(dup.body.error, 'conflict');
  for (const body of [{}, { name: '' }, { name: 5 }, [], '']) {
    assert.is((await call(srv, 'POST', '/rbac/groups', body)).status, 400, JSON.stringify(body));
  }
  assert.is((await call(srv, 'POST', '/rbac/groups', '{oops')).status, 400);
});

test('list with total, get, 404', async () => {
  const l = await call(srv, 'GET', '/rbac/groups');
  assert.is(l.status, 200);
  assert.is(l.body.total, 2);
  assert.equal(l.body.groups.map((g: any) => g.name), ['platform/sre', 'payments']);
  const g = await call(srv, 'GET', `/rbac/groups/${enc('platform/sre')}`);
  assert.is(g.status, 200);
  assert.equal(g.body, l.body.groups[0]);
  const missing = await call(srv, 'GET', '/rbac/groups/ghost');
  assert.is(missing.status, 404);
  assert.is(missing.body.error, 'not_found');
});

test('members: PUT adds and updates role, GET lists, 400 unknown user / bad role, 404 team', async () => {
  const sre = `/rbac/groups/${enc('platform/sre')}`;
  const add = await call(srv, 'PUT', `${sre}/users/${ANA}`, { role: 'Member' });
  assert.is(add.status, 200);
  assert.equal(Object.keys(add.body), ['message']);
  assert.is((await call(srv, 'PUT', `${sre}/users/${CY}`, { role: 'Admin' })).status, 200);
  const upd = await call(srv, 'PUT', `${sre}/users/${ANA}`, { role: 'Admin' });
  assert.is(upd.status, 200);
  assert.type(upd.body.message, 'string');
  const m = await call(srv, 'GET', `${sre}/users`);
  assert.is(m.status, 200);
  assert.equal(m.body, {
    members: [
      { email: 'ana@example.com', name: 'Ana', login: 'ana', role: 'Admin' },
      { email: 'cy+ops@example.com', name: 'Cy', login: 'cy', role: 'Admin' },
    ],
  });
  assert.is((await call(srv, 'GET', sre)).body.member_count, 2);
  const id = (await call(srv, 'GET', sre)).body.local_dashboard_id;

  const unknown = await call(srv, 'PUT', `${sre}/users/${enc('nobody@example.com')}`, { role: 'Member' });
  assert.is(unknown.status, 400);
  for (const body of [{ role: 'Owner' }, {}, { role: '' }, '']) {
    assert.is((await call(srv, 'PUT', `${sre}/users/${BOB}`, body)).status, 400, JSON.stringify(body));
  }
  assert.is((await call(srv, 'PUT', `/rbac/groups/ghost/users/${ANA}`, { role: 'Member' })).status, 404);
  assert.is((await call(srv, 'GET', '/rbac/groups/ghost/users')).status, 404);
  // The identifier is stable across membership changes.
  assert.is((await call(srv, 'GET', sre)).body.local_dashboard_id, id);
});

test('enricher: a user principal carries its teams', async () => {
  const me = await call(srv, 'GET', '/__test/whoami', undefined, 'ana-token');
  assert.is(me.status, 200);
  assert.is(me.body.kind, 'user');
  assert.is(me.body.name, 'ana@example.com');
  assert.equal(me.body.teams, ['platform/sre']);
  const bob = await call(srv, 'GET', '/__test/whoami', undefined, 'bob-token');
  assert.equal(bob.body.teams, []);
});

test('team Admin (non-global-Admin user) manages its own team membership only', async () => {
  const sre = `/rbac/groups/${enc('platform/sre')}`;
  // ana is team Admin of platform/sre but a Viewer globally.
  assert.is((await call(srv, 'GET', `${sre}/users`, undefined, 'ana-token')).status, 200);
  assert.is((await call(srv, 'PUT', `${sre}/users/${BOB}`, { role: 'Member' }, 'ana-token')).status, 200);
  // bob is a plain member: no membership management.
  assert.is((await call(srv, 'GET', `${sre}/users`, undefined, 'bob-token')).status, 403);
  assert.is((await call(srv, 'DELETE', `${sre}/users/${CY}`, undefined, 'bob-token')).status, 403);
  assert.is((await call(srv, 'PUT', `${sre}/users/${BOB}`, { role: 'Admin' }, 'bob-token')).status, 403);
  // Not another team, not anything else under /rbac.
  assert.is((await call(srv, 'PUT', `/rbac/groups/payments/users/${ANA}`, { role: 'Admin' }, 'ana-token')).status, 403);
  assert.is((await call(srv, 'GET', '/rbac/groups/payments/users', undefined, 'ana-token')).status, 403);
  assert.is((await call(srv, 'GET', '/rbac/groups/ghost/users', undefined, 'ana-token')).status, 403);
  assert.is((await call(srv, 'GET', sre, undefined, 'ana-token')).status, 403);
  assert.is((await call(srv, 'DELETE', sre, undefined, 'ana-token')).status, 403);
  assert.is((await call(srv, 'GET', `${sre}/policies`, undefined, 'ana-token')).status, 403);
  assert.is((await call(srv, 'GET', '/rbac/groups', undefined, 'ana-token')).status, 403);
  assert.is((await call(srv, 'POST', '/rbac/groups', { name: 'x' }, 'ana-token')).status, 403);
  // Team Admin may remove a member (here, bob).
  assert.is((await call(srv, 'DELETE', `${sre}/users/${BOB}`, undefined, 'ana-token')).status, 200);
});

test('401 and 403 on every teams route', async () => {
  const routes: Array<[string, string, unknown?]> = [
    ['GET', '/rbac/groups'],
    ['POST', '/rbac/groups', { name: 'z' }],
    ['GET', '/rbac/groups/payments'],
    ['DELETE', '/rbac/groups/payments'],
    ['GET', '/rbac/groups/payments/users'],
    ['PUT', `/rbac/groups/payments/users/${ANA}`, { role: 'Member' }],
    ['DELETE', `/rbac/groups/payments/users/${ANA}`],
    ['GET', '/rbac/groups/payments/policies'],
    ['GET', '/rbac/groups/payments/effective-policies'],
  ];
  for (const [m, p, b] of routes) {
    assert.is((await call(srv, m, p, b, null)).status, 401, `${m} ${p}`);
    assert.is((await call(srv, m, p, b, 'nope')).status, 401, `${m} ${p}`);
    for (const t of [VIEWER_TOKEN, EDITOR_TOKEN, 'bob-token']) {
      const r = await call(srv, m, p, b, t);
      assert.is(r.status, 403, `${m} ${p} ${t}`);
      assert.equal(r.body, { error: 'forbidden', message: 'Forbidden' });
    }
  }
  assert.is((await call(srv, 'GET', '/rbac/groups')).body.total, 2);
});

test('DELETE member: {message}, user kept, 404 when not a member', async () => {
  const sre = `/rbac/groups/${enc('platform/sre')}`;
  const r = await call(srv, 'DELETE', `${sre}/users/${CY}`);
  assert.is(r.status, 200);
  assert.type(r.body.message, 'string');
  assert.is((await call(srv, 'DELETE', `${sre}/users/${CY}`)).status, 404);
  assert.is((await call(srv, 'DELETE', `/rbac/groups/ghost/users/${CY}`)).status, 404);
  // The account still exists: it can be added again and still authenticates.
  assert.is((await call(srv, 'GET', `/rbac/users/${CY}/effective-policies`)).status, 200);
  assert.is((await call(srv, 'GET', '/__test/whoami', undefined, 'cy-token')).status, 200);
  assert.is((await call(srv, 'GET', sre)).body.member_count, 1);
});

test('team policies; DELETE team 204 removes members and assignments', async () => {
  const sre = `/rbac/groups/${enc('platform/sre')}`;
  const pol = { name: 'sre-logs', scope: { type: 'custom', filters: [{ key: 'svc_stream', op: '=', value: 'logs' }] } };
  assert.is((await call(srv, 'POST', '/rbac/policies', pol)).status, 201);
  assert.is((await call(srv, 'POST', '/rbac/policies/sre-logs/mappings', { entity_type: 'group', entity_name: 'platform/sre' })).status, 201);
  assert.is((await call(srv, 'POST', '/rbac/policies/sre-logs/mappings', { entity_type: 'group', entity_name: 'payments' })).status, 201);
  const tp = await call(srv, 'GET', `${sre}/policies`);
  assert.is(tp.status, 200);
  assert.equal(tp.body, { policies: [pol] });
  assert.is((await call(srv, 'GET', '/rbac/groups/ghost/policies')).status, 404);
  const eff = await call(srv, 'GET', `${sre}/effective-policies`);
  assert.is(eff.body.scopes.logs[0].policy_name, 'sre-logs');
  assert.is(eff.body.scopes.metrics[0].policy_name, 'default-deny-policy');
  const ana = await call(srv, 'GET', `/rbac/users/${ANA}/effective-policies`);
  assert.is(ana.body.total_policy_count, 1);

  const del = await srv.fetch(sre, { method: 'DELETE' });
  assert.is(del.status, 204);
  assert.is(await del.text(), '');
  assert.is((await call(srv, 'GET', sre)).status, 404);
  assert.is((await call(srv, 'DELETE', sre)).status, 404);
  assert.is((await call(srv, 'GET', `${sre}/users`)).status, 404);
  const maps = await call(srv, 'GET', '/rbac/policies/sre-logs/mappings');
  assert.equal(maps.body.mappings.map((m: any) => m.entity_name), ['payments']);
  assert.is((await call(srv, 'GET', `/rbac/users/${ANA}/effective-policies`)).body.total_policy_count, 0);
  assert.equal((await call(srv, 'GET', '/__test/whoami', undefined, 'ana-token')).body.teams, []);
  // Recreated with the same name: empty, and a new dashboard id.
  const again = await call(srv, 'POST', '/rbac/groups', { name: 'platform/sre' });
  assert.is(again.status, 201);
  assert.is(again.body.member_count, 0);
  assert.equal((await call(srv, 'GET', `${sre}/policies`)).body, { policies: [] });
  assert.is((await call(srv, 'GET', '/rbac/groups')).body.total, 2);
});

test('allowedLabels option replaces a stream\'s list', async () => {
  const other = await rbacServer({ pluginOptions: { rbac: { allowedLabels: { logs: ['tenant'], rum: ['*'] } } } });
  try {
    const r = await call(other, 'GET', '/rbac/allowed-labels');
    assert.equal(r.body.logs, ['svc_stream', 'tenant']);
    assert.equal(r.body.rum, ['svc_stream', '*']);
    assert.ok(r.body.metrics.includes('job'));
    const ok = await call(other, 'POST', '/rbac/policies', {
      name: 't', scope: { type: 'custom', filters: [{ key: 'svc_stream', op: '=', value: 'logs' }, { key: 'tenant', op: '=', value: 'a' }] },
    });
    assert.is(ok.status, 201);
    const anyKey = await call(other, 'POST', '/rbac/policies', {
      name: 'r', scope: { type: 'custom', filters: [{ key: 'svc_stream', op: '=', value: 'rum' }, { key: 'whatever', op: '=', value: 'a' }] },
    });
    assert.is(anyKey.status, 201);
    const bad = await call(other, 'POST', '/rbac/policies', {
      name: 'u', scope: { type: 'custom', filters: [{ key: 'svc_stream', op: '=', value: 'logs' }, { key: 'service', op: '=', value: 'a' }] },
    });
    assert.is(bad.status, 400);
  } finally {
    await other.stop();
  }
});

test.run();
