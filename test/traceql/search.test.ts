/**
 * TraceQL search over HTTP checked against a naive reference evaluator on generated traces:
 * attribute and intrinsic conditions, spanset `&&`/`||`, every structural operator (and the
 * negated ones), pipelines with count() and avg(duration). Each query's matching trace ids and
 * matched span ids must equal the reference's.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Span } from '../../kernel/models.js';
import { Tokens } from '../../kernel/services.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { T0, dur, generateTraces, ref, relations, type RefQuery } from './fixtures.js';

const BASE = '/dashboards/api/datasources/proxy/uid/lookout-traces';
let srv: TestServer;
const traces = generateTraces(120, 42);
// Array attributes (TraceQL compares them element-wise), so attribute pushdown meets arrays too.
traces.flat().forEach((s, i) => {
  const code = s.attributes.code as number;
  if (i % 3 === 0) (s.attributes as Record<string, unknown>).tags = ['t', `c${code}`];
  if (i % 4 === 1) (s.attributes as Record<string, unknown>).codes = [1, code];
});
const start = Number(T0 / 1_000_000_000n) - 10;
const end = start + 3600;

test.before(async () => {
  srv = await startTestServer();
  // Half the traces go into a segment (block blooms and summaries prune there), half stay in the head.
  const ingest = srv.lookout.kernel.get(Tokens.Ingest);
  await ingest.write({ spans: traces.slice(0, 60).flat() });
  const store = srv.lookout.kernel.get(Tokens.Storage).traces as { flushHead?: () => Promise<number> };
  if (store.flushHead) await store.flushHead();
  await ingest.write({ spans: traces.slice(60).flat() });
});
test.after(async () => {
  await srv.stop();
});

interface SearchBody {
  traces: { traceID: string; spanSets: { spans: { spanID: string }[]; matched: number }[] }[];
  metrics: { inspectedTraces: number };
}

async function search(q: string): Promise<SearchBody> {
  const res = await srv.fetch(`${BASE}/api/search?q=${encodeURIComponent(q)}&start=${start}&end=${end}&limit=1000&spss=1000`);
  const text = await res.text();
  assert.is(res.status, 200, `${q}: ${text}`);
  return JSON.parse(text) as SearchBody;
}

const attr = (s: Span, k: string) => s.attributes[k];
const svc = (s: Span) => s.resource['service.name'];
const F = ref.filter;

const cases: [string, RefQuery][] = [
  ['{ }', F(() => true)],
  ['{ resource.service.name = "cart" }', F((s) => svc(s) === 'cart')],
  ['{ .service.name = "cart" }', F((s) => svc(s) === 'cart')],
  ['{ span.code >= 500 }', F((s) => (attr(s, 'code') as number) >= 500)],
  ['{ span.code != 200 && kind = server }', F((s) => attr(s, 'code') !== 200 && s.kind === 'server')],
  ['{ status = error || span.retry = true }', F((s) => s.status.code === 'error' || attr(s, 'retry') === true)],
  ['{ name =~ "GET.*|cache" }', F((s) => s.name.startsWith('GET') || s.name === 'cache')],
  ['{ name !~ "GET.*" && resource.region = "eu" }', F((s) => !s.name.startsWith('GET') && s.resource.region === 'eu')],
  ['{ duration > 200ms }', F((s) => dur(s) > 200e6)],
  ['{ span.retry != nil }', F((s) => attr(s, 'retry') !== undefined)],
  ['{ span.nothing = nil && name = "query" }', F((s) => s.name === 'query')],
  ['{ event:name = "exception" }', F((s) => s.events.some((e) => e.name === 'exception'))],
  ['{ rootServiceName = "frontend" && status = error }', F((s, t) => svc(t[0]!) === 'frontend' && s.status.code === 'error')],
  ['{ traceDuration > 300ms && kind = client }', F((s, t) => {
    const min = t.reduce((m, x) => (x.startTimeUnixNano < m ? x.startTimeUnixNano : m), t[0]!.startTimeUnixNano);
    const max = t.reduce((m, x) => (x.endTimeUnixNano > m ? x.endTimeUnixNano : m), t[0]!.endTimeUnixNano);
    return Number(max - min) > 300e6 && s.kind === 'client';
  })],
  ['{ span.code = 500 } && { resource.service.name = "db" }', ref.and(F((s) => attr(s, 'code') === 500), F((s) => svc(s) === 'db'))],
  ['{ span.code = 404 } || { name = "render" }', ref.or(F((s) => attr(s, 'code') === 404), F((s) => s.name === 'render'))],
];

const A = F((s) => svc(s) === 'frontend');
const B = F((s) => s.status.code === 'error');
const structural: [string, RefQuery][] = [
  ['>', ref.rel(A, B, relations.child)],
  ['>>', ref.rel(A, B, relations.descendant)],
  ['<', ref.rel(A, B, relations.parent)],
  ['<<', ref.rel(A, B, relations.ancestor)],
  ['~', ref.rel(A, B, relations.sibling)],
  ['!>', ref.rel(A, B, relations.child, true)],
  ['!>>', ref.rel(A, B, relations.descendant, true)],
  ['!<', ref.rel(A, B, relations.parent, true)],
  ['!<<', ref.rel(A, B, relations.ancestor, true)],
  ['!~', ref.rel(A, B, relations.sibling, true)],
];
for (const [op, r] of structural) cases.push([`{ resource.service.name = "frontend" } ${op} { status = error }`, r]);

cases.push(
  ['{ status = error } | count() > 1', ref.count(B, (n) => n > 1)],
  ['{ kind = server } | count() >= 2', ref.count(F((s) => s.kind === 'server'), (n) => n >= 2)],
  ['{ name = "query" } | avg(duration) > 150ms', ref.avgDuration(F((s) => s.name === 'query'), (a) => a > 150e6)],
  ['{ resource.service.name = "cart" } > { } | count() = 1', ref.count(ref.rel(F((s) => svc(s) === 'cart'), F(() => true), relations.child), (n) => n === 1)],
  ['({ name = "GET /" } >> { name = "query" }) && { status = ok }',
    ref.and(ref.rel(F((s) => s.name === 'GET /'), F((s) => s.name === 'query'), relations.descendant), F((s) => s.status.code === 'ok'))],
  ['{ span.code = 200 } | { kind = server }', F((s) => attr(s, 'code') === 200 && s.kind === 'server')],
);

// Queries exercising each prefilter the planner pushes into the store (statuses, duration bounds,
// attribute equalities incl. arrays and numbers, span names, the exact span filter) and the
// operators that must not push one side's conditions (`||`, negated structure, trace intrinsics).
const arr = (s: Span, k: string) => (attr(s, k) as unknown[] | undefined) ?? [];
const E = (s: Span) => s.status.code === 'error';
cases.push(
  ['{ resource.service.name = "cart" && status = error }', F((s) => svc(s) === 'cart' && E(s))],
  ['{ span.code = 500 }', F((s) => attr(s, 'code') === 500)],
  ['{ span.code = 500.0 && status = "ok" }', F((s) => attr(s, 'code') === 500 && s.status.code === 'ok')],
  ['{ span.tags = "c404" }', F((s) => arr(s, 'tags').includes('c404'))],
  ['{ span.codes = 404 && kind = client }', F((s) => arr(s, 'codes').includes(404) && s.kind === 'client')],
  ['{ span.tags != "c200" && span.tags != nil }', F((s) => arr(s, 'tags').length > 0 && !arr(s, 'tags').includes('c200'))],
  ['{ span.retry = true && duration < 100ms }', F((s) => attr(s, 'retry') === true && dur(s) < 100e6)],
  ['{ duration >= 100ms && duration <= 200ms }', F((s) => dur(s) >= 100e6 && dur(s) <= 200e6)],
  ['{ 300ms < duration && name = "cache" }', F((s) => dur(s) > 300e6 && s.name === 'cache')],
  ['{ status = error && status = ok }', F(() => false)],
  ['{ status = error } && { name = "cache" && span.code = 404 }', ref.and(F(E), F((s) => s.name === 'cache' && attr(s, 'code') === 404))],
  ['{ status = error && name = "render" } || { duration > 390ms }', ref.or(F((s) => E(s) && s.name === 'render'), F((s) => dur(s) > 390e6))],
  ['{ status = error && name = "render" || span.codes = 500 && kind = server }', F((s) => (E(s) && s.name === 'render') || (arr(s, 'codes').includes(500) && s.kind === 'server'))],
  ['{ status = ok && name = "query" } >> { span.code = 404 }', ref.rel(F((s) => s.status.code === 'ok' && s.name === 'query'), F((s) => attr(s, 'code') === 404), relations.descendant)],
  ['{ resource.service.name = "db" } !< { status = error && span.op.kind = "read" }',
    ref.rel(F((s) => svc(s) === 'db'), F((s) => E(s) && attr(s, 'op.kind') === 'read'), relations.parent, true)],
  ['{ resource.service.name = "db" && status = error } !~ { }', ref.rel(F((s) => svc(s) === 'db' && E(s)), F(() => true), relations.sibling, true)],
  ['{ status = error } | { resource.service.name = "cart" } | count() >= 2', ref.count(F((s) => E(s) && svc(s) === 'cart'), (n) => n >= 2)],
  ['{ rootServiceName = "cart" && span.code = 404 }', F((s, t) => svc(t[0]!) === 'cart' && attr(s, 'code') === 404)],
  ['{ rootServiceName = "cart" || span.code = 404 && status = ok }', F((s, t) => svc(t[0]!) === 'cart' || (attr(s, 'code') === 404 && s.status.code === 'ok'))],
  ['{ name = "query" && !(status = error) }', F((s) => s.name === 'query' && !E(s))],
  ['{ resource.service.name = "cart" && status = error } | avg(duration) > 150ms',
    ref.avgDuration(F((s) => svc(s) === 'cart' && E(s)), (a) => a > 150e6)],
);

test('search results equal a brute-force evaluation on generated traces', async () => {
  let nonTrivial = 0;
  for (const [q, r] of cases) {
    const body = await search(q);
    const got = new Map(body.traces.map((t) => [t.traceID, t]));
    const expected = new Map<string, Set<string>>();
    for (const t of traces) {
      const m = r(t);
      if (m.size) expected.set(t[0]!.traceId, m);
    }
    if (expected.size > 0 && expected.size < traces.length) nonTrivial++;
    assert.equal([...got.keys()].sort(), [...expected.keys()].sort(), `trace ids for ${q}`);
    for (const [id, spans] of expected) {
      const sets = got.get(id)!.spanSets;
      const ids = new Set(sets.flatMap((s) => s.spans.map((x) => x.spanID)));
      assert.equal([...ids].sort(), [...spans].sort(), `matched spans of ${id} for ${q}`);
      assert.is(sets.reduce((n, s) => n + s.matched, 0), spans.size, `matched count of ${id} for ${q}`);
    }
  }
  // The generator must make most queries discriminating, or the check proves little.
  assert.ok(nonTrivial >= cases.length - 3, `only ${nonTrivial} of ${cases.length} queries discriminate`);
});

test('by() splits spansets per value; select() adds attributes', async () => {
  const body = await search('{ status = error } | by(resource.service.name)');
  const any = body.traces.find((t) => t.spanSets.length > 1) as unknown as
    | { spanSets: { attributes: { key: string; value: { stringValue: string } }[]; spans: { spanID: string }[] }[] }
    | undefined;
  assert.ok(any, 'some trace has errors in two services');
  for (const set of any!.spanSets) assert.is(set.attributes[0]!.key, 'by(resource.service.name)');
  const vals = any!.spanSets.map((s) => s.attributes[0]!.value.stringValue);
  assert.is(new Set(vals).size, vals.length);
  const sel = (await search('{ name = "cache" } | select(span.op.kind, resource.region)')) as unknown as {
    traces: { spanSets: { spans: { attributes: { key: string }[] }[] }[] }[];
  };
  const keys = sel.traces[0]!.spanSets[0]!.spans[0]!.attributes.map((a) => a.key);
  assert.ok(keys.includes('op.kind') && keys.includes('region'), keys.join(','));
});

test('limit keeps the most recent traces; inspected metrics are reported', async () => {
  const res = await srv.fetch(`${BASE}/api/search?q=${encodeURIComponent('{ }')}&start=${start}&end=${end}&limit=5`);
  const body = (await res.json()) as { traces: { traceID: string; startTimeUnixNano: string }[]; metrics: { inspectedTraces: number } };
  assert.is(body.traces.length, 5);
  const starts = body.traces.map((t) => BigInt(t.startTimeUnixNano));
  const newest = traces.map((t) => t[0]!.startTimeUnixNano).sort((a, b) => (a > b ? -1 : 1)).slice(0, 5);
  assert.equal(starts, newest);
  assert.is(body.metrics.inspectedTraces, traces.length);
  // Default limit is 20 (Tempo's).
  const dflt = (await (await srv.fetch(`${BASE}/api/search?q=%7B%7D&start=${start}&end=${end}`)).json()) as { traces: unknown[] };
  assert.is(dflt.traces.length, 20);
  // spss caps the spans listed per spanset; matched keeps the full count.
  const one = (await (await srv.fetch(`${BASE}/api/search?q=%7B%7D&start=${start}&end=${end}&spss=1&limit=1000`)).json()) as SearchBody;
  const big = one.traces.find((t) => t.spanSets[0]!.matched > 1)!;
  assert.is(big.spanSets[0]!.spans.length, 1);
});

test('time range: traces outside [start, end] are not returned', async () => {
  const res = await srv.fetch(`${BASE}/api/search?q=%7B%7D&start=${start - 7200}&end=${start - 3600}`);
  assert.equal(((await res.json()) as SearchBody).traces, []);
});

test.run();
