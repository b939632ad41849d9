/**
 * The cardinality API (SPEC.md) over the real server: the three endpoints, instant and bucketed
 * windows, selectors, label restrictions, 400/401/403 and the RBAC scope.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Principal } from '../../kernel/auth.js';
import type { MatcherAlternatives } from '../../kernel/matchers.js';
import type { MetricSeriesInput } from '../../kernel/models.js';
import { definePlugin } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import { EDITOR_TOKEN, startTestServer, VIEWER_TOKEN, type TestServer } from '../helpers/server.js';

const T = 1_700_000_000; // request timestamp, Unix seconds

/** Viewer sees team "a" only; Editor sees nothing of the metrics stream. */
const scopePlugin = definePlugin({
  name: 'test-scope',
  after: ['rbac'],
  register(ctx) {
    ctx.provide(Tokens.ScopeResolver, {
      async scopeFor(p: Principal): Promise<MatcherAlternatives | undefined> {
        if (p.role === 'Viewer') return [[{ name: 'team', op: '=', value: 'a' }]];
        if (p.role === 'Editor') return [];
        return undefined;
      },
    });
  },
});

function series(labels: Record<string, string>, fromS: number, toS: number): MetricSeriesInput {
  const samples = [];
  for (let t = fromS; t <= toS; t += 15) samples.push({ t: t * 1000 + 500, v: 1 });
  return { labels, samples };
}

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({}, { extraPlugins: [scopePlugin] });
  await srv.lookout.kernel.get(Tokens.Ingest).write({
    metrics: [
      // Active through the whole last 10 minutes.
      series({ __name__: 'up', job: 'node', host: 'node-a', team: 'a' }, T - 600, T - 5),
      series({ __name__: 'up', job: 'node', host: 'node-b', team: 'b' }, T - 600, T - 5),
      series({ __name__: 'cpu', job: 'node', host: 'node-a', team: 'a', mode: 'idle' }, T - 600, T - 5),
      series({ __name__: 'cpu', job: 'node', host: 'node-a', team: 'a', mode: 'user' }, T - 600, T - 5),
      // Only in the first of two 5-minute buckets.
      series({ __name__: 'cpu', job: 'node', host: 'node-c', team: 'a', mode: 'idle' }, T - 590, T - 400),
    ],
  });
});
test.after(async () => {
  await srv.stop();
});

async function get(path: string, token?: string | null) {
  const res = await srv.fetch(`/api/v1/cardinality${path}`, { token });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as any };
}
const q = encodeURIComponent;

test('metrics_series: instant query gives one bucket', async () => {
  const r = await get(`/metrics_series?timestamp=${T}&duration=0&rollUpSeconds=0`);
  assert.is(r.status, 200);
  assert.equal(r.body, [{ bucketStart: T, overallCardinality: 4, metricNames: { cpu: 2, up: 2 } }]);
});

test('metrics_series: rollUpSeconds buckets over the duration', async () => {
  const r = await get(`/metrics_series?timestamp=${T}&duration=600&rollUpSeconds=300`);
  assert.equal(r.body, [
    { bucketStart: T - 600, overallCardinality: 5, metricNames: { cpu: 3, up: 2 } },
    { bucketStart: T - 300, overallCardinality: 4, metricNames: { cpu: 2, up: 2 } },
  ]);
  const one = await get(`/metrics_series?timestamp=${T}&duration=600&rollUpSeconds=600`);
  assert.equal(one.body.length, 1);
  assert.is(one.body[0].overallCardinality, 5);
});

test('match[]: metric with matchers, bare label matchers, regex alternatives, repeated', async () => {
  let r = await get(`/metrics_series?timestamp=${T}&duration=0&rollUpSeconds=0&match[]=${q('cpu{mode="idle"}')}`);
  assert.equal(r.body[0].metricNames, { cpu: 1 });
  r = await get(`/metrics_series?timestamp=${T}&duration=600&rollUpSeconds=600&match[]=${q('{host=~"node-a|node-c"}')}`);
  assert.equal(r.body[0], { bucketStart: T - 600, overallCardinality: 4, metricNames: { cpu: 3, up: 1 } });
  r = await get(
    `/metrics_series?timestamp=${T}&duration=0&rollUpSeconds=0&match[]=${q('up{host="node-b"}')}&match[]=${q('cpu{mode="user"}')}`,
  );
  assert.equal(r.body[0].metricNames, { cpu: 1, up: 1 });
});

