/**
 * The executor: evaluates a planned TraceQL query against one trace at a time. A trace yields
 * spansets (lists of span indices into its TraceView); an empty list means it does not match.
 */
import type { Span } from '../../kernel/models.js';
import type {
  Aggregate,
  ComparisonOp,
  FieldExpr,
  Pipeline,
  PipelineStage,
  ScalarExpr,
  SpansetExpr,
  SpansetOp,
} from './ast.js';
import { NO_ROOT_SERVICE, rootServiceName, type TraceView } from './trace-view.js';
import { arithmetic, compare, fromAttribute, truthy, valueKey, type Scalar, type Value } from './values.js';

export interface Spanset {
  /** Indices into TraceView.spans, ascending, unique. */
  spans: number[];
  /** Spanset-level attributes (from `by()`), in order. */
  attributes: { key: string; value: Value }[];
}

/** Reads one field of span `i` of a trace. */
export function evalField(e: FieldExpr, v: TraceView, i: number): Value {
  switch (e.kind) {
    case 'static':
      return e.type === 'nil' ? undefined : ({ t: e.type, v: e.value } as Scalar);
    case 'attribute':
      return attributeValue(v.spans[i]!, e.scope, e.name);
    case 'intrinsic':
      return intrinsicValue(e.name, v, i);
    case 'unary': {
      const x = evalField(e.expr, v, i);
      if (e.op === '!') return x !== undefined && x.t === 'bool' ? { t: 'bool', v: !x.v } : undefined;
      return arithmetic('-', { t: 'int', v: 0 }, x);
    }
    case 'binary': {
      if (e.op === '&&') return { t: 'bool', v: truthy(evalField(e.lhs, v, i)) && truthy(evalField(e.rhs, v, i)) };
      if (e.op === '||') return { t: 'bool', v: truthy(evalField(e.lhs, v, i)) || truthy(evalField(e.rhs, v, i)) };
      const a = evalField(e.lhs, v, i);
      const b = evalField(e.rhs, v, i);
      if (isComparison(e.op)) return { t: 'bool', v: compare(e.op, a, b) };
      return arithmetic(e.op, a, b);
    }
  }
}

const COMPARISON_OPS = new Set(['=', '!=', '>', '>=', '<', '<=', '=~', '!~']);
function isComparison(op: string): op is ComparisonOp {
  return COMPARISON_OPS.has(op);
}

export function attributeValue(s: Span, scope: string, name: string): Value {
  switch (scope) {
    case 'span':
      return fromAttribute(s.attributes[name]);
    case 'resource':
      return fromAttribute(s.resource[name]);
    case 'unscoped': {
      // Span attributes win; the resource is the fallback (Tempo's lookup order).
      const a = s.attributes[name];
      return fromAttribute(a !== undefined && a !== null ? a : s.resource[name]);
    }
    case 'instrumentation':
      return fromAttribute(s.scope.attributes?.[name]);
    case 'event':
      return collect(s.events.map((ev) => ev.attributes[name]));
    case 'link':
      return collect(s.links.map((l) => l.attributes[name]));
    default:
      return undefined;
  }
}

/** Values across a span's events or links: one array value, nil when none has the attribute. */
function collect(xs: unknown[]): Value {
  const out: Scalar[] = [];
  for (const x of xs) {
    const v = fromAttribute(x as Parameters<typeof fromAttribute>[0]);
    if (v === undefined) continue;
    if (v.t === 'array') out.push(...v.v);
    else out.push(v);
  }
  return out.length ? { t: 'array', v: out } : undefined;
}

const str = (s: string | undefined): Value => (s === undefined ? undefined : { t: 'string', v: s });

