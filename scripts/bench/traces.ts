/**
 * Trace store + TraceQL benchmark (embedded backend):
 * `npm run bench -- traces [--spans N] [--runs N]`.
 * Appends N spans (default 120,000 in ~24k traces) in batches of 500, flushes them into segments,
 * then measures trace-by-id and four TraceQL searches through the real engine (limit 20, the whole
 * range). Each figure is the median of the runs; the load average is printed with them because
 * this machine is shared. Prints a final JSON line.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedBackend } from '../../backends/embedded/index.js';
import type { QueryContext } from '../../kernel/extension-points.js';
import { createLogger } from '../../kernel/logger.js';
import type { Span, SpanKind, SpanStatusCode } from '../../kernel/models.js';
import { compileTraceQL, searchTraces } from '../../plugins/query-traceql/index.js';

const args = process.argv.slice(2);
const argNum = (name: string, dflt: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const SPANS = argNum('--spans', 120_000);
const RUNS = argNum('--runs', 5);
const T0 = Date.UTC(2024, 0, 1);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 2 });

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const SERVICES = ['frontend', 'cart', 'db', 'api', 'auth'];
const NAMES = ['GET /', 'query', 'cache', 'render', 'POST /pay', 'auth'];
const KINDS: SpanKind[] = ['server', 'client', 'internal'];

/** Trees of 1–9 spans, 1 trace per ms; ~5% error spans, ~5% code 500. */
function makeTraces(target: number): { spans: Span[]; ids: string[] } {
  const r = rng(7);
  const hex = (n: number) => {
    let s = '';
    while (s.length < n) s += Math.floor(r() * 2 ** 32).toString(16).padStart(8, '0');
    return s.slice(0, n);
  };
  const spans: Span[] = [];
  const ids: string[] = [];
  for (let t = 0; spans.length < target; t++) {
    const traceId = hex(32);
    ids.push(traceId);
    const n = 1 + Math.floor(r() * 9);
    const mine: string[] = [];
    for (let i = 0; i < n; i++) {
      const spanId = hex(16);
      const st = BigInt(T0 + t) * 1_000_000n + BigInt(i * 1000);
      const code = r() < 0.05 ? 500 : r() < 0.1 ? 404 : 200;
      const status: SpanStatusCode = r() < 0.05 ? 'error' : r() < 0.3 ? 'ok' : 'unset';
      const service = SERVICES[Math.floor(r() * SERVICES.length)]!;
      spans.push({
        traceId,
        spanId,
        parentSpanId: i === 0 ? '' : mine[Math.floor(r() * i)]!,
        name: NAMES[Math.floor(r() * NAMES.length)]!,
        kind: KINDS[Math.floor(r() * KINDS.length)]!,
        startTimeUnixNano: st,
        endTimeUnixNano: st + BigInt(Math.floor(r() * 400_000_000) + 50_000),
        status: { code: status },
        attributes: { code, 'http.method': r() < 0.8 ? 'GET' : 'POST', 'user.id': `u${Math.floor(r() * 10_000)}` },
        resource: { 'service.name': service, 'k8s.namespace.name': 'prod', 'host.name': `host-${Math.floor(r() * 20)}` },
        scope: { name: 'bench' },
        events: [],
        links: [],
      });
      mine.push(spanId);
    }
  }
  return { spans, ids };
}

const QUERIES = [
  '{ resource.service.name = "cart" && status = error }',
  '{ span.code = 500 }',
  '{ resource.service.name = "frontend" } >> { status = error }',
  '{ kind = server } | avg(duration) > 300ms',
];

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-bench-traces-'));
  const logger = createLogger('error');
  const b = openEmbeddedBackend({ dir, logger, fsync: 'interval', fsyncIntervalMs: 100, maintenanceIntervalMs: 0 });
  const { spans, ids } = makeTraces(SPANS);
  const load0 = loadavg()[0]!;

  // Append: batches of 500 as receivers write them, including the head flushes they trigger.
  const appendRates: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < spans.length; i += 500) await b.traces.append(spans.slice(i, i + 500));
  await b.traces.wal.serial(() => b.traces.flushHead());
  const appendMs = performance.now() - t0;
  appendRates.push(spans.length / (appendMs / 1000));
  const st = b.traces.stats();

  const ctx: QueryContext = {
    principal: { kind: 'user', name: 'bench', role: 'admin', email: '', teams: [] } as unknown as QueryContext['principal'],
    storage: b,
    scope: async () => undefined,
    signal: new AbortController().signal,
    deadline: Date.now() + 3_600_000,
  };
  const timeIt = async (fn: () => Promise<unknown>, reps: number) => {
    const xs: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t = performance.now();
      await fn();
      xs.push(performance.now() - t);
    }
    return median(xs);
  };
  const pick = rng(11);
  const byIdMs = await timeIt(async () => {
    const id = ids[Math.floor(pick() * ids.length)]!;
    if ((await b.traces.getTrace(id)).length === 0) throw new Error(`trace ${id} not found`);
  }, 500);

  const range = { startNs: BigInt(T0 - 1000) * 1_000_000n, endNs: BigInt(T0 + 86_400_000) * 1_000_000n, limit: 20 };
  const searches: { query: string; ms: number; matches: number; inspectedTraces: number }[] = [];
  for (const q of QUERIES) {
    const plan = compileTraceQL(q);
    let last = { matches: 0, inspectedTraces: 0 };
    await searchTraces(plan, range, ctx); // warm the block cache, as a repeated dashboard query would
    const ms = await timeIt(async () => {
      const r = await searchTraces(plan, range, ctx);
      last = { matches: r.matches.length, inspectedTraces: r.metrics.inspectedTraces };
    }, RUNS);
    searches.push({ query: q, ms, ...last });
  }
  const load1 = loadavg()[0]!;

  console.log(`spans: ${fmt(spans.length)} in ${fmt(ids.length)} traces; ${st.segments} segments, ${fmt(st.segmentBytes / 1e6)} MB`);
  console.log(`load average (1 min): ${fmt(load0)} before, ${fmt(load1)} after`);
  console.log(`span append:   ${fmt(appendRates[0]!)} spans/s (batches of 500, incl. segment flushes)`);
  console.log(`trace by id:   ${fmt(byIdMs)} ms (median of 500 random ids)`);
  for (const s of searches) console.log(`search ${fmt(s.ms).padStart(8)} ms  ${s.query}   (${s.inspectedTraces} traces inspected, ${s.matches} returned)`);
  await b.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(
    JSON.stringify({
      bench: 'traces',
      spans: spans.length,
      traces: ids.length,
      loadavg: [load0, load1],
      appendSpansPerSec: Math.round(appendRates[0]!),
      getTraceMs: byIdMs,
      search: Object.fromEntries(searches.map((s) => [s.query, { ms: s.ms, inspectedTraces: s.inspectedTraces }])),
    }),
  );
}

await main();
