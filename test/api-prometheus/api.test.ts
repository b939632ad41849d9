/**
 * The Prometheus HTTP API over the real server: every endpoint, parameter forms (GET, POST
 * form bodies, Unix seconds and RFC 3339, durations), Prometheus' error bodies and statuses,
 * limits, bearer auth, the datasource proxy mount and the RBAC scope.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Principal } from '../../kernel/auth.js';
import type { MatcherAlternatives } from '../../kernel/matchers.js';
import type { MetricSeriesInput } from '../../kernel/models.js';
import { definePlugin } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import { startTestServer, VIEWER_TOKEN, type TestServer } from '../helpers/server.js';

const T0 = 1_700_000_000_000; // 2023-11-14T22:13:20Z
const T0S = T0 / 1000;
const PROXY = '/dashboards/api/datasources/proxy/uid/lookout-prometheus';

/** Viewers see only team "a" (a stand-in for RBAC policies). */
const scopePlugin = definePlugin({
  name: 'test-scope',
  after: ['rbac'],
  register(ctx) {
    ctx.provide(Tokens.ScopeResolver, {
      async scopeFor(p: Principal): Promise<MatcherAlternatives | undefined> {
        return p.role === 'Viewer' ? [[{ name: 'team', op: '=', value: 'a' }]] : undefined;
      },
    });
  },
});

function data(): MetricSeriesInput[] {
  const out: MetricSeriesInput[] = [];
  for (const [team, inst, rate] of [
    ['a', 'i1', 1],
    ['a', 'i2', 2],
    ['b', 'i3', 4],
  ] as const) {
    const samples = [];
    for (let i = 0; i <= 40; i++) samples.push({ t: T0 - 600_000 + i * 15_000, v: i * 15 * rate });
    out.push({ labels: { __name__: 'http_requests_total', job: 'api', instance: inst, team }, samples });
    out.push({
      labels: { __name__: 'temperature', instance: inst, team },
      samples: samples.map((s, i) => ({ t: s.t, v: 20 + i + rate })),
    });
  }
  return out;
}

let srv: TestServer;
let small: TestServer;

test.before(async () => {
  srv = await startTestServer({}, { extraPlugins: [scopePlugin] });
  await srv.lookout.kernel.get(Tokens.Ingest).write({
    metrics: data(),
    metadata: [{ metric: 'http_requests_total', type: 'counter', help: 'Requests served.', unit: '' }],
  });
  small = await startTestServer({ limits: { maxSamplesPerQuery: 10, maxQueryLength: 38, maxSeriesPerQuery: 2 } });
  await small.lookout.kernel.get(Tokens.Ingest).write({ metrics: data() });
});
test.after(async () => {
  await srv.stop();
  await small.stop();
});

async function get(path: string, token?: string | null, s: TestServer = srv) {
  const res = await s.fetch(path, { token });
  return { status: res.status, body: (await res.json()) as any };
}

async function post(path: string, form: Record<string, string | string[]>, s: TestServer = srv) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) for (const x of Array.isArray(v) ? v : [v]) p.append(k, x);
  const res = await s.fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: p.toString(),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const q = (s: string) => encodeURIComponent(s);

test('instant query: vector result with [time, "value"] samples', async () => {
  const { status, body } = await get(`/api/v1/query?query=${q('sum by (team) (http_requests_total)')}&time=${T0S}`);
  assert.is(status, 200);
  assert.is(body.status, 'success');
  assert.is(body.data.resultType, 'vector');
  const byTeam = Object.fromEntries(body.data.result.map((r: any) => [r.metric.team, r.value]));
  assert.equal(byTeam.a, [T0S, String(600 * 1 + 600 * 2)]);
  assert.equal(byTeam.b, [T0S, '2400']);
});

test('instant query: scalar and string results; time as RFC 3339 equals Unix seconds', async () => {
  let r = await get(`/api/v1/query?query=${q('1+1')}&time=${T0S}`);
  assert.equal(r.body.data, { resultType: 'scalar', result: [T0S, '2'] });
  r = await get(`/api/v1/query?query=${q('"hello"')}&time=2023-11-14T22:13:20Z`);
  assert.equal(r.body.data, { resultType: 'string', result: [T0S, 'hello'] });
  r = await get(`/api/v1/query?query=time()&time=2023-11-14T22:13:20.5%2B00:00`);
  assert.equal(r.body.data.result, [T0S + 0.5, String(T0S + 0.5)]);
  r = await get(`/api/v1/query?query=time()&time=${T0S}.123`);
  assert.equal(r.body.data.result[0], T0S + 0.123);
});

