/**
 * Authorization overhead (issue 6): median latency of a PromQL benchmark set over
 * /api/v1/query_range for a user whose 3-policy custom scope grants the same data as an Admin
 * (so both compute identical results and the difference is the cost of authorization), and the
 * same comparison at the storage level (MetricStore.select with and without the scope).
 *
 *   npm run bench -- rbac [--series 5000] [--runs 30]
 *
 * Prints a table and a final JSON line. The HTTP part needs the api-prometheus plugin; without
 * it the line says `"promqlRunnable": false`.
 */
import { rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../kernel/config.js';
import { startLookout } from '../../kernel/server.js';
import { Tokens } from '../../kernel/services.js';
import type { MetricSeriesInput } from '../../kernel/models.js';
import type { Principal } from '../../kernel/auth.js';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const SERIES = arg('series', 5000);
const RUNS = arg('runs', 30);
const STEP_S = 15;
const HOURS = 1;

const ADMIN = 'bench-admin';
const USER = 'bench-user';
const dataDir = mkdtempSync(join(tmpdir(), 'lookout-bench-rbac-'));
const config = loadConfig({
  overrides: {
    server: { host: '127.0.0.1', port: 0 },
    dataDir,
    storage: { backend: process.env.LOOKOUT_BENCH_BACKEND ?? 'memory' },
    log: { level: 'error' },
    auth: {
      serviceAccounts: [{ name: 'admin', token: ADMIN, role: 'Admin' }],
      users: [{ email: 'bench@example.com', token: USER }],
    },
    rbac: { enabled: true, defaultPolicy: 'deny' },
  },
  env: {},
});
const srv = await startLookout({ config });
const storage = srv.kernel.get(Tokens.Storage);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function req(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(srv.url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text };
}

try {
  // ---- data: SERIES series × HOURS h at 15 s ----------------------------------------------------
  const endMs = Math.floor(Date.now() / 60_000) * 60_000;
  const startMs = endMs - HOURS * 3_600_000;
  const names = ['http_requests_total', 'cpu_seconds_total', 'mem_bytes'];
  const batch: MetricSeriesInput[] = [];
  for (let i = 0; i < SERIES; i++) {
    const labels = {
      __name__: names[i % names.length]!,
      service: `svc-${i % 20}`,
      env: i % 3 === 0 ? 'staging' : 'prod',
      instance: `i${i}`,
    };
    const samples = [];
    let v = 0;
    for (let t = startMs; t <= endMs; t += STEP_S * 1000) samples.push({ t, v: (v += 1 + (i % 7)) });
    batch.push({ labels, samples });
    if (batch.length === 500) await storage.metrics.append(batch.splice(0));
  }
  if (batch.length) await storage.metrics.append(batch);

  // ---- 3 custom policies that together grant everything ---------------------------------------
  const policies = [
    { name: 'svc-0-9', scope: { type: 'custom', filters: [{ key: 'service', op: '=~', value: 'svc-[0-9]' }] } },
    { name: 'svc-10-19', scope: { type: 'custom', filters: [{ key: 'service', op: '=~', value: 'svc-1[0-9]' }] } },
    { name: 'envs', scope: { type: 'custom', filters: [{ key: 'svc_stream', op: '=', value: 'metrics' }, { key: 'env', op: '=~', value: 'prod|staging' }] } },
  ];
  for (const p of policies) await req('POST', '/rbac/policies', ADMIN, p);
  await req('POST', '/rbac/groups', ADMIN, { name: 'bench' });
  await req('PUT', '/rbac/groups/bench/users/bench%40example.com', ADMIN, { role: 'Member' });
  await req('POST', '/rbac/policies/svc-0-9/mappings', ADMIN, { entity_type: 'group', entity_name: 'bench' });
  await req('POST', '/rbac/policies/svc-10-19/mappings', ADMIN, { entity_type: 'group', entity_name: 'bench' });
  await req('POST', '/rbac/policies/envs/mappings', ADMIN, { entity_type: 'user', entity_name: 'bench@example.com' });

  const user: Principal = { kind: 'user', name: 'bench@example.com', role: 'Viewer', teams: ['bench'] };
  const scope = await srv.kernel.get(Tokens.ScopeResolver).scopeFor(user, 'metrics');
  console.log(`scope for the user: ${JSON.stringify(scope)}`);

  // ---- storage level -----------------------------------------------------------------------------
  const selectAll = async (withScope: boolean) => {
    const t0 = performance.now();
    let n = 0;
    for await (const s of storage.metrics.select([{ name: '__name__', op: '=', value: 'http_requests_total' }], startMs, endMs, withScope ? { scope } : {})) {
      n += s.timestamps.length;
    }
    return { ms: performance.now() - t0, n };
  };
  const st = { admin: [] as number[], user: [] as number[] };
  for (let r = 0; r < RUNS + 3; r++) {
    const a = await selectAll(false);
    const u = await selectAll(true);
    if (a.n !== u.n) throw new Error(`storage: scoped select read ${u.n} samples, unscoped ${a.n}`);
    if (r >= 3) {
      st.admin.push(a.ms);
      st.user.push(u.ms);
    }
  }
  const storageOverhead = (median(st.user) / median(st.admin) - 1) * 100;
  console.log(`storage select (${SERIES / 3 | 0} series × ${HOURS}h): admin ${median(st.admin).toFixed(2)} ms, 3-policy scope ${median(st.user).toFixed(2)} ms, overhead ${storageOverhead.toFixed(1)}%`);

  // ---- PromQL over HTTP --------------------------------------------------------------------------
  const queries = [
    'sum by (service) (rate(http_requests_total[5m]))',
    'count(cpu_seconds_total)',
    'topk(5, sum by (instance) (rate(http_requests_total[5m])))',
    'avg by (env) (mem_bytes)',
    'http_requests_total{service="svc-3"}',
    'sum(rate(cpu_seconds_total{env="prod"}[1m]))',
  ];
  const range = (q: string) =>
    `/api/v1/query_range?query=${encodeURIComponent(q)}&start=${startMs / 1000}&end=${endMs / 1000}&step=60`;
  const probe = await req('GET', range('vector(1)'), ADMIN);
  const promqlRunnable = probe.status === 200;
  const perQuery: Array<{ query: string; adminMs: number; scopedMs: number; overheadPct: number }> = [];
  let overall: number | null = null;
  if (!promqlRunnable) {
    console.log(`PromQL part not runnable: /api/v1/query_range answered ${probe.status} (api-prometheus not enabled yet)`);
  } else {
    for (const q of queries) {
      const a0 = await req('GET', range(q), ADMIN);
      const u0 = await req('GET', range(q), USER);
      if (a0.status !== 200 || a0.text !== u0.text) throw new Error(`results differ for ${q}: ${a0.status} ${u0.status}`);
      const ta: number[] = [];
      const tu: number[] = [];
      for (let r = 0; r < RUNS + 3; r++) {
        for (const [tok, arr] of [[ADMIN, ta], [USER, tu]] as const) {
          const t0 = performance.now();
          await req('GET', range(q), tok);
          if (r >= 3) arr.push(performance.now() - t0);
        }
      }
      const row = { query: q, adminMs: median(ta), scopedMs: median(tu), overheadPct: (median(tu) / median(ta) - 1) * 100 };
      perQuery.push(row);
      console.log(`${q.padEnd(60)} admin ${row.adminMs.toFixed(2).padStart(8)} ms  scoped ${row.scopedMs.toFixed(2).padStart(8)} ms  ${row.overheadPct.toFixed(1)}%`);
    }
    const sa = perQuery.reduce((n, r) => n + r.adminMs, 0);
    const su = perQuery.reduce((n, r) => n + r.scopedMs, 0);
    overall = (su / sa - 1) * 100;
    console.log(`PromQL set: sum of medians admin ${sa.toFixed(2)} ms, scoped ${su.toFixed(2)} ms, overhead ${overall.toFixed(1)}% (target ≤ 5%)`);
  }
  console.log(
    JSON.stringify({
      bench: 'rbac',
      series: SERIES,
      runs: RUNS,
      storageAdminMs: median(st.admin),
      storageScopedMs: median(st.user),
      storageOverheadPct: storageOverhead,
      promqlRunnable,
      promqlOverheadPct: overall,
      perQuery,
    }),
  );
} finally {
  await srv.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
