/**
 * Differential test: the same generated data is remote-written to Lookout and to a real
 * Prometheus (Debian's package), then every query of differential-queries.ts runs as instant
 * queries at several times and as a range query against both over HTTP; results must agree
 * within 1e-6 relative (1e-9 absolute near zero).
 *
 * Known version differences (Debian ships Prometheus 2.42, Lookout follows 3.x):
 * - `holt_winters` was renamed `double_exponential_smoothing` in 3.0: Lookout gets the new name.
 * - `atan2` drops `__name__` in 3.x (see KNOWN_DIFFERENCES).
 * - range windows are left-closed in 2.x and left-open in 3.x: the data never has a sample on
 *   a window boundary (sample times have a non-zero millisecond part; queries use whole seconds;
 *   nested subquery ranges are not multiples of their steps).
 * - rate()'s limit on extrapolating below zero changed in 2.51 (prometheus#13725): counters in
 *   the data start far from zero, so both versions extrapolate the same way.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tokens } from '../../kernel/services.js';
import { prometheusAvailable, startPrometheus, type RunningPrometheus } from '../helpers/prometheus.js';
import { remoteWrite, sliceByTime, type RWSeries } from '../helpers/remote-write.js';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';
import { generate } from './differential-data.js';
import { QUERIES } from './differential-queries.js';

const MIN = 60_000;

/**
 * Documented Prometheus 2.42 → 3.x differences, compared after normalizing Prometheus' answer:
 * `atan2` keeps `__name__` in 2.42 but drops it in 3.x like every arithmetic operator
 * (conformance operators.test: `trigy atan2 trigx` → `{}`).
 */
const KNOWN_DIFFERENCES: { match: RegExp; reason: string; normalize: (b: Body) => void }[] = [
  {
    match: /\batan2\b/,
    reason: 'Prometheus 3 drops __name__ for atan2; 2.42 kept it',
    normalize: (b) => {
      if (b.status !== 'success' || !Array.isArray(b.data?.result)) return;
      for (const r of b.data!.result) if (r && typeof r === 'object' && 'metric' in r) delete r.metric.__name__;
    },
  },
];

function normalizePrometheus(q: string, b: Body): Body {
  for (const k of KNOWN_DIFFERENCES) if (k.match.test(q)) k.normalize(b);
  return b;
}

/** Lookout spells some functions the Prometheus 3 way (see the file comment). */
function forLookout(q: string): string {
  return q.replace(/\bholt_winters\(/g, 'double_exponential_smoothing(');
}

type Body = { status: string; errorType?: string; error?: string; data?: { resultType: string; result: any } };

function num(s: string): number {
  return s === '+Inf' ? Infinity : s === '-Inf' ? -Infinity : Number(s);
}

function close(a: string, b: string): boolean {
  const x = num(a);
  const y = num(b);
  if (Number.isNaN(x) && Number.isNaN(y)) return true;
  if (x === y) return true;
  const d = Math.abs(x - y);
  return d <= 1e-9 || d <= 1e-6 * Math.max(Math.abs(x), Math.abs(y));
}

const key = (m: Record<string, string>) => JSON.stringify(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : 1)));

/** Returns a description of the first difference, or null when equal. */
function diff(l: Body, p: Body): string | null {
  if (l.status !== p.status) return `status ${l.status} (${l.error ?? ''}) vs prometheus ${p.status} (${p.error ?? ''})`;
  if (l.status === 'error') return l.errorType === p.errorType ? null : `errorType ${l.errorType} vs ${p.errorType}`;
  const a = l.data!;
  const b = p.data!;
  if (a.resultType !== b.resultType) return `resultType ${a.resultType} vs ${b.resultType}`;
  if (a.resultType === 'scalar' || a.resultType === 'string') {
    if (a.result[0] !== b.result[0]) return `time ${a.result[0]} vs ${b.result[0]}`;
    return a.resultType === 'string' ? (a.result[1] === b.result[1] ? null : 'string value') : close(a.result[1], b.result[1]) ? null : `value ${a.result[1]} vs ${b.result[1]}`;
  }
  const la = new Map<string, any>(a.result.map((r: any) => [key(r.metric), r]));
  const lb = new Map<string, any>(b.result.map((r: any) => [key(r.metric), r]));
  if (la.size !== a.result.length) return 'duplicate series in lookout result';
  for (const k of lb.keys()) if (!la.has(k)) return `missing series ${k} (lookout has ${[...la.keys()].slice(0, 3).join(' ')})`;
  for (const k of la.keys()) if (!lb.has(k)) return `extra series ${k}`;
  for (const [k, ra] of la) {
    const rb = lb.get(k);
    if (a.resultType === 'vector') {
      if (ra.value[0] !== rb.value[0]) return `${k}: time ${ra.value[0]} vs ${rb.value[0]}`;
      if (!close(ra.value[1], rb.value[1])) return `${k}: value ${ra.value[1]} vs ${rb.value[1]}`;
    } else {
      const va: [number, string][] = ra.values ?? [];
      const vb: [number, string][] = rb.values ?? [];
      if (va.length !== vb.length) {
        return `${k}: ${va.length} points vs ${vb.length}; times ${va.map((x) => x[0]).slice(0, 5)} vs ${vb.map((x) => x[0]).slice(0, 5)}`;
      }
      for (let i = 0; i < va.length; i++) {
        if (va[i]![0] !== vb[i]![0]) return `${k}: point ${i} time ${va[i]![0]} vs ${vb[i]![0]}`;
        if (!close(va[i]![1], vb[i]![1])) return `${k}: at ${va[i]![0]} value ${va[i]![1]} vs ${vb[i]![1]}`;
      }
    }
  }
  return null;
}