export function intrinsicValue(name: string, v: TraceView, i: number): Value {
  const s = v.spans[i]!;
  switch (name) {
    case 'name':
      return str(s.name);
    case 'status':
      return { t: 'status', v: s.status.code };
    case 'statusMessage':
      return str(s.status.message ?? '');
    case 'kind':
      return { t: 'kind', v: s.kind };
    case 'duration':
      return { t: 'duration', v: Number(s.endTimeUnixNano - s.startTimeUnixNano) };
    case 'spanID':
      return str(s.spanId);
    case 'parentID':
      return str(s.parentSpanId);
    case 'rootName':
      return v.root < 0 ? undefined : str(v.spans[v.root]!.name);
    case 'rootServiceName': {
      const r = rootServiceName(v);
      return r === NO_ROOT_SERVICE ? undefined : str(r);
    }
    case 'traceDuration':
      return { t: 'duration', v: Number(v.endNs - v.startNs) };
    case 'traceID':
      return str(v.traceId);
    case 'eventName':
      return s.events.length ? { t: 'array', v: s.events.map((e) => ({ t: 'string', v: e.name })) } : undefined;
    case 'eventTimeSinceStart':
      return s.events.length
        ? { t: 'array', v: s.events.map((e) => ({ t: 'duration', v: Number(e.timeUnixNano - s.startTimeUnixNano) })) }
        : undefined;
    case 'linkTraceID':
      return s.links.length ? { t: 'array', v: s.links.map((l) => ({ t: 'string', v: l.traceId })) } : undefined;
    case 'linkSpanID':
      return s.links.length ? { t: 'array', v: s.links.map((l) => ({ t: 'string', v: l.spanId })) } : undefined;
    case 'instrumentationName':
      return str(s.scope.name);
    case 'instrumentationVersion':
      return str(s.scope.version);
    default:
      return undefined;
  }
}

// ---- spansets -------------------------------------------------------------------------------

/** Runs the whole pipeline on one trace. */
export function evaluatePipeline(p: Pipeline, v: TraceView): Spanset[] {
  let sets = evalSpansetExpr(p.stages[0] as SpansetExpr, v);
  for (let k = 1; k < p.stages.length && sets.length; k++) sets = applyStage(p.stages[k]!, sets, v);
  return sets;
}

function evalSpansetExpr(e: SpansetExpr, v: TraceView): Spanset[] {
  switch (e.kind) {
    case 'pipeline':
      return evaluatePipeline(e, v);
    case 'filter': {
      const out: number[] = [];
      for (let i = 0; i < v.spans.length; i++) if (e.expr === null || truthy(evalField(e.expr, v, i))) out.push(i);
      return out.length ? [{ spans: out, attributes: [] }] : [];
    }
    case 'spansetOp': {
      const a = union(evalSpansetExpr(e.lhs, v), v.spans.length);
      // `||` and the negated forms need the right side even when the left is empty.
      if (e.op !== '||' && !e.op.startsWith('!') && !a.any) return [];
      const b = union(evalSpansetExpr(e.rhs, v), v.spans.length);
      const out = spansetOp(e.op, a, b, v);
      return out.length ? [{ spans: out, attributes: [] }] : [];
    }
  }
}

interface Members {
  has: Uint8Array;
  list: number[];
  any: boolean;
}

function union(sets: Spanset[], n: number): Members {
  const has = new Uint8Array(n);
  for (const s of sets) for (const i of s.spans) has[i] = 1;
  const list: number[] = [];
  for (let i = 0; i < n; i++) if (has[i]) list.push(i);
  return { has, list, any: list.length > 0 };
}

function spansetOp(op: SpansetOp, a: Members, b: Members, v: TraceView): number[] {
  const n = v.spans.length;
  const parent = v.parent;
  switch (op) {
    case '&&':
      return a.any && b.any ? mergeLists(a, b, n) : [];
    case '||':
      return mergeLists(a, b, n);
    case '>':
    case '!>': {
      const want = op === '>';
      return b.list.filter((j) => (parent[j]! >= 0 && a.has[parent[j]!] === 1) === want);
    }
    case '>>':
    case '!>>': {
      const want = op === '>>';
      return b.list.filter((j) => hasAncestorIn(j, a.has, parent) === want);
    }
    case '<':
    case '!<': {
      const isParentOfA = new Uint8Array(n);
      for (const i of a.list) if (parent[i]! >= 0) isParentOfA[parent[i]!] = 1;
      const want = op === '<';
      return b.list.filter((j) => (isParentOfA[j] === 1) === want);
    }
    case '<<':
    case '!<<': {
      const isAncestorOfA = new Uint8Array(n);
      for (const i of a.list) {
        let p = parent[i]!;
        for (let guard = 0; p >= 0 && guard < n && !isAncestorOfA[p]; guard++) {
          isAncestorOfA[p] = 1;
          p = parent[p]!;
        }
      }
      const want = op === '<<';
      return b.list.filter((j) => (isAncestorOfA[j] === 1) === want);
    }
    case '~':
    case '!~': {
      // Siblings share a (received) parent; a span is not its own sibling.
      const perParent = new Uint32Array(n);
      for (const i of a.list) if (parent[i]! >= 0) perParent[parent[i]!]!++;
      const want = op === '~';
      return b.list.filter((j) => {
        const p = parent[j]!;
        const sib = p >= 0 && perParent[p]! - (a.has[j] ? 1 : 0) > 0;
        return sib === want;
      });
    }
  }
}