test('instant query: default time is now; POST form body', async () => {
  const before = Date.now() / 1000;
  const r = await get(`/api/v1/query?query=time()`);
  assert.ok(r.body.data.result[0] >= before - 1 && r.body.data.result[0] <= Date.now() / 1000 + 1);
  const p = await post('/api/v1/query', { query: 'count(temperature)', time: String(T0S) });
  assert.is(p.status, 200);
  assert.equal(p.body.data.result, [{ metric: {}, value: [T0S, '3'] }]);
});

test('range query: matrix result; step as seconds or duration; GET and POST agree', async () => {
  const base = `query=${q('rate(http_requests_total{instance="i1"}[2m])')}&start=${T0S - 120}&end=${T0S}`;
  const a = await get(`/api/v1/query_range?${base}&step=60`);
  const b = await get(`/api/v1/query_range?${base}&step=1m`);
  assert.is(a.status, 200);
  assert.is(a.body.data.resultType, 'matrix');
  assert.equal(a.body, b.body);
  const series = a.body.data.result;
  assert.is(series.length, 1);
  assert.equal(series[0].metric, { instance: 'i1', job: 'api', team: 'a' });
  assert.equal(
    series[0].values.map((v: [number, string]) => v[0]),
    [T0S - 120, T0S - 60, T0S],
  );
  for (const [, v] of series[0].values) assert.ok(Math.abs(Number(v) - 1) < 1e-9, v);
  const c = await post('/api/v1/query_range', {
    query: 'rate(http_requests_total{instance="i1"}[2m])',
    start: new Date((T0S - 120) * 1000).toISOString(),
    end: new Date(T0).toISOString(),
    step: '60',
  });
  assert.equal(c.body, a.body);
});

test('query errors: Prometheus error bodies and statuses', async () => {
  let r = await get(`/api/v1/query?query=${q('sum(rate(x[5m])')}`);
  assert.is(r.status, 400);
  assert.is(r.body.status, 'error');
  assert.is(r.body.errorType, 'bad_data');
  assert.match(r.body.error, /^invalid parameter "query": 1:\d+: parse error: /);
  r = await get(`/api/v1/query`);
  assert.is(r.status, 400);
  assert.match(r.body.error, /^invalid parameter "query": /);
  r = await get(`/api/v1/query?query=up&time=yesterday`);
  assert.equal(r.body, {
    status: 'error',
    errorType: 'bad_data',
    error: 'invalid parameter "time": cannot parse "yesterday" to a valid timestamp',
  });
  r = await get(`/api/v1/query?query=up&timeout=soon`);
  assert.is(r.body.error, 'invalid parameter "timeout": cannot parse "soon" to a valid duration');
  r = await get(`/api/v1/query_range?query=up&end=1&step=1`);
  assert.is(r.body.error, 'invalid parameter "start": cannot parse "" to a valid timestamp');
  r = await get(`/api/v1/query_range?query=up&start=10&end=1&step=1`);
  assert.is(r.body.error, 'end timestamp must not be before start time');
  r = await get(`/api/v1/query_range?query=up&start=1&end=10`);
  assert.is(r.body.error, 'invalid parameter "step": cannot parse "" to a valid duration');
  r = await get(`/api/v1/query_range?query=up&start=1&end=10&step=0`);
  assert.is(r.status, 400);
  assert.match(r.body.error, /^zero or negative query resolution step widths are not accepted/);
  r = await get(`/api/v1/query_range?query=up&start=0&end=100000&step=1`);
  assert.is(r.status, 400);
  assert.match(r.body.error, /^exceeded maximum resolution of 11,000 points per timeseries/);
  r = await get(`/api/v1/query?query=${q('label_replace(up, "x", "$1", "y", "(")')}&time=${T0S}`);
  assert.ok(r.status === 400 || r.status === 422, String(r.status));
  assert.is(r.body.status, 'error');
});

test('limits: samples per query (422 execution), query length (400), series per query (422)', async () => {
  let r = await get(`/api/v1/query?query=${q('sum(count_over_time(temperature[10m]))')}&time=${T0S}`, undefined, small);
  assert.is(r.status, 422);
  assert.is(r.body.errorType, 'execution');
  assert.match(r.body.error, /too many samples/);
  r = await get(`/api/v1/query?query=${q('temperature + temperature + temperature')}&time=${T0S}`, undefined, small);
  assert.is(r.status, 400);
  assert.is(r.body.errorType, 'bad_data');
  assert.match(r.body.error, /maxQueryLength/);
  r = await get(`/api/v1/query?query=${q('temperature')}&time=${T0S}`, undefined, small);
  assert.is(r.status, 422);
  assert.match(r.body.error, /maxSeriesPerQuery/);
  r = await get(`/api/v1/query?query=${q('temperature')}&time=${T0S}&limit=1`, undefined, small);
  assert.is(r.status, 200);
  assert.is(r.body.data.result.length, 1);
  assert.equal(r.body.warnings, ['results truncated due to limit']);
});

