/**
 * The ScopeResolver's decisions: their shape (svc_stream selects streams, never reaches storage),
 * Admin and RBAC-off bypass, default policy, cache invalidation on every kind of change, and the
 * hydration Admin rule.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Principal } from '../../kernel/auth.js';
import { LookoutError } from '../../kernel/errors.js';
import { definePlugin } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import { requireAdminForHydration } from '../../plugins/rbac/index.js';
import type { TestServer } from '../helpers/server.js';
import { call, enc, rbacServer } from './helpers.js';

const ana: Principal = { kind: 'user', name: 'ana@example.com', role: 'Viewer', teams: [] };
const reader: Principal = { kind: 'service_account', name: 'reader', role: 'Viewer', teams: [] };
const admin: Principal = { kind: 'service_account', name: 'admin', role: 'Admin', teams: [] };

/** A mutating hydration-like route guarded by the exported rule. */
const fakeHydration = definePlugin({
  name: 'test-hydration-rule',
  register(ctx) {
    ctx.route({
      method: 'POST',
      path: '/__test/hydration/pause',
      family: 'plain',
      auth: 'bearer',
      handler: (req) => {
        requireAdminForHydration(req.principal, ctx.config);
        return { ok: true };
      },
    });
  },
});

const scopeOf = (srv: TestServer, p: Principal, stream: 'logs' | 'metrics' | 'events' | 'apm' | 'rum') =>
  srv.lookout.kernel.get(Tokens.ScopeResolver).scopeFor(p, stream);

let srv: TestServer;
test.before(async () => {
  srv = await rbacServer({}, { extraPlugins: [fakeHydration] });
});
test.after(async () => {
  await srv.stop();
});

test('scope shape: svc_stream picks streams, filters become AND-ed matchers, policies OR', async () => {
  const post = (name: string, filters: unknown[]) => call(srv, 'POST', '/rbac/policies', { name, scope: { type: 'custom', filters } });
  assert.is((await post('logs-a', [{ key: 'svc_stream', op: '=', value: 'logs' }, { key: 'service', op: '=', value: 'a' }, { key: 'env', op: '!~', value: 'prod|stag.*' }])).status, 201);
  assert.is((await post('jobs', [{ key: 'job', op: '=~', value: 'api|db' }])).status, 201);
  for (const p of ['logs-a', 'jobs']) {
    assert.is((await call(srv, 'POST', `/rbac/policies/${p}/mappings`, { entity_type: 'service_account', entity_name: 'reader' })).status, 201);
  }
  assert.equal(await scopeOf(srv, reader, 'logs'), [[{ name: 'service', op: '=', value: 'a' }, { name: 'env', op: '!~', value: 'prod|stag.*' }]]);
  // `job` is not a logs label, so "jobs" speaks only about metrics.
  assert.equal(await scopeOf(srv, reader, 'metrics'), [[{ name: 'job', op: '=~', value: 'api|db' }]]);
  // Nothing grants events: default deny.
  assert.equal(await scopeOf(srv, reader, 'events'), []);
  assert.is(await scopeOf(srv, admin, 'events'), undefined);
  // A second policy on logs ORs in.
  assert.is((await post('logs-b', [{ key: 'service', op: '=', value: 'b' }])).status, 201);
  await call(srv, 'POST', '/rbac/policies/logs-b/mappings', { entity_type: 'service_account', entity_name: 'reader' });
  assert.equal((await scopeOf(srv, reader, 'logs'))?.length, 2);
});

test('all grants everything; none grants nothing; a filterless custom grants its streams', async () => {
  await call(srv, 'POST', '/rbac/policies', { name: 'nothing', scope: { type: 'none', filters: [] } });
  await call(srv, 'POST', '/rbac/policies/nothing/mappings', { entity_type: 'user', entity_name: 'ana@example.com' });
  assert.equal(await scopeOf(srv, ana, 'logs'), []);
  await call(srv, 'POST', '/rbac/policies', { name: 'rum-only', scope: { type: 'custom', filters: [{ key: 'svc_stream', op: '=', value: 'rum' }] } });
  await call(srv, 'POST', '/rbac/policies/rum-only/mappings', { entity_type: 'user', entity_name: 'ana@example.com' });
  assert.is(await scopeOf(srv, ana, 'rum'), undefined);
  assert.equal(await scopeOf(srv, ana, 'apm'), []);
  await call(srv, 'POST', '/rbac/policies', { name: 'everything', scope: { type: 'all', filters: [{ key: 'service', op: '=', value: 'ignored' }] } });
  await call(srv, 'POST', '/rbac/policies/everything/mappings', { entity_type: 'user', entity_name: 'ana@example.com' });
  for (const s of ['logs', 'metrics', 'events', 'apm', 'rum'] as const) assert.is(await scopeOf(srv, ana, s), undefined);
});

