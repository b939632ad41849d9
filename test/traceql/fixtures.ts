/**
 * Span fixtures for the TraceQL suites: a span builder, a seeded generator of random trace trees
 * and a deliberately naive reference evaluator (maps and parent-id walks, no shared code with the
 * engine) for checking query results.
 */
import type { Span, SpanKind, SpanStatusCode } from '../../kernel/models.js';

let idSeq = 1;
export const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
export const newTraceId = () => hex(0xabc000 + idSeq++, 32);
export const newSpanId = () => hex(0x5000 + idSeq++, 16);

/** Base time of fixtures: a fixed recent instant, in ns. */
export const T0 = BigInt(Math.floor(Date.now() / 1000) - 600) * 1_000_000_000n;

export function span(p: Partial<Span> & { traceId: string; name: string; service?: string; startMs?: number; durMs?: number }): Span {
  const start = p.startTimeUnixNano ?? T0 + BigInt(Math.round((p.startMs ?? 0) * 1e6));
  const end = p.endTimeUnixNano ?? start + BigInt(Math.round((p.durMs ?? 10) * 1e6));
  return {
    traceId: p.traceId,
    spanId: p.spanId ?? newSpanId(),
    parentSpanId: p.parentSpanId ?? '',
    name: p.name,
    kind: p.kind ?? 'internal',
    startTimeUnixNano: start,
    endTimeUnixNano: end,
    status: p.status ?? { code: 'unset' },
    attributes: p.attributes ?? {},
    resource: p.resource ?? { 'service.name': p.service ?? 'svc' },
    scope: p.scope ?? { name: 'fixture' },
    events: p.events ?? [],
    links: p.links ?? [],
  };
}

/** mulberry32: small deterministic PRNG so failures reproduce. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const SERVICES = ['frontend', 'cart', 'db'];
export const NAMES = ['GET /', 'query', 'cache', 'render', 'POST /pay'];
const KINDS: SpanKind[] = ['server', 'client', 'internal'];
const STATUSES: SpanStatusCode[] = ['unset', 'ok', 'error'];
const CODES = [200, 404, 500];

/** Random trees: each span's parent is an earlier span of its trace. */
export function generateTraces(n: number, seed: number): Span[][] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const out: Span[][] = [];
  for (let t = 0; t < n; t++) {
    const traceId = newTraceId();
    const count = 1 + Math.floor(r() * 9);
    const spans: Span[] = [];
    const traceStart = t * 1000;
    for (let i = 0; i < count; i++) {
      const parent = i === 0 ? undefined : spans[Math.floor(r() * i)]!;
      const service = pick(SERVICES);
      const attrs: Record<string, string | number | boolean> = { code: pick(CODES), 'op.kind': pick(['read', 'write']) };
      if (r() < 0.3) attrs.retry = true;
      spans.push(
        span({
          traceId,
          name: pick(NAMES),
          service,
          resource: { 'service.name': service, region: pick(['eu', 'us']) },
          parentSpanId: parent?.spanId ?? '',
          kind: pick(KINDS),
          status: { code: pick(STATUSES) },
          startMs: traceStart + i * 3,
          durMs: 1 + Math.floor(r() * 400),
          attributes: attrs,
          events: r() < 0.2 ? [{ timeUnixNano: T0, name: pick(['exception', 'retry']), attributes: {} }] : [],
        }),
      );
    }
    out.push(spans);
  }
  return out;
}

// ---- the reference evaluator ------------------------------------------------------------------

export type Pred = (s: Span, trace: Span[]) => boolean;
/** A reference query: returns the matched span ids of a trace (empty = no match). */
export type RefQuery = (trace: Span[]) => Set<string>;

const parentOf = (s: Span, trace: Span[]) => trace.find((x) => x.spanId === s.parentSpanId && s.parentSpanId !== '');
const isAncestor = (a: Span, s: Span, trace: Span[]): boolean => {
  let p = parentOf(s, trace);
  for (let guard = 0; p && guard < trace.length; guard++) {
    if (p.spanId === a.spanId) return true;
    p = parentOf(p, trace);
  }
  return false;
};

export const dur = (s: Span) => Number(s.endTimeUnixNano - s.startTimeUnixNano);

export const ref = {
  filter:
    (p: Pred): RefQuery =>
    (trace) =>
      new Set(trace.filter((s) => p(s, trace)).map((s) => s.spanId)),
  and:
    (a: RefQuery, b: RefQuery): RefQuery =>
    (trace) => {
      const x = a(trace);
      const y = b(trace);
      return x.size && y.size ? new Set([...x, ...y]) : new Set();
    },
  or:
    (a: RefQuery, b: RefQuery): RefQuery =>
    (trace) =>
      new Set([...a(trace), ...b(trace)]),
  /** Spans of b related to some span of a by `rel(aSpan, bSpan)`, or (negated) to none. */
  rel:
    (a: RefQuery, b: RefQuery, rel: (x: Span, y: Span, trace: Span[]) => boolean, negated = false): RefQuery =>
    (trace) => {
      const x = a(trace);
      const as = trace.filter((s) => x.has(s.spanId));
      const y = b(trace);
      return new Set(trace.filter((s) => y.has(s.spanId) && as.some((p) => rel(p, s, trace)) !== negated).map((s) => s.spanId));
    },
  count:
    (a: RefQuery, test: (n: number) => boolean): RefQuery =>
    (trace) => {
      const x = a(trace);
      return test(x.size) ? x : new Set();
    },
  avgDuration:
    (a: RefQuery, test: (avgNs: number) => boolean): RefQuery =>
    (trace) => {
      const x = a(trace);
      const ds = trace.filter((s) => x.has(s.spanId)).map(dur);
      return ds.length && test(ds.reduce((p, c) => p + c, 0) / ds.length) ? x : new Set();
    },
};

export const relations = {
  child: (p: Span, c: Span, t: Span[]) => parentOf(c, t)?.spanId === p.spanId,
  descendant: (a: Span, d: Span, t: Span[]) => isAncestor(a, d, t),
  parent: (c: Span, p: Span, t: Span[]) => parentOf(c, t)?.spanId === p.spanId,
  ancestor: (d: Span, a: Span, t: Span[]) => isAncestor(a, d, t),
  sibling: (x: Span, y: Span, t: Span[]) => x.spanId !== y.spanId && !!parentOf(x, t) && parentOf(x, t)?.spanId === parentOf(y, t)?.spanId,
};
