/** docs/rbac.md's worked example, step by step over HTTP: policy → team → user → what she sees. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tokens } from '../../kernel/services.js';
import type { TestServer } from '../helpers/server.js';
import { call, enc, rbacServer } from './helpers.js';

let srv: TestServer;
test.before(async () => {
  srv = await rbacServer();
  const t = Date.now() - 30_000;
  const series = [
    [{ service: 'checkout', env: 'prod' }, 5],
    [{ service: 'cart', env: 'prod' }, 3],
    [{ service: 'billing', env: 'prod' }, 7],
    [{ env: 'prod' }, 1],
  ] as const;
  await srv.lookout.kernel.get(Tokens.Storage).metrics.append(
    series.map(([l, v]) => ({ labels: { __name__: 'http_requests_total', ...l }, samples: [{ t, v }] })),
  );
});
test.after(async () => {
  await srv.stop();
});

test('the example', async () => {
  const policy = {
    name: 'checkout-read',
    scope: {
      type: 'custom',
      filters: [
        { key: 'svc_stream', op: '=~', value: 'logs|metrics' },
        { key: 'service', op: '=~', value: 'checkout|cart' },
      ],
    },
  };
  assert.is((await call(srv, 'POST', '/rbac/policies', policy)).status, 201);
  const team = await call(srv, 'POST', '/rbac/groups', { name: 'payments' });
  assert.equal(team.body, { name: 'payments', email: '', member_count: 0, local_dashboard_id: 1 });
  const put = await call(srv, 'PUT', `/rbac/groups/payments/users/${enc('ana@example.com')}`, { role: 'Member' });
  assert.equal(put.body, { message: 'user ana@example.com added to team payments as Member' });
  const map = await call(srv, 'POST', '/rbac/policies/checkout-read/mappings', {
    policy_name: 'checkout-read',
    entity_type: 'group',
    entity_name: 'payments',
  });
  assert.is(map.status, 201);
  const eff = await call(srv, 'GET', `/rbac/users/${enc('ana@example.com')}/effective-policies`);
  const entry = { type: 'custom', filters: policy.scope.filters, policy_name: 'checkout-read' };
  const deny = { type: 'none', policy_name: 'default-deny-policy' };
  assert.equal(eff.body, {
    name: 'ana@example.com',
    entity_type: 'user',
    policies: [],
    scopes: { logs: [entry], metrics: [entry], events: [deny], apm: [deny], rum: [deny] },
    direct_policy_count: 0,
    total_policy_count: 1,
  });

  const probe = await call(srv, 'GET', `/api/v1/query?query=${enc('vector(1)')}`);
  if (probe.status === 404) {
    console.log('SKIP: /api/v1/query is not served (api-prometheus not enabled); PromQL part of the example not checked');
    return;
  }
  const sum = async (token: string) => {
    const r = await call(srv, 'GET', `/api/v1/query?query=${enc('sum(http_requests_total)')}`, undefined, token);
    assert.is(r.status, 200, r.text);
    return r.body.data.result.length ? Number(r.body.data.result[0].value[1]) : 0;
  };
  assert.is(await sum('ana-token'), 8);
  assert.is(await sum('test-admin-token'), 16);
  const values = await call(srv, 'GET', '/api/v1/label/service/values', undefined, 'ana-token');
  assert.equal(values.body.data, ['cart', 'checkout']);
  // Step 5: out of the team, default deny.
  await call(srv, 'DELETE', `/rbac/groups/payments/users/${enc('ana@example.com')}`);
  assert.is(await sum('ana-token'), 0);
});

test.run();