test('timeout: a query past its deadline answers 503 timeout', async () => {
  const r = await get(`/api/v1/query?query=${q('sum(temperature)')}&time=${T0S}&timeout=0`);
  assert.equal(r.body, { status: 'error', errorType: 'timeout', error: 'query timed out in query execution' });
  assert.is(r.status, 503);
});

test('series: match[] required, repeatable, start/end, limit', async () => {
  let r = await get(`/api/v1/series`);
  assert.equal(r.body, { status: 'error', errorType: 'bad_data', error: 'no match[] parameter provided' });
  // Prometheus' selector parser already refuses selectors that match everything.
  r = await get(`/api/v1/series?match[]=${q('{job=~".*"}')}`);
  assert.is(r.status, 400);
  assert.is(r.body.error, '1:1: parse error: vector selector must contain at least one non-empty matcher');
  r = await get(`/api/v1/series?match[]=${q('up{')}`);
  assert.is(r.status, 400);
  assert.match(r.body.error, /^1:\d+: parse error/);
  r = await get(`/api/v1/series?match[]=${q('temperature{instance="i1"}')}&match[]=${q('{instance="i3",job="api"}')}&start=${T0S - 60}&end=${T0S}`);
  assert.is(r.status, 200);
  const got = r.body.data.map((l: Record<string, string>) => `${l.__name__}/${l.instance}`).sort();
  assert.equal(got, ['http_requests_total/i3', 'temperature/i1']);
  r = await get(`/api/v1/series?match[]=temperature&start=${T0S + 3600}&end=${T0S + 7200}`);
  assert.equal(r.body.data, []);
  r = await post('/api/v1/series', { 'match[]': ['temperature'], limit: '2' });
  assert.is(r.body.data.length, 2);
  assert.equal(r.body.warnings, ['results truncated due to limit']);
  r = await get(`/api/v1/series?match[]=temperature&limit=-1`);
  assert.is(r.status, 400);
  assert.is(r.body.error, 'invalid parameter "limit": limit must be non-negative');
});

test('labels and label values: match[], time range, __name__, limit', async () => {
  let r = await get(`/api/v1/labels`);
  assert.equal(r.body.data, ['__name__', 'instance', 'job', 'team']);
  r = await post('/api/v1/labels', { 'match[]': 'temperature' });
  assert.equal(r.body.data, ['__name__', 'instance', 'team']);
  r = await get(`/api/v1/label/__name__/values`);
  assert.equal(r.body, { status: 'success', data: ['http_requests_total', 'temperature'] });
  r = await get(`/api/v1/label/instance/values?match[]=${q('http_requests_total{team="b"}')}`);
  assert.equal(r.body.data, ['i3']);
  r = await get(`/api/v1/label/instance/values?start=${T0S + 3600}&end=${T0S + 7200}`);
  assert.equal(r.body.data, []);
  r = await get(`/api/v1/label/instance/values?limit=1`);
  assert.equal(r.body.data, ['i1']);
  assert.equal(r.body.warnings, ['results truncated due to limit']);
  r = await get(`/api/v1/label/nope/values`);
  assert.equal(r.body.data, []);
  r = await get(`/api/v1/label/instance/values?start=abc`);
  assert.is(r.body.error, 'invalid parameter "start": cannot parse "abc" to a valid timestamp');
});

test('metadata: all, by metric, limit', async () => {
  let r = await get(`/api/v1/metadata`);
  assert.equal(r.body, {
    status: 'success',
    data: { http_requests_total: [{ type: 'counter', help: 'Requests served.', unit: '' }] },
  });
  r = await get(`/api/v1/metadata?metric=temperature`);
  assert.equal(r.body.data, {});
  r = await get(`/api/v1/metadata?limit=0`);
  assert.equal(r.body.data, {});
  r = await get(`/api/v1/metadata?limit=x`);
  assert.equal(r.body, { status: 'error', errorType: 'bad_data', error: 'limit must be a number' });
});

test('status, rules, alerts, exemplars, format_query', async () => {
  let r = await get(`/api/v1/status/buildinfo`);
  assert.is(r.body.status, 'success');
  assert.type(r.body.data.version, 'string');
  for (const k of ['revision', 'branch', 'buildUser', 'buildDate', 'goVersion']) assert.ok(k in r.body.data, k);
  r = await get(`/api/v1/status/config`);
  assert.match(r.body.data.yaml, /global:/);
  r = await get(`/api/v1/status/runtimeinfo`);
  assert.type(r.body.data.storageRetention, 'string');
  r = await get(`/api/v1/status/flags`);
  assert.is(r.body.data['query.lookback-delta'], '5m');
  assert.equal((await get(`/api/v1/rules`)).body, { status: 'success', data: { groups: [] } });
  assert.equal((await get(`/api/v1/alerts`)).body, { status: 'success', data: { alerts: [] } });
  assert.equal((await get(`/api/v1/query_exemplars?query=up&start=1&end=2`)).body, { status: 'success', data: [] });
  r = await get(`/api/v1/format_query?query=${q('sum(rate(foo{bar="baz"}[5m]))by(x)')}`);
  assert.is(r.body.status, 'success');
  assert.match(r.body.data, /sum by \(x\) \(rate\(foo\{bar="baz"\}\[5m\]\)\)/);
  r = await get(`/api/v1/format_query?query=${q('sum(')}`);
  assert.is(r.status, 400);
  assert.match(r.body.error, /^invalid parameter "query": 1:\d+: parse error/);
});

