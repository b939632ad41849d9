/**
 * Randomized property test of enforcement: random policies (custom scopes with all four
 * operators and `|` alternatives, all, none, svc_stream selection) assigned to random teams,
 * users and a service account; random users in random teams. For every principal, what each
 * query path returns must equal a brute-force filter of the data by an independent model of
 * SPEC.md's rules. Seeded (LOOKOUT_RBAC_SEED), ≥200 cases (LOOKOUT_RBAC_WORLDS scales it).
 *
 * Query paths: the kernel query context + storage pushdown (always, through a test route that
 * does what every query plugin does); the Prometheus API (series, labels, label values, PromQL
 * count and sum by), cardinality and SvcQL counts over GraphQL when those plugins answer.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RE2JS } from 're2js';
import { definePlugin } from '../../kernel/plugin.js';
import { createQueryContext } from '../../kernel/query-context.js';
import { Tokens } from '../../kernel/services.js';
import { labelsKey, type Labels, type LogRecord, type MetricSeriesInput } from '../../kernel/models.js';
import type { SignalStream } from '../../kernel/extension-points.js';
import { ADMIN_TOKEN, EDITOR_TOKEN, VIEWER_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';
import { call, enc } from './helpers.js';

const SEED = Number(process.env.LOOKOUT_RBAC_SEED ?? 20261122);
const WORLDS_PER_SERVER = Number(process.env.LOOKOUT_RBAC_WORLDS ?? 24);

// ---- deterministic randomness -----------------------------------------------------------------
function mulberry32(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
let rnd = mulberry32(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const chance = (p: number) => rnd() < p;

// ---- data -------------------------------------------------------------------------------------
const DOMAIN: Record<string, string[]> = {
  service: ['checkout', 'cart', 'auth', 'search-api'],
  env: ['prod', 'staging', 'dev'],
  namespace: ['ns1', 'ns2', 'team-3'],
  host: ['h1', 'h2', 'h3'],
  job: ['api', 'db', 'web'],
  level: ['info', 'warn', 'error'],
};
const METRIC_NAMES = ['http_requests', 'cpu_seconds', 'mem_bytes'];
const NOW_MS = Math.floor(Date.now() / 1000) * 1000;
const SAMPLE_MS = NOW_MS - 60_000;

interface Series {
  labels: Labels;
  value: number;
}
interface Log {
  labels: Labels;
  message: string;
}

function maybe(labels: Record<string, string>, key: string, pAbsent: number) {
  if (!chance(pAbsent)) labels[key] = pick(DOMAIN[key]!);
}

function makeData(): { series: Series[]; logs: Log[] } {
  const series: Series[] = [];
  for (let i = 0; i < 120; i++) {
    const l: Record<string, string> = { __name__: pick(METRIC_NAMES), instance: `i${i}` };
    maybe(l, 'service', 0.15);
    maybe(l, 'env', 0.2);
    maybe(l, 'namespace', 0.1);
    maybe(l, 'host', 0.3);
    maybe(l, 'job', 0.1);
    series.push({ labels: l, value: 1 + Math.floor(rnd() * 100) });
  }
  const logs: Log[] = [];
  for (let i = 0; i < 120; i++) {
    const l: Record<string, string> = { svc_stream: 'logs' };
    maybe(l, 'service', 0.15);
    maybe(l, 'env', 0.2);
    maybe(l, 'namespace', 0.1);
    maybe(l, 'host', 0.3);
    maybe(l, 'level', 0.1);
    logs.push({ labels: l, message: `log-${i}` });
  }
  return { series, logs };
}

// ---- the independent model of SPEC.md's rules ---------------------------------------------------
interface Filter {
  key: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}
interface PolicySpec {
  name: string;
  type: 'all' | 'none' | 'custom';
  filters: Filter[];
}
const STREAMS: SignalStream[] = ['logs', 'metrics', 'events', 'apm', 'rum'];

function holds(f: Filter, v: string): boolean {
  switch (f.op) {
    case '=':
      return v === f.value;
    case '!=':
      return v !== f.value;
    case '=~':
      return RE2JS.compile(`^(?:${f.value})$`).matches(v);
    case '!~':
      return !RE2JS.compile(`^(?:${f.value})$`).matches(v);
  }
}

type Allowed = Record<SignalStream, string[]>;
const allowedFor = (allowed: Allowed, s: SignalStream, key: string) => key === 'svc_stream' || allowed[s].includes(key);
const selects = (p: PolicySpec, s: SignalStream) => p.filters.every((f) => f.key !== 'svc_stream' || holds(f, s));

function expectedValid(p: PolicySpec, allowed: Allowed): boolean {
  const sel = STREAMS.filter((s) => selects(p, s));
  return sel.length > 0 && p.filters.every((f) => sel.some((s) => allowedFor(allowed, s, f.key)));
}

/** Does this principal (with these policies) see a record of this stream? */
function sees(policies: PolicySpec[], stream: SignalStream, labels: Labels, allowed: Allowed, defaultAllow: boolean): boolean {
  const granting = policies.filter(
    (p) =>
      p.type === 'all' ||
      (p.type === 'custom' && selects(p, stream) && p.filters.every((f) => allowedFor(allowed, stream, f.key))),
  );
  if (granting.length === 0) return defaultAllow;
  return granting.some(
    (p) => p.type === 'all' || p.filters.every((f) => f.key === 'svc_stream' || holds(f, labels[f.key] ?? '')),
  );
}

