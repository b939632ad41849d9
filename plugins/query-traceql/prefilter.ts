/**
 * Derives storage prefilters from a TraceQL query: a condition that one span of every matching
 * trace must meet, as TraceSearchQuery fields the store prunes with cheaply (statuses, duration
 * bounds, attribute equalities — block blooms and summaries) plus the condition itself as an
 * exact per-span `spanFilter`. Soundness is the rule: a prefilter may only ever drop traces the
 * query cannot match, so `||`, negations and structural operators contribute only what is certain.
 *
 * Two notions per spanset expression:
 *   - member(E): a per-span condition every span in E's result meets;
 *   - exists(E): conditions of which each is met by some span whenever E's result is non-empty
 *     (`{A} && {B}` and `{A} > {B}` need both sides non-empty, so either side's conditions hold).
 * The planner picks the exists-condition that prunes most.
 */
import type { Span, SpanStatusCode } from '../../kernel/models.js';
import type { TraceSearchQuery } from '../../kernel/storage.js';
import type { FieldExpr, PipelineStage, SpansetExpr, TraceQLQuery } from './ast.js';
import { evalField } from './executor.js';
import type { TraceView } from './trace-view.js';
import { truthy } from './values.js';

/** The prefilter fields of TraceSearchQuery that the planner fills. */
export type TracePrefilter = Pick<TraceSearchQuery, 'attributes' | 'statuses' | 'minDurationNs' | 'maxDurationNs' | 'spanFilter'>;

/** A per-span condition: `expr` nodes are exact (evaluable on the span alone). */
type Cond = { k: 'true' } | { k: 'expr'; e: FieldExpr } | { k: 'and'; xs: Cond[] } | { k: 'or'; xs: Cond[] };

const TRUE: Cond = { k: 'true' };

function and(xs: Cond[]): Cond {
  const ys = xs.filter((x) => x.k !== 'true');
  return ys.length === 0 ? TRUE : ys.length === 1 ? ys[0]! : { k: 'and', xs: ys };
}

function or(xs: Cond[]): Cond {
  return xs.some((x) => x.k === 'true') ? TRUE : xs.length === 1 ? xs[0]! : { k: 'or', xs };
}

/** Intrinsics whose value depends on other spans of the trace. */
const TRACE_LEVEL = new Set(['rootName', 'rootServiceName', 'traceDuration']);

function usesTrace(e: FieldExpr): boolean {
  switch (e.kind) {
    case 'intrinsic':
      return TRACE_LEVEL.has(e.name);
    case 'unary':
      return usesTrace(e.expr);
    case 'binary':
      return usesTrace(e.lhs) || usesTrace(e.rhs);
    default:
      return false;
  }
}

/** A condition implied by `truthy(e)` on a span (exact when `e` reads only the span). */
function necessary(e: FieldExpr): Cond {
  if (!usesTrace(e)) return { k: 'expr', e };
  if (e.kind === 'binary' && e.op === '&&') return and([necessary(e.lhs), necessary(e.rhs)]);
  if (e.kind === 'binary' && e.op === '||') return or([necessary(e.lhs), necessary(e.rhs)]);
  return TRUE;
}

function member(st: SpansetExpr | PipelineStage): Cond {
  switch (st.kind) {
    case 'filter':
      return st.expr ? necessary(st.expr) : TRUE;
    case 'spansetOp':
      // `&&`/`||` return spans of both sides; structural operators (negated or not) the right's.
      return st.op === '&&' || st.op === '||' ? or([member(st.lhs), member(st.rhs)]) : member(st.rhs);
    case 'pipeline': {
      // Later stages only keep spans of earlier results: every condition on the way holds.
      const parts = [member(st.stages[0]!)];
      for (let k = 1; k < st.stages.length; k++) {
        const s = st.stages[k]!;
        if (s.kind === 'filter' || s.kind === 'spansetOp' || s.kind === 'pipeline') parts.push(member(s));
      }
      return and(parts);
    }
    default:
      return TRUE;
  }
}

function exists(st: SpansetExpr | PipelineStage): Cond[] {
  switch (st.kind) {
    case 'filter':
      return [member(st)];
    case 'spansetOp':
      if (st.op === '||') return [member(st)];
      // Negated structural operators may hold with an empty left side; the result is right-side spans.
      if (st.op.startsWith('!')) return [member(st), ...exists(st.rhs)];
      return [member(st), ...exists(st.lhs), ...exists(st.rhs)];
    case 'pipeline': {
      const out = [member(st), ...exists(st.stages[0]!)];
      for (let k = 1; k < st.stages.length; k++) {
        const s = st.stages[k]!;
        if (s.kind === 'spansetOp' || s.kind === 'pipeline') out.push(...exists(s));
      }
      return out;
    }
    default:
      return [];
  }
}

const STATUSES = new Set<string>(['unset', 'ok', 'error']);
const FLIP: Record<string, string> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=', '=': '=' };