if (!prometheusAvailable()) {
  console.log('SKIP: /usr/bin/prometheus is not installed; differential test against Prometheus skipped');
  test.skip('differential: Lookout vs Prometheus', () => {});
} else {
  let srv: TestServer;
  let prom: RunningPrometheus;
  let base = 0;

  test.before(async () => {
    srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
    prom = await startPrometheus();
    // Whole hours, three hours ago: recent enough for Prometheus' head block.
    base = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 3_600_000;
    const data = generate(base);
    const hasRemoteWrite = srv.lookout.kernel.http.list().some((r) => r.plugin === 'ingest-remote-write');
    for (const slice of sliceByTime(data, 10 * MIN)) {
      await remoteWrite(prom.writeUrl, slice);
      if (hasRemoteWrite) {
        await remoteWrite(`${srv.url}/ingester/write`, slice, { headers: { authorization: `Bearer ${INGEST_KEY}` } });
      } else {
        await srv.lookout.kernel.get(Tokens.Ingest).write({ metrics: toSeries(slice) });
      }
    }
  });
  test.after(async () => {
    await srv?.stop();
    await prom?.stop();
  });

  async function both(path: string, params: Record<string, string>, query: string): Promise<[Body, Body]> {
    const enc = (q: string) => new URLSearchParams({ ...params, query: q }).toString();
    const [l, p] = await Promise.all([
      srv.fetch(`${path}?${enc(forLookout(query))}`).then((r) => r.json() as Promise<Body>),
      fetch(`${prom.url}${path}?${enc(query)}`)
        .then((r) => r.json() as Promise<Body>)
        .then((b) => normalizePrometheus(query, b)),
    ]);
    return [l, p];
  }

  test(`differential: ${QUERIES.length} queries, instant and range, Lookout vs Prometheus`, async () => {
    console.log(`prometheus ${prom.version}; ${QUERIES.length} queries`);
    assert.ok(QUERIES.length >= 150, `only ${QUERIES.length} queries`);
    const sec = (ms: number) => String(ms / 1000);
    const at = sec(base + 60 * MIN + 17_000);
    // Instant times: steady state, just after the staleness marker, inside the gap, near the end.
    const instants = [35, 52, 47, 66, 119].map((m) => base + m * MIN + 17_000);
    const range = { start: sec(base + 10 * MIN + 17_000), end: sec(base + 119 * MIN + 17_000), step: '60' };
    const failures: string[] = [];
    let compared = 0;
    for (const raw of QUERIES) {
      const q = raw.replaceAll('{AT}', at);
      for (const t of instants) {
        const [l, p] = await both('/api/v1/query', { time: sec(t) }, q);
        const d = diff(l, p);
        compared++;
        if (d) failures.push(`instant ${q} @${sec(t)}: ${d}`);
        if (p.status === 'success' && /^(sort|sort_desc|topk|bottomk)\b/.test(q) && p.data!.resultType === 'vector') {
          const order = (b: Body) => b.data!.result.map((r: any) => key(r.metric)).join('|');
          if (!d && /^sort/.test(q) && order(l) !== order(p)) failures.push(`instant ${q} @${sec(t)}: order differs`);
        }
      }
      const [l, p] = await both('/api/v1/query_range', range, q);
      const d = diff(l, p);
      compared++;
      if (d) failures.push(`range ${q}: ${d}`);
    }
    console.log(`compared ${compared} results; ${failures.length} differ`);
    for (const f of failures.slice(0, 400)) console.log('  DIFF ' + f);
    assert.is(failures.length, 0, `${failures.length} results differ from Prometheus`);
  });
}

function toSeries(slice: RWSeries[]) {
  return slice.map((s) => ({ labels: s.labels, samples: s.samples.map((p) => ({ t: p.t, v: p.v })) }));
}

test.run();
