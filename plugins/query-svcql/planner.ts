/**
 * The planner: turns a parsed query and a time range into what the executor runs — the scan
 * (pushdown of time range, label matchers and message terms), the exact re-check, the operator
 * chain, result-size caps, and (when the store offers it) a columnar aggregation fast path.
 */
import type { LabelMatcher } from '../../kernel/matchers.js';
import type { LogRecord } from '../../kernel/models.js';
import type { AggSpec, FieldRef, Stage, SvcQueryAst } from './ast.js';
import { limitExceeded } from './errors.js';
import {
  AggregateOp,
  DedupOp,
  ExtractOp,
  FieldsOp,
  LimitOp,
  SortOp,
  TimesliceOp,
  WhereOp,
  type Operator,
} from './operators.js';
import { compileLogSearch, searchPushdown } from './search.js';

/** Rows a non-aggregated query returns without a `limit`. */
export const DEFAULT_ROW_CAP = 1000;
export const MAX_BUCKETS = 10_000;

export interface TimeRangeNs {
  startNs: bigint;
  endNs: bigint;
}

/** Stages after `top` is expanded into aggregate + sort + limit. */
type PlanStage =
  | Stage
  | { kind: 'sortAgg'; name: string; agg: AggSpec }
  | { kind: 'aggregateTop'; aggs: readonly AggSpec[]; by: readonly FieldRef[]; pos: Stage['pos'] };

export interface ColumnarPlan {
  /** Labels read as columns, in `by` order (time bucket excluded). */
  labels: string[];
  /** For each `by` key: index into `labels`, or -1 for the time bucket. */
  byLabel: number[];
  durMs: number | null;
  /** The aggregation (all bare counts). */
  aggs: readonly AggSpec[];
  by: readonly FieldRef[];
  pos: Stage['pos'];
  /** Index of the first plan stage after the aggregation. */
  rest: number;
}

export interface Plan {
  range: TimeRangeNs;
  matchers: LabelMatcher[];
  terms: string[];
  /** Exact search predicate (null = everything). */
  predicate: ((r: LogRecord) => boolean) | null;
  stages: PlanStage[];
  aggregated: boolean;
  groupKeys: string[];
  aggrValues: string[];
  /** Upper bound on rows wanted from the scan when no stage can drop or reorder rows. */
  scanLimit: number | undefined;
  columnar: ColumnarPlan | null;
}

export function planQuery(q: SvcQueryAst, range: TimeRangeNs): Plan {
  const push = searchPushdown(q.search);
  const stages: PlanStage[] = [];
  let aggregated = false;
  let groupKeys: string[] = [];
  let aggrValues: string[] = [];
  let hasLimit = false;
  for (const s of q.stages) {
    if (s.kind === 'timeslice') checkBuckets(s, range);
    if (s.kind === 'top') {
      aggregated = true;
      hasLimit = true;
      groupKeys = s.by.map((k) => k.column);
      aggrValues = [s.agg.name];
      stages.push({ kind: 'aggregateTop', aggs: [s.agg], by: s.by, pos: s.pos });
      stages.push({ kind: 'sortAgg', name: s.agg.name, agg: s.agg });
      stages.push({ kind: 'limit', n: s.n, pos: s.pos, keyword: 'limit' });
      continue;
    }
    if (s.kind === 'aggregate') {
      aggregated = true;
      groupKeys = s.by.map((k) => k.column);
      aggrValues = s.aggs.map((a) => a.name);
    }
    if (s.kind === 'limit') hasLimit = true;
    stages.push(s);
  }
  if (!aggregated && !hasLimit) stages.push({ kind: 'limit', n: DEFAULT_ROW_CAP, pos: q.search.pos, keyword: 'limit' });

  let scanLimit: number | undefined;
  if (push.exact && stages.every((s) => s.kind === 'limit' || s.kind === 'fields' || s.kind === 'timeslice')) {
    const firstLimit = stages.find((s) => s.kind === 'limit');
    if (firstLimit && firstLimit.kind === 'limit') scanLimit = firstLimit.n;
  }
  return {
    range,
    matchers: push.matchers,
    terms: push.terms,
    predicate: compileLogSearch(q.search),
    stages,
    aggregated,
    groupKeys,
    aggrValues,
    scanLimit,
    columnar: push.exact ? columnarPlan(stages) : null,
  };
}

/** `timeslice d` over [start, end) must not make more than MAX_BUCKETS buckets. */
function checkBuckets(s: Extract<Stage, { kind: 'timeslice' }>, r: TimeRangeNs): void {
  if (r.endNs <= r.startNs) return;
  const d = BigInt(s.durMs) * 1_000_000n;
  const floorDiv = (a: bigint) => (a >= 0n ? a / d : -((-a + d - 1n) / d));
  const n = floorDiv(r.endNs - 1n) - floorDiv(r.startNs) + 1n;
  if (n > BigInt(MAX_BUCKETS)) throw limitExceeded(`timeslice ${s.durText} makes ${n} buckets, maximum ${MAX_BUCKETS}`, s.durPos);
}

const SPECIAL = new Set(['_message', '_timestamp']);

/** `[timeslice d [as t] |] count by <labels and t>` (or `top N <labels>`) over a label-only search. */
function columnarPlan(stages: PlanStage[]): ColumnarPlan | null {
  let i = 0;
  let slice: Extract<Stage, { kind: 'timeslice' }> | null = null;
  if (stages[0]?.kind === 'timeslice') {
    slice = stages[0];
    i = 1;
  }
  const agg = stages[i];
  if (!agg || (agg.kind !== 'aggregate' && agg.kind !== 'aggregateTop')) return null;
  if (!agg.aggs.every((a) => a.fn === 'count' && a.arg === null)) return null;
  const labels: string[] = [];
  const byLabel: number[] = [];
  for (const k of agg.by) {
    if (slice && !k.facet && k.name === slice.name) {
      byLabel.push(-1);
      continue;
    }
    if (k.facet || SPECIAL.has(k.name)) return null;
    byLabel.push(labels.push(k.name) - 1);
  }
  return { labels, byLabel, durMs: slice && byLabel.includes(-1) ? slice.durMs : null, aggs: agg.aggs, by: agg.by, pos: agg.pos, rest: i + 1 };
}

/** Fresh operators for plan stages [from, …). */
export function buildOperators(plan: Plan, from = 0): Operator[] {
  const st = plan.stages;
  const ops: Operator[] = [];
  for (let i = from; i < st.length; i++) {
    const s = st[i]!;
    const next = st[i + 1];
    const bound = next && next.kind === 'limit' ? next.n : null;
    switch (s.kind) {
      case 'where':
        ops.push(new WhereOp(s));
        break;
      case 'parse':
      case 'parseRegex':
      case 'json':
      case 'logfmt':
        ops.push(new ExtractOp(s));
        break;
      case 'fields':
        ops.push(new FieldsOp(s));
        break;
      case 'timeslice':
        ops.push(new TimesliceOp(s));
        break;
      case 'aggregate':
      case 'aggregateTop':
        ops.push(new AggregateOp(s.aggs, s.by, s.pos));
        break;
      case 'sortAgg':
        ops.push(new SortOp([{ key: { name: s.name, facet: false, column: s.name, pos: s.agg.pos }, desc: true }], bound));
        break;
      case 'sort':
        ops.push(new SortOp(s.keys, bound));
        break;
      case 'limit':
        ops.push(new LimitOp(s.n));
        break;
      case 'dedup':
        ops.push(new DedupOp(s.keys));
        break;
      case 'top':
        throw new Error('top is expanded by the planner');
    }
  }
  return ops;
}