test('series: label series counts, restricted by label', async () => {
  let r = await get(`/series?timestamp=${T}&duration=0&rollUpSeconds=0&aggregation=distinctcount`);
  assert.equal(r.body, [
    { bucketStart: T, overallCardinality: 4, labelNames: { __name__: 4, host: 4, job: 4, mode: 2, team: 4 } },
  ]);
  r = await get(`/series?timestamp=${T}&duration=0&rollUpSeconds=0&aggregation=distinctcount&label=mode&label=host`);
  assert.equal(r.body[0].labelNames, { mode: 2, host: 4 });
});

test('label_values: distinct values per label, per bucket', async () => {
  const r = await get(
    `/label_values?timestamp=${T}&duration=600&rollUpSeconds=300&aggregation=distinctcount&label=host&label=mode`,
  );
  assert.equal(r.body, [
    { bucketStart: T - 600, labelNames: { host: 3, mode: 2 } },
    { bucketStart: T - 300, labelNames: { host: 2, mode: 2 } },
  ]);
});

test('400: missing or bad parameters and selectors, with a JSON error body', async () => {
  const cases = [
    `/metrics_series?duration=0&rollUpSeconds=0`,
    `/metrics_series?timestamp=${T}&rollUpSeconds=0`,
    `/metrics_series?timestamp=${T}&duration=0`,
    `/metrics_series?timestamp=abc&duration=0&rollUpSeconds=0`,
    `/metrics_series?timestamp=${T}&duration=-5&rollUpSeconds=0`,
    `/metrics_series?timestamp=${T}&duration=600&rollUpSeconds=0`,
    `/metrics_series?timestamp=${T}&duration=0&rollUpSeconds=0&match[]=${q('up{')}`,
    `/metrics_series?timestamp=${T}&duration=0&rollUpSeconds=0&match[]=${q('rate(up[5m])')}`,
    `/series?timestamp=${T}&duration=0&rollUpSeconds=0`,
    `/series?timestamp=${T}&duration=0&rollUpSeconds=0&aggregation=sum`,
    `/label_values?timestamp=${T}&duration=0&rollUpSeconds=0&aggregation=distinctcount`,
    `/label_values?timestamp=${T}&duration=0&rollUpSeconds=0&label=host`,
  ];
  for (const c of cases) {
    const r = await get(c);
    assert.is(r.status, 400, c);
    assert.type(r.body.message, 'string', c);
  }
  const r = await get(`/metrics_series?timestamp=${T}&duration=0`);
  assert.match(r.body.message, /rollUpSeconds/);
});

test('401 without or with an invalid token; 403 when the scope grants no metrics', async () => {
  const path = `/metrics_series?timestamp=${T}&duration=0&rollUpSeconds=0`;
  assert.is((await get(path, null)).status, 401);
  assert.is((await get(path, 'nope')).status, 401);
  const f = await get(path, EDITOR_TOKEN);
  assert.is(f.status, 403);
  assert.match(f.body.message, /insufficient permissions/);
});

test('RBAC scope restricts every count', async () => {
  let r = await get(`/metrics_series?timestamp=${T}&duration=0&rollUpSeconds=0`, VIEWER_TOKEN);
  assert.equal(r.body, [{ bucketStart: T, overallCardinality: 3, metricNames: { cpu: 2, up: 1 } }]);
  r = await get(`/label_values?timestamp=${T}&duration=600&rollUpSeconds=600&aggregation=distinctcount&label=host`, VIEWER_TOKEN);
  assert.equal(r.body[0].labelNames, { host: 2 });
});

test.run();