test('bearer auth: 401 without or with a bad token, in Prometheus error format', async () => {
  let r = await get(`/api/v1/query?query=1`, null);
  assert.is(r.status, 401);
  assert.is(r.body.status, 'error');
  assert.is(r.body.errorType, 'unauthorized');
  r = await get(`/api/v1/labels`, 'wrong');
  assert.is(r.status, 401);
});

test('every route is also mounted under the datasource proxy path', async () => {
  for (const p of [
    `/api/v1/query?query=1&time=${T0S}`,
    `/api/v1/query_range?query=1&start=1&end=2&step=1`,
    `/api/v1/labels`,
    `/api/v1/label/__name__/values`,
    `/api/v1/series?match[]=temperature`,
    `/api/v1/metadata`,
    `/api/v1/status/buildinfo`,
    `/api/v1/rules`,
  ]) {
    const direct = await get(p);
    const proxied = await get(PROXY + p);
    assert.is(proxied.status, 200, p);
    assert.equal(proxied.body, direct.body, p);
  }
});

test('RBAC scope applies to every selector and index lookup', async () => {
  const v = VIEWER_TOKEN;
  let r = await get(`/api/v1/query?query=${q('count(http_requests_total)')}&time=${T0S}`, v);
  assert.equal(r.body.data.result[0].value, [T0S, '2']);
  r = await get(`/api/v1/query?query=${q('http_requests_total{team="b"}')}&time=${T0S}`, v);
  assert.equal(r.body.data.result, []);
  r = await get(`/api/v1/query_range?query=${q('count(temperature)')}&start=${T0S - 60}&end=${T0S}&step=60`, v);
  assert.equal(r.body.data.result[0].values, [
    [T0S - 60, '2'],
    [T0S, '2'],
  ]);
  r = await get(`/api/v1/series?match[]=temperature`, v);
  assert.equal(r.body.data.map((l: Record<string, string>) => l.team), ['a', 'a']);
  r = await get(`/api/v1/label/team/values`, v);
  assert.equal(r.body.data, ['a']);
  r = await get(`/api/v1/label/instance/values`, v);
  assert.equal(r.body.data, ['i1', 'i2']);
  // Admin is unrestricted.
  r = await get(`/api/v1/label/team/values`);
  assert.equal(r.body.data, ['a', 'b']);
});

test('status/tsdb: head cardinality statistics of recent series, within the RBAC scope', async () => {
  const now = Date.now();
  await srv.lookout.kernel.get(Tokens.Ingest).write({
    metrics: [
      { labels: { __name__: 'tsdb_probe', team: 'a', pod: 'p1' }, samples: [{ t: now - 1000, v: 1 }] },
      { labels: { __name__: 'tsdb_probe', team: 'a', pod: 'p2' }, samples: [{ t: now - 1000, v: 1 }] },
      { labels: { __name__: 'tsdb_probe', team: 'b', pod: 'p3' }, samples: [{ t: now - 1000, v: 1 }] },
    ],
  });
  let r = await get('/api/v1/status/tsdb');
  assert.is(r.status, 200);
  assert.is(r.body.status, 'success');
  const d = r.body.data;
  assert.is(d.headStats.numSeries, 3);
  assert.equal(d.seriesCountByMetricName, [{ name: 'tsdb_probe', value: 3 }]);
  assert.equal(d.labelValueCountByLabelName[0], { name: 'pod', value: 3 });
  assert.ok(d.seriesCountByLabelValuePair.some((x: { name: string; value: number }) => x.name === 'team=a' && x.value === 2));
  assert.ok(Array.isArray(d.memoryInBytesByLabelName));
  r = await get('/api/v1/status/tsdb?limit=1');
  assert.is(r.body.data.labelValueCountByLabelName.length, 1);
  assert.is((await get('/api/v1/status/tsdb?limit=x')).status, 400);
  // A viewer (scope team="a") only sees its own series in the figures.
  r = await get('/api/v1/status/tsdb', VIEWER_TOKEN);
  assert.is(r.body.data.headStats.numSeries, 2);
  assert.is((await get(PROXY + '/api/v1/status/tsdb')).status, 200);
});

test.run();