test('cached decisions are invalidated by policy, mapping, team and membership changes', async () => {
  const bob: Principal = { kind: 'user', name: 'bob@example.com', role: 'Viewer', teams: [] };
  assert.equal(await scopeOf(srv, bob, 'logs'), []);
  await call(srv, 'POST', '/rbac/groups', { name: 'team x' });
  await call(srv, 'POST', '/rbac/policies/logs-b/mappings', { entity_type: 'group', entity_name: 'team x' });
  assert.equal(await scopeOf(srv, bob, 'logs'), []); // not a member yet
  await call(srv, 'PUT', `/rbac/groups/${enc('team x')}/users/${enc('bob@example.com')}`, { role: 'Member' });
  assert.equal(await scopeOf(srv, bob, 'logs'), [[{ name: 'service', op: '=', value: 'b' }]]);
  await call(srv, 'PUT', '/rbac/policies/logs-b', { name: 'logs-b', scope: { type: 'custom', filters: [{ key: 'service', op: '=', value: 'c' }] } });
  assert.equal(await scopeOf(srv, bob, 'logs'), [[{ name: 'service', op: '=', value: 'c' }]]);
  await call(srv, 'DELETE', `/rbac/policies/logs-b/mappings/group/${enc('team x')}`);
  assert.equal(await scopeOf(srv, bob, 'logs'), []);
  await call(srv, 'POST', '/rbac/policies/logs-b/mappings', { entity_type: 'group', entity_name: 'team x' });
  assert.equal((await scopeOf(srv, bob, 'logs'))?.length, 1);
  await call(srv, 'DELETE', `/rbac/groups/${enc('team x')}/users/${enc('bob@example.com')}`);
  assert.equal(await scopeOf(srv, bob, 'logs'), []);
  await call(srv, 'PUT', `/rbac/groups/${enc('team x')}/users/${enc('bob@example.com')}`, { role: 'Member' });
  assert.equal((await scopeOf(srv, bob, 'logs'))?.length, 1);
  await call(srv, 'DELETE', `/rbac/groups/${enc('team x')}`);
  assert.equal(await scopeOf(srv, bob, 'logs'), []);
  await call(srv, 'POST', '/rbac/policies/logs-b/mappings', { entity_type: 'user', entity_name: 'bob@example.com' });
  assert.equal((await scopeOf(srv, bob, 'logs'))?.length, 1);
  await call(srv, 'DELETE', '/rbac/policies/logs-b');
  assert.equal(await scopeOf(srv, bob, 'logs'), []);
});

test('hydration rule: non-Admin 403 with RBAC on (unit and HTTP)', async () => {
  const on = { rbac: { enabled: true, defaultPolicy: 'deny' as const } };
  for (const p of [ana, reader, { ...reader, role: 'Editor' as const }]) {
    try {
      requireAdminForHydration(p, on);
      assert.unreachable('should have thrown');
    } catch (e) {
      assert.instance(e, LookoutError);
      assert.is((e as LookoutError).status, 403);
    }
  }
  requireAdminForHydration(admin, on);
  requireAdminForHydration({ ...ana, role: 'Admin' }, on);
  const r = await call(srv, 'POST', '/__test/hydration/pause', {}, 'test-viewer-token');
  assert.is(r.status, 403);
  assert.match(r.text, /Forbidden/);
  assert.is((await call(srv, 'POST', '/__test/hydration/pause', {}, 'ana-token')).status, 403);
  assert.is((await call(srv, 'POST', '/__test/hydration/pause', {})).status, 200);
});

test('RBAC off: everyone sees everything, hydration mutations allowed, /rbac still Admin-only', async () => {
  const off = { rbac: { enabled: false, defaultPolicy: 'deny' as const } };
  requireAdminForHydration(ana, off);
  requireAdminForHydration(reader, off);
  const other = await rbacServer({ rbac: { enabled: false, defaultPolicy: 'deny' } }, { extraPlugins: [fakeHydration] });
  try {
    await call(other, 'POST', '/rbac/policies', { name: 'n', scope: { type: 'none', filters: [] } });
    await call(other, 'POST', '/rbac/policies/n/mappings', { entity_type: 'service_account', entity_name: 'reader' });
    for (const s of ['logs', 'metrics', 'events', 'apm', 'rum'] as const) {
      assert.is(await scopeOf(other, reader, s), undefined);
      assert.is(await scopeOf(other, ana, s), undefined);
    }
    assert.is((await call(other, 'POST', '/__test/hydration/pause', {}, 'test-viewer-token')).status, 200);
    assert.is((await call(other, 'GET', '/rbac/policies', undefined, 'test-viewer-token')).status, 403);
  } finally {
    await other.stop();
  }
});

test.run();