function hasAncestorIn(j: number, set: Uint8Array, parent: Int32Array): boolean {
  let p = parent[j]!;
  for (let guard = 0; p >= 0 && guard < parent.length; guard++) {
    if (set[p]) return true;
    p = parent[p]!;
  }
  return false;
}

function mergeLists(a: Members, b: Members, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) if (a.has[i] || b.has[i]) out.push(i);
  return out;
}

// ---- pipeline stages ------------------------------------------------------------------------

function applyStage(st: PipelineStage, sets: Spanset[], v: TraceView): Spanset[] {
  switch (st.kind) {
    case 'filter': {
      const out: Spanset[] = [];
      for (const s of sets) {
        const kept = st.expr === null ? s.spans : s.spans.filter((i) => truthy(evalField(st.expr!, v, i)));
        if (kept.length) out.push({ spans: kept, attributes: s.attributes });
      }
      return out;
    }
    case 'spansetOp':
    case 'pipeline': {
      // A spanset expression later in a pipeline keeps the spans of each spanset it matches; it is
      // evaluated over the whole trace (structure included) and intersected.
      const matched = union(evalSpansetExpr(st, v), v.spans.length);
      const out: Spanset[] = [];
      for (const s of sets) {
        const kept = s.spans.filter((i) => matched.has[i] === 1);
        if (kept.length) out.push({ spans: kept, attributes: s.attributes });
      }
      return out;
    }
    case 'scalarFilter':
      return sets.filter((s) => compare(st.op, evalScalar(st.lhs, s, v), evalScalar(st.rhs, s, v)));
    case 'select':
      return sets;
    case 'coalesce': {
      const all = new Set<number>();
      for (const s of sets) for (const i of s.spans) all.add(i);
      return [{ spans: [...all].sort((x, y) => x - y), attributes: [] }];
    }
    case 'by': {
      const out: Spanset[] = [];
      for (const s of sets) {
        const groups = new Map<string, Spanset>();
        for (const i of s.spans) {
          const val = evalField(st.field, v, i);
          const k = valueKey(val);
          let g = groups.get(k);
          if (!g) {
            g = { spans: [], attributes: [...s.attributes, { key: `by(${st.text})`, value: val }] };
            groups.set(k, g);
            out.push(g);
          }
          g.spans.push(i);
        }
      }
      return out;
    }
  }
}

/** Evaluates a pipeline scalar (aggregates over the spanset's spans). */
export function evalScalar(e: ScalarExpr, s: Spanset, v: TraceView): Value {
  switch (e.kind) {
    case 'static':
      return e.type === 'nil' ? undefined : ({ t: e.type, v: e.value } as Scalar);
    case 'scalarBinary':
      return arithmetic(e.op, evalScalar(e.lhs, s, v), evalScalar(e.rhs, s, v));
    case 'aggregate':
      return aggregate(e, s, v);
  }
}

function aggregate(e: Aggregate, s: Spanset, v: TraceView): Value {
  if (e.fn === 'count') return { t: 'int', v: s.spans.length };
  let n = 0;
  let acc = 0;
  let type: 'int' | 'float' | 'duration' = 'int';
  for (const i of s.spans) {
    const x = evalField(e.field!, v, i);
    if (x === undefined || (x.t !== 'int' && x.t !== 'float' && x.t !== 'duration')) continue;
    if (x.t === 'duration') type = 'duration';
    else if (x.t === 'float' && type === 'int') type = 'float';
    if (n === 0) acc = e.fn === 'sum' || e.fn === 'avg' ? 0 : x.v;
    n++;
    if (e.fn === 'sum' || e.fn === 'avg') acc += x.v;
    else if (e.fn === 'min') acc = Math.min(acc, x.v);
    else acc = Math.max(acc, x.v);
  }
  if (n === 0) return undefined;
  if (e.fn === 'avg') return { t: type === 'duration' ? 'duration' : 'float', v: acc / n };
  return { t: type, v: acc };
}
