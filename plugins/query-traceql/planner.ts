/**
 * The planner: checks a parsed query for what the parser cannot (regexes compile under RE2),
 * and derives what storage can do cheaply — prefilters one span of every matching trace must
 * satisfy (prefilter.ts) — plus the fields to report with each matched span.
 */
import { InvalidRegexError, compileAnchoredRegex } from '../../kernel/matchers.js';
import type { FieldExpr, Pipeline, PipelineStage, SpansetExpr, TraceQLQuery } from './ast.js';
import { TraceQLParseError } from './lexer.js';
import { prefilterOf, type TracePrefilter } from './prefilter.js';

export interface TraceQLPlan {
  readonly query: TraceQLQuery;
  /**
   * Conditions one span of every matching trace satisfies, as TraceSearchQuery prefilters
   * (statuses, duration bounds, attribute equalities, an exact span filter); `{}` when none.
   */
  readonly prefilter: TracePrefilter;
  /** Attribute and intrinsic references of the filters: reported with each matched span, as Tempo does. */
  readonly reported: readonly FieldExpr[];
  /** Fields named in `select(...)`. */
  readonly selected: readonly FieldExpr[];
}

export function planTraceQL(query: TraceQLQuery): TraceQLPlan {
  const reported: FieldExpr[] = [];
  const selected: FieldExpr[] = [];
  walkPipeline(query.pipeline, reported, selected);
  return { query, prefilter: prefilterOf(query), reported: dedupe(reported), selected: dedupe(selected) };
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