/** Top-level conjunct comparisons of an exact condition. */
function conjuncts(c: Cond, out: FieldExpr[]): FieldExpr[] {
  if (c.k === 'and') for (const x of c.xs) conjuncts(x, out);
  else if (c.k === 'expr') {
    const walk = (e: FieldExpr) => {
      if (e.kind === 'binary' && e.op === '&&') (walk(e.lhs), walk(e.rhs));
      else out.push(e);
    };
    walk(c.e);
  }
  return out;
}

/** The string an attribute's value (or one of its array elements) has when it equals the literal. */
function equalityText(lit: FieldExpr): string | undefined {
  if (lit.kind !== 'static') return undefined;
  switch (lit.type) {
    case 'string':
      return lit.value;
    case 'bool':
      return String(lit.value);
    case 'int':
    case 'float':
    case 'duration':
      // Equal numbers have equal String() forms (an int attribute 500 and a literal 500.0 alike).
      return Number.isFinite(lit.value) ? String(lit.value) : undefined;
    default:
      return undefined;
  }
}

/** The store-level fields one exact condition implies. */
function storeFields(c: Cond): TracePrefilter {
  const attributes: Record<string, string> = {};
  let statuses: SpanStatusCode[] | undefined;
  let min: number | undefined;
  let max: number | undefined;
  for (const e of conjuncts(c, [])) {
    if (e.kind !== 'binary') continue;
    let ref = e.lhs;
    let lit = e.rhs;
    let op: string = e.op;
    if (ref.kind === 'static') {
      [ref, lit] = [lit, ref];
      op = FLIP[op] ?? '';
    }
    if (lit.kind !== 'static') continue;
    if (ref.kind === 'intrinsic' && ref.name === 'status' && op === '=') {
      const code = lit.type === 'status' || lit.type === 'string' ? lit.value : undefined;
      if (code === undefined || !STATUSES.has(code)) continue;
      statuses = statuses ? statuses.filter((x) => x === code) : [code as SpanStatusCode];
    } else if (ref.kind === 'intrinsic' && ref.name === 'duration' && (lit.type === 'int' || lit.type === 'float' || lit.type === 'duration')) {
      const x = lit.value;
      if (!Number.isFinite(x) || Math.abs(x) > Number.MAX_SAFE_INTEGER) continue;
      // Durations are integer nanoseconds: turn strict bounds into inclusive ones.
      const lo = op === '>' ? Math.floor(x) + 1 : op === '>=' || op === '=' ? Math.ceil(x) : undefined;
      const hi = op === '<' ? Math.ceil(x) - 1 : op === '<=' || op === '=' ? Math.floor(x) : undefined;
      if (lo !== undefined) min = min === undefined ? lo : Math.max(min, lo);
      if (hi !== undefined) max = max === undefined ? hi : Math.min(max, hi);
    } else if (op === '=' && ref.kind === 'intrinsic' && ref.name === 'name' && lit.type === 'string') {
      if (!('name' in attributes)) attributes.name = lit.value;
    } else if (op === '=' && ref.kind === 'attribute' && (ref.scope === 'span' || ref.scope === 'resource' || ref.scope === 'unscoped')) {
      // The store matches span or resource attributes (arrays element-wise), and `name` also the
      // span name: a superset of what the scoped TraceQL comparison accepts.
      const text = equalityText(lit);
      if (text !== undefined && !(ref.name in attributes)) attributes[ref.name] = text;
    }
  }
  const out: TracePrefilter = {};
  if (Object.keys(attributes).length) out.attributes = attributes;
  if (statuses) out.statuses = statuses;
  if (min !== undefined && min > 0) out.minDurationNs = BigInt(min);
  if (max !== undefined) out.maxDurationNs = BigInt(max);
  return out;
}

/** Compiles a condition into a span predicate (evaluating exact parts on a one-span view). */
function compile(c: Cond): (s: Readonly<Span>) => boolean {
  switch (c.k) {
    case 'true':
      return () => true;
    case 'and': {
      const fs = c.xs.map(compile);
      return (s) => fs.every((f) => f(s));
    }
    case 'or': {
      const fs = c.xs.map(compile);
      return (s) => fs.some((f) => f(s));
    }
    case 'expr': {
      const spans: Span[] = [];
      const view: TraceView = { traceId: '', spans, parent: new Int32Array([-1]), root: -1, startNs: 0n, endNs: 0n };
      const one = view as { traceId: string };
      const e = c.e;
      return (s) => {
        spans[0] = s as Span;
        one.traceId = s.traceId;
        return truthy(evalField(e, view, 0));
      };
    }
  }
}

const score = (p: TracePrefilter) =>
  4 * Object.keys(p.attributes ?? {}).length + (p.statuses ? 3 : 0) + (p.minDurationNs !== undefined || p.maxDurationNs !== undefined ? 2 : 0);

/** The prefilter for a query; `{}` when nothing can be pushed (e.g. `{ }`). */
export function prefilterOf(q: TraceQLQuery): TracePrefilter {
  let best: { p: TracePrefilter; c: Cond; s: number } | undefined;
  for (const c of exists(q.pipeline)) {
    if (c.k === 'true') continue;
    const p = storeFields(c);
    const s = score(p);
    if (!best || s > best.s) best = { p, c, s };
  }
  if (!best) return {};
  return { ...best.p, spanFilter: compile(best.c) };
}