// ---- random policies ----------------------------------------------------------------------------
function randomValue(key: string, op: Filter['op']): string {
  const d = DOMAIN[key]!;
  if (op === '=' || op === '!=') return pick([...d, ...d, '', 'zzz']);
  const r = rnd();
  if (r < 0.45) {
    const n = 1 + Math.floor(rnd() * 3);
    return [...new Set(Array.from({ length: n }, () => pick(d)))].join('|');
  }
  if (r < 0.65) return `${pick(d).slice(0, 2)}.*`;
  if (r < 0.75) return pick(['.*', '.+', '']);
  if (r < 0.9) return `(${pick(d)}|${pick(d).slice(0, 1)}.*)`;
  return `(?i)${pick(d).toUpperCase()}`;
}

const STREAM_FILTERS: Filter[] = [
  { key: 'svc_stream', op: '=', value: 'logs' },
  { key: 'svc_stream', op: '=', value: 'metrics' },
  { key: 'svc_stream', op: '!=', value: 'logs' },
  { key: 'svc_stream', op: '=~', value: 'logs|metrics' },
  { key: 'svc_stream', op: '=~', value: 'metrics|apm' },
  { key: 'svc_stream', op: '!~', value: 'metrics' },
  { key: 'svc_stream', op: '=', value: 'events' },
  { key: 'svc_stream', op: '=', value: 'nosuch' },
];

function randomPolicy(name: string): PolicySpec {
  const r = rnd();
  const type = r < 0.08 ? 'all' : r < 0.18 ? 'none' : 'custom';
  const filters: Filter[] = [];
  if (chance(0.3)) filters.push(pick(STREAM_FILTERS));
  const n = chance(0.15) ? 0 : 1 + Math.floor(rnd() * 2.5);
  for (let i = 0; i < n; i++) {
    const key = pick(Object.keys(DOMAIN));
    const op = pick(['=', '!=', '=~', '!~'] as const);
    filters.push({ key, op, value: randomValue(key, op) });
  }
  return { name, type, filters };
}

// ---- the test route: what a query plugin does -----------------------------------------------------
const probe = definePlugin({
  name: 'test-rbac-probe',
  register(ctx) {
    ctx.route({
      method: 'GET',
      path: '/__test/visible',
      family: 'json',
      auth: 'bearer',
      handler: async (req) => {
        const qc = createQueryContext(ctx, req.principal, { signal: req.signal });
        const metricsScope = await qc.scope('metrics');
        const series = await qc.storage.metrics.series([[{ name: '__name__', op: '=~', value: '.+' }]], NOW_MS - 3_600_000, NOW_MS, metricsScope);
        const logs: string[] = [];
        for await (const b of qc.storage.logs.scan({
          startNs: BigInt(NOW_MS - 3_600_000) * 1_000_000n,
          endNs: BigInt(NOW_MS + 1) * 1_000_000n,
          scope: await qc.scope('logs'),
        })) {
          for (const r of b.records) logs.push(r.message);
        }
        return { series: series.map(labelsKey).sort(), logs: logs.sort() };
      },
    });
  },
});

// ---- the run ------------------------------------------------------------------------------------
const USERS = ['u1@example.com', 'u2@example.com', 'u3@example.com', 'u4@example.com'].map((email, i) => ({
  email,
  token: `u${i + 1}-token`,
}));
const TEAMS = ['team one', 'ops/two'];

