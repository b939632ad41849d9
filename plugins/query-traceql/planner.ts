/**
 * The planner: checks a parsed query for what the parser cannot (regexes compile under RE2),
 * and derives what storage can do cheaply — an attribute-equality prefilter that every matching
 * trace must satisfy on one span — plus the fields to report with each matched span.
 */
import { InvalidRegexError, compileAnchoredRegex } from '../../kernel/matchers.js';
import type { FieldExpr, Pipeline, PipelineStage, SpansetExpr, TraceQLQuery } from './ast.js';
import { TraceQLParseError } from './lexer.js';

export interface TraceQLPlan {
  readonly query: TraceQLQuery;
  /**
   * Equality conditions some single span of every matching trace satisfies (TraceSearchQuery.attributes).
   * Values are compared by the store as strings against span attributes, resource attributes and
   * (key `name`) the span name — a superset test, so it only ever prunes non-matches.
   */
  readonly pushdown: Readonly<Record<string, string>> | undefined;
  /** Attribute and intrinsic references of the filters: reported with each matched span, as Tempo does. */
  readonly reported: readonly FieldExpr[];
  /** Fields named in `select(...)`. */
  readonly selected: readonly FieldExpr[];
}

export function planTraceQL(query: TraceQLQuery): TraceQLPlan {
  const reported: FieldExpr[] = [];
  const selected: FieldExpr[] = [];
  walkPipeline(query.pipeline, reported, selected);
  const pd = pushdownOf(query.pipeline);
  return { query, pushdown: pd && Object.keys(pd).length ? pd : undefined, reported: dedupe(reported), selected: dedupe(selected) };
}

function walkPipeline(p: Pipeline, reported: FieldExpr[], selected: FieldExpr[]): void {
  for (const st of p.stages) walkStage(st, reported, selected);
}

function walkStage(st: PipelineStage, reported: FieldExpr[], selected: FieldExpr[]): void {
  switch (st.kind) {
    case 'pipeline':
      return walkPipeline(st, reported, selected);
    case 'spansetOp':
      walkStage(st.lhs, reported, selected);
      return walkStage(st.rhs, reported, selected);
    case 'filter':
      if (st.expr) walkField(st.expr, reported);
      return;
    case 'select':
      for (const f of st.fields) walkField(f, selected);
      return;
    case 'by':
      return walkField(st.field, []);
    case 'scalarFilter':
    case 'coalesce':
      return;
  }
}

/** Collects references and compiles regex literals once, so a bad pattern fails before any scan. */
function walkField(e: FieldExpr, refs: FieldExpr[]): void {
  switch (e.kind) {
    case 'attribute':
    case 'intrinsic':
      refs.push(e);
      return;
    case 'unary':
      return walkField(e.expr, refs);
    case 'binary':
      if ((e.op === '=~' || e.op === '!~') && e.rhs.kind === 'static' && e.rhs.type === 'string') {
        try {
          compileAnchoredRegex(e.rhs.value);
        } catch (err) {
          if (err instanceof InvalidRegexError) throw new TraceQLParseError(err.message, e.pos);
          throw err;
        }
      }
      walkField(e.lhs, refs);
      walkField(e.rhs, refs);
      return;
    case 'static':
      return;
  }
}

function dedupe(fs: FieldExpr[]): FieldExpr[] {
  const seen = new Set<string>();
  return fs.filter((f) => {
    const k = f.kind === 'attribute' ? `a:${f.scope}:${f.name}` : f.kind === 'intrinsic' ? `i:${f.name}` : '';
    if (!k || seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

type Conds = Record<string, string>;

/** Resource keys that are always single strings (OpenTelemetry semantic conventions). */
const STRING_KEYS = new Set(['service.name', 'service.namespace', 'service.version', 'deployment.environment', 'deployment.environment.name', 'k8s.namespace.name', 'k8s.cluster.name', 'host.name']);

/**
 * Conditions one span of every matching trace must meet. For `A && B` and structural operators
 * both sides must match somewhere, so either side's conditions are sound; the larger set prunes
 * most. `||` and negated operators (whose left side may be empty) keep only what is certain.
 */
function pushdownOf(e: SpansetExpr | PipelineStage): Conds | undefined {
  switch (e.kind) {
    case 'pipeline':
      // Later stages only remove spans, so the first stage's conditions stay necessary.
      return pushdownOf(e.stages[0]!);
    case 'filter':
      return e.expr ? conjunctEqualities(e.expr) : undefined;
    case 'spansetOp': {
      if (e.op === '||') return undefined;
      const r = pushdownOf(e.rhs);
      if (e.op.startsWith('!')) return r; // the result is a subset of the right side
      const l = pushdownOf(e.lhs);
      if (!l) return r;
      if (!r) return l;
      return Object.keys(r).length > Object.keys(l).length ? r : l;
    }
    default:
      return undefined;
  }
}

/** `a = "x" && b = 2 && ...`: the top-level conjuncts that are equalities against literals. */
function conjunctEqualities(e: FieldExpr): Conds | undefined {
  const out: Conds = {};
  const visit = (x: FieldExpr) => {
    if (x.kind !== 'binary') return;
    if (x.op === '&&') {
      visit(x.lhs);
      visit(x.rhs);
      return;
    }
    if (x.op !== '=') return;
    const [ref, lit] = x.rhs.kind === 'static' ? [x.lhs, x.rhs] : [x.rhs, x.lhs];
    if (lit.kind !== 'static') return;
    let text: string;
    if (lit.type === 'string') text = lit.value;
    else if (lit.type === 'int' && Number.isSafeInteger(lit.value)) text = String(lit.value);
    else return;
    let key: string | undefined;
    // The store compares its string form of the attribute, which for an array attribute is not
    // element-wise as TraceQL is; so only keys the OTel conventions define as plain strings push down.
    if (ref.kind === 'attribute' && (ref.scope === 'resource' || ref.scope === 'unscoped') && STRING_KEYS.has(ref.name) && lit.type === 'string') key = ref.name;
    else if (ref.kind === 'intrinsic' && ref.name === 'name' && lit.type === 'string') key = 'name';
    if (key === undefined || key in out) return;
    out[key] = text;
  };
  visit(e);
  return Object.keys(out).length ? out : undefined;
}