interface Principal {
  label: string;
  token: string;
  policies: PolicySpec[];
  admin?: boolean;
}

const exercised: Record<string, number> = {};
const unavailable = new Map<string, string>();
const mark = (k: string) => (exercised[k] = (exercised[k] ?? 0) + 1);
let cases = 0;
const shape = { none: 0, some: 0, all: 0, rejectedPolicies: 0 };

/** A path is checked when it answers the Admin's probe with 200 (plugin present and working). */
async function available(srv: TestServer, name: string, path: string, init: RequestInit = {}): Promise<boolean> {
  const r = await srv.fetch(path, { ...init, token: ADMIN_TOKEN });
  const text = await r.text();
  if (r.status !== 200 || /"errors"\s*:/.test(text)) {
    unavailable.set(name, r.status === 404 ? 'plugin not present' : `probe answered ${r.status}: ${text.slice(0, 120)}`);
    return false;
  }
  return true;
}

const setEq = (a: Iterable<string>, b: Iterable<string>, msg: string) => assert.equal([...new Set(a)].sort(), [...new Set(b)].sort(), msg);

async function runServer(defaultPolicy: 'allow' | 'deny') {
  const srv = await startTestServer(
    { auth: { users: USERS }, rbac: { enabled: true, defaultPolicy } },
    { extraPlugins: [probe] },
  );
  try {
    const data = makeData();
    const storage = srv.lookout.kernel.get(Tokens.Storage);
    await storage.metrics.append(
      data.series.map((s): MetricSeriesInput => ({ labels: s.labels, samples: [{ t: SAMPLE_MS, v: s.value }] })),
    );
    await storage.logs.append(
      data.logs.map((l, i): LogRecord => ({
        timestampNs: BigInt(SAMPLE_MS) * 1_000_000n + BigInt(i),
        message: l.message,
        labels: l.labels,
        facets: {},
      })),
    );
    const allowed = (await call(srv, 'GET', '/rbac/allowed-labels')).body as Allowed;
    const end = Math.floor(NOW_MS / 1000);
    const range = `start=${end - 3600}&end=${end}`;
    const has = {
      series: await available(srv, '/api/v1/series', `/api/v1/series?match[]=${enc('{__name__=~".+"}')}&${range}`),
      query: await available(srv, '/api/v1/query', `/api/v1/query?query=${enc('vector(1)')}&time=${end}`),
      labels: await available(srv, '/api/v1/labels', `/api/v1/labels?${range}`),
      values: await available(srv, '/api/v1/label/{name}/values', `/api/v1/label/service/values?${range}`),
      card: await available(srv, '/api/v1/cardinality/metrics_series', `/api/v1/cardinality/metrics_series?timestamp=${end}&duration=3600&rollUpSeconds=3600`),
      svcql: await available(srv, 'GraphQL /query SvcQL', '/query', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: `query { getLogMetricsResultWithSvcQl(query: "* | count by service", startTs: "${new Date(NOW_MS - 3_600_000).toISOString()}", endTs: "${new Date(NOW_MS + 1000).toISOString()}") { ColumnHeaders TableResult } }`,
        }),
      }),
    };

    for (let w = 0; w < WORLDS_PER_SERVER; w++) {
      // Reset: deleting policies removes their assignments; deleting teams removes memberships.
      for (const p of (await call(srv, 'GET', '/rbac/policies')).body.policies) {
        assert.is((await call(srv, 'DELETE', `/rbac/policies/${enc(p.name)}`)).status, 204);
      }
      for (const g of (await call(srv, 'GET', '/rbac/groups')).body.groups) {
        assert.is((await call(srv, 'DELETE', `/rbac/groups/${enc(g.name)}`)).status, 204);
      }
      for (const t of TEAMS) assert.is((await call(srv, 'POST', '/rbac/groups', { name: t })).status, 201);

      const policies: PolicySpec[] = [];
      const nPolicies = 1 + Math.floor(rnd() * 4);
      for (let i = 0; i < nPolicies; i++) {
        const p = randomPolicy(`p${w}-${i}`);
        const r = await call(srv, 'POST', '/rbac/policies', { name: p.name, scope: { type: p.type, filters: p.filters } });
        const valid = expectedValid(p, allowed);
        assert.is(r.status, valid ? 201 : 400, `${JSON.stringify(p)} → ${r.text}`);
        if (valid) policies.push(p);
        else shape.rejectedPolicies++;
      }
      const teamMembers: Record<string, string[]> = {};
      for (const t of TEAMS) {
        teamMembers[t] = [];
        for (const u of USERS) {
          if (!chance(0.55)) continue;
          const role = pick(['Member', 'Admin']);
          assert.is((await call(srv, 'PUT', `/rbac/groups/${enc(t)}/users/${enc(u.email)}`, { role })).status, 200);
          teamMembers[t]!.push(u.email);
        }
      }
      const assigned: Record<string, PolicySpec[]> = {};
      const assign = async (p: PolicySpec, type: string, name: string) => {
        const r = await call(srv, 'POST', `/rbac/policies/${enc(p.name)}/mappings`, { entity_type: type, entity_name: name });
        assert.is(r.status, 201);
        (assigned[`${type}:${name}`] ??= []).push(p);
      };
      for (const p of policies) {
        for (const t of TEAMS) if (chance(0.55)) await assign(p, 'group', t);
        for (const u of USERS) if (chance(0.2)) await assign(p, 'user', u.email);
        if (chance(0.4)) await assign(p, 'service_account', 'reader');
      }

      const principals: Principal[] = USERS.map((u) => {
        const ps = [...(assigned[`user:${u.email}`] ?? [])];
        for (const t of TEAMS) if (teamMembers[t]!.includes(u.email)) ps.push(...(assigned[`group:${t}`] ?? []));
        return { label: u.email, token: u.token, policies: ps };
      });
      principals.push({ label: 'reader', token: VIEWER_TOKEN, policies: assigned['service_account:reader'] ?? [] });
      principals.push({ label: 'editor', token: EDITOR_TOKEN, policies: [] });
      if (w % 4 === 0) principals.push({ label: 'admin', token: ADMIN_TOKEN, policies: [], admin: true });

      for (const pr of principals) {
        cases++;
        const ctx = `seed ${SEED} world ${w} default ${defaultPolicy} principal ${pr.label} policies ${JSON.stringify(pr.policies)}`;
        /** No policy of the principal grants the stream and the default denies it. */
        const noAccess = (stream: SignalStream) =>
          !pr.admin && defaultPolicy === 'deny' && !pr.policies.some((p) => p.type === 'all' || (p.type === 'custom' && selects(p, stream) && p.filters.every((f) => allowedFor(allowed, stream, f.key))));
        const visS = data.series.filter((s) => pr.admin || sees(pr.policies, 'metrics', s.labels, allowed, defaultPolicy === 'allow'));
        const visL = data.logs.filter((l) => pr.admin || sees(pr.policies, 'logs', l.labels, allowed, defaultPolicy === 'allow'));

        const frac = visS.length + visL.length;
        shape[frac === 0 ? 'none' : frac === data.series.length + data.logs.length ? 'all' : 'some']++;
        const v = await call(srv, 'GET', '/__test/visible', undefined, pr.token);
        assert.is(v.status, 200);
        assert.equal(v.body.series, visS.map((s) => labelsKey(s.labels)).sort(), `storage metrics: ${ctx}`);
        assert.equal(v.body.logs, visL.map((l) => l.message).sort(), `storage logs: ${ctx}`);
        mark('query context + storage (metrics series, log scan)');

        if (has.series) {
          const r = await call(srv, 'GET', `/api/v1/series?match[]=${enc('{__name__=~".+"}')}&${range}`, undefined, pr.token);
          assert.is(r.status, 200, r.text);
          setEq(r.body.data.map((l: Labels) => labelsKey(l)), visS.map((s) => labelsKey(s.labels)), `/api/v1/series: ${ctx}`);
          mark('/api/v1/series');
        }
        if (has.labels) {
          const r = await call(srv, 'GET', `/api/v1/labels?${range}`, undefined, pr.token);
          assert.is(r.status, 200, r.text);
          setEq(r.body.data, visS.flatMap((s) => Object.keys(s.labels)), `/api/v1/labels: ${ctx}`);
          mark('/api/v1/labels');
        }
        if (has.values) {
          for (const name of ['service', '__name__']) {
            const r = await call(srv, 'GET', `/api/v1/label/${name}/values?${range}`, undefined, pr.token);
            assert.is(r.status, 200, r.text);
            setEq(r.body.data, visS.flatMap((s) => (s.labels[name] ? [s.labels[name]!] : [])), `label values ${name}: ${ctx}`);
          }
          mark('/api/v1/label/{name}/values');
        }
        if (has.query) {
          const r = await call(srv, 'GET', `/api/v1/query?query=${enc('count({__name__=~".+"})')}&time=${end}`, undefined, pr.token);
          assert.is(r.status, 200, r.text);
          const got = r.body.data.result.length === 0 ? 0 : Number(r.body.data.result[0].value[1]);
          assert.is(got, visS.length, `PromQL count: ${ctx}`);
          const s = await call(srv, 'GET', `/api/v1/query?query=${enc('sum by (env) ({__name__=~".+"})')}&time=${end}`, undefined, pr.token);
          assert.is(s.status, 200, s.text);
          const want: Record<string, number> = {};
          for (const x of visS) want[x.labels.env ?? ''] = (want[x.labels.env ?? ''] ?? 0) + x.value;
          const gotSums: Record<string, number> = {};
          for (const e of s.body.data.result) gotSums[e.metric.env ?? ''] = Number(e.value[1]);
          assert.equal(gotSums, want, `PromQL sum by (env): ${ctx}`);
          mark('/api/v1/query count() and sum by()');
        }
        if (has.card) {
          const r = await call(srv, 'GET', `/api/v1/cardinality/metrics_series?timestamp=${end}&duration=3600&rollUpSeconds=3600`, undefined, pr.token);
          // A caller with no access at all to the stream may be refused (SPEC: 403 insufficient permissions).
          if (r.status === 403) {
            assert.ok(noAccess('metrics'), `cardinality 403 although the metrics stream is granted: ${ctx}`);
            mark('/api/v1/cardinality/metrics_series (403 without any grant)');
          } else {
            assert.is(r.status, 200, r.text);
            const total = r.body.reduce((n: number, b: { overallCardinality: number }) => Math.max(n, b.overallCardinality), 0);
            assert.is(total, visS.length, `cardinality overall: ${ctx}`);
            const byName: Record<string, number> = {};
            for (const x of visS) byName[x.labels.__name__!] = (byName[x.labels.__name__!] ?? 0) + 1;
            const last = r.body[r.body.length - 1];
            assert.equal(Object.fromEntries(Object.entries(last?.metricNames ?? {}).filter(([, n]) => n !== 0)), byName, `cardinality metricNames: ${ctx}`);
            mark('/api/v1/cardinality/metrics_series');
          }
        }
        if (has.svcql) {
          const startTs = new Date(NOW_MS - 3_600_000).toISOString();
          const endTs = new Date(NOW_MS + 1000).toISOString();
          const q = `query { getLogMetricsResultWithSvcQl(query: "* | count by service", startTs: "${startTs}", endTs: "${endTs}") { ColumnHeaders TableResult } }`;
          const res = await srv.fetch('/query', {
            method: 'POST',
            token: pr.token,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ query: q }),
          });
          const body = (await res.json()) as any;
          assert.is(res.status, 200);
          assert.not.ok(body.errors, JSON.stringify(body.errors));
          const rows = body.data.getLogMetricsResultWithSvcQl.TableResult as Array<[string | null, number]>;
          const got: Record<string, number> = {};
          for (const [svc, n] of rows) got[svc ?? '(missing)'] = Number(n);
          const want: Record<string, number> = {};
          for (const l of visL) want[l.labels.service ?? '(missing)'] = (want[l.labels.service ?? '(missing)'] ?? 0) + 1;
          assert.equal(got, want, `SvcQL count by service: ${ctx}`);
          mark('GraphQL SvcQL count by service');
        }
      }
    }
  } finally {
    await srv.stop();
  }
}

test('default deny: every query path equals the brute-force filter', async () => {
  rnd = mulberry32(SEED);
  await runServer('deny');
});

test('default allow: every query path equals the brute-force filter', async () => {
  rnd = mulberry32(SEED + 1);
  await runServer('allow');
});

test('enough cases ran; report the paths exercised', () => {
  console.log(`rbac property: seed ${SEED}, ${cases} cases (${shape.some} partly visible, ${shape.none} nothing, ${shape.all} everything; ${shape.rejectedPolicies} random policies rejected with 400)`);
  assert.ok(shape.some >= cases / 4, 'too few cases with a partial scope');
  for (const [k, n] of Object.entries(exercised)) console.log(`  exercised ${k}: ${n} cases`);
  for (const [k, why] of unavailable) console.log(`  not exercised: ${k} (${why})`);
  assert.ok(cases >= 200, `only ${cases} cases`);
});

test.run();
