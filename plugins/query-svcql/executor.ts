/**
 * The executor: streams scan batches through the plan's operators, checking the deadline
 * between batches, and stops reading as soon as a limit is satisfied.
 */
import { LookoutError } from '../../kernel/errors.js';
import { compileAlternatives, type MatcherAlternatives } from '../../kernel/matchers.js';
import type { LogStore } from '../../kernel/storage.js';
import type { FieldRef, Stage } from './ast.js';
import { hasColumnarScan, type ColumnarLogStore } from './columnar.js';
import { AggregateOp, type Operator } from './operators.js';
import { buildOperators, type ColumnarPlan, type Plan } from './planner.js';
import { Row } from './row.js';
import type { SvcQLTable } from './table.js';
import { toCell, type Value } from './values.js';

export interface ExecContext {
  logs: LogStore;
  scope?: MatcherAlternatives;
  signal?: AbortSignal;
  /** Unix ms after which the query stops. */
  deadline?: number;
}

export function checkBudget(ctx: ExecContext): void {
  if (ctx.signal?.aborted) {
    const r: unknown = ctx.signal.reason;
    if (r instanceof LookoutError) throw r;
    throw new LookoutError('timeout', 'query timed out', { code: 'QUERY_TIMEOUT' });
  }
  if (ctx.deadline !== undefined && Date.now() > ctx.deadline)
    throw new LookoutError('timeout', 'query timed out', { code: 'QUERY_TIMEOUT' });
}

function pushThrough(ops: Operator[], rows: Row[], from: number, sink: Row[]): void {
  for (let j = from; j < ops.length && rows.length > 0; j++) rows = ops[j]!.push(rows);
  for (const r of rows) sink.push(r);
}

function finishAll(ops: Operator[], from: number, sink: Row[]): void {
  for (let i = from; i < ops.length; i++) pushThrough(ops, ops[i]!.finish(), i + 1, sink);
}

/** Runs a plan to its result rows. */
export async function executePlan(plan: Plan, ctx: ExecContext): Promise<Row[]> {
  const sink: Row[] = [];
  if (plan.columnar && hasColumnarScan(ctx.logs)) {
    const agg = await countColumnar(plan, plan.columnar, ctx.logs, ctx);
    const ops = buildOperators(plan, plan.columnar.rest);
    pushThrough(ops, agg.finish(), 0, sink);
    finishAll(ops, 0, sink);
    return sink;
  }
  const ops = buildOperators(plan);
  const inScope = ctx.scope === undefined ? null : compileAlternatives(ctx.scope);
  const pred = plan.predicate;
  const scan = ctx.logs.scan({
    startNs: plan.range.startNs,
    endNs: plan.range.endNs,
    matchers: plan.matchers,
    terms: plan.terms,
    scope: ctx.scope,
    order: 'desc',
    limit: plan.scanLimit,
    signal: ctx.signal,
  });
  for await (const batch of scan) {
    checkBudget(ctx);
    const recs = batch.records;
    const rows: Row[] = [];
    for (let i = 0; i < recs.length; i++) {
      const r = recs[i]!;
      // storage applies both already; the re-check makes results exact whatever the backend
      if (inScope !== null && !inScope(r.labels)) continue;
      if (pred !== null && !pred(r)) continue;
      rows.push(new Row(r, r.timestampNs, batch.seqs[i] ?? 0));
    }
    pushThrough(ops, rows, 0, sink);
    if (ops.some((o) => o.done)) break;
  }
  finishAll(ops, 0, sink);
  return sink;
}

/** The columnar fast path: counts by label codes (and time bucket) without building rows. */
async function countColumnar(plan: Plan, cp: ColumnarPlan, store: ColumnarLogStore, ctx: ExecContext): Promise<AggregateOp> {
  const agg = new AggregateOp(cp.aggs, cp.by, cp.pos);
  const nb = cp.byLabel.length;
  for await (const b of store.scanColumns({
    startNs: plan.range.startNs,
    endNs: plan.range.endNs,
    matchers: plan.matchers,
    scope: ctx.scope,
    labels: cp.labels,
    timestampsMs: cp.durMs !== null,
    // Counting needs no rows, only how many records share labels.
    weighted: cp.durMs === null,
    signal: ctx.signal,
  })) {
    checkBudget(ctx);
    const n = b.length;
    if (n === 0) continue;
    if (nb === 1 && cp.byLabel[0] === -1 && !b.weights) {
      // `timeslice d | count by _timeslice`: two passes over the timestamps, nothing else.
      const ts = b.timestampsMs!;
      const d = cp.durMs!;
      let lo = Infinity;
      let hi = -Infinity;
      for (let i = 0; i < n; i++) {
        const t = ts[i]!;
        if (t < lo) lo = t;
        if (t > hi) hi = t;
      }
      const first = Math.floor(lo / d);
      const span = Math.floor(hi / d) - first + 1;
      if (span <= 1 << 16) {
        const counts = new Float64Array(span);
        for (let i = 0; i < n; i++) counts[Math.floor(ts[i]! / d) - first]!++;
        for (let k = 0; k < span; k++) if (counts[k]! > 0) agg.addCount([(first + k) * d], counts[k]!);
        continue;
      }
    }
    // Local group id = mixed-radix number over (code+1) per column and bucket offset.
    const radices: number[] = [];
    const cols = b.labels;
    let buckets: Int32Array | null = null;
    let minBucket = 0;
    for (const k of cp.byLabel) {
      if (k >= 0) radices.push(cols[k]!.dict.length + 1);
      else {
        const ts = b.timestampsMs!;
        const d = cp.durMs!;
        // floor is monotonic: bucket bounds come from the time bounds.
        let lo = Infinity;
        let hi = -Infinity;
        for (let i = 0; i < n; i++) {
          const t = ts[i]!;
          if (t < lo) lo = t;
          if (t > hi) hi = t;
        }
        minBucket = Math.floor(lo / d);
        buckets = new Int32Array(n);
        for (let i = 0; i < n; i++) buckets[i] = Math.floor(ts[i]! / d) - minBucket;
        radices.push(Math.floor(hi / d) - minBucket + 1);
      }
    }
    let space = 1;
    for (const r of radices) space *= r;
    const w = b.weights;
    if (nb === 0) {
      let total = n;
      if (w) {
        total = 0;
        for (let i = 0; i < n; i++) total += w[i]!;
      }
      agg.addCount([], total);
      continue;
    }
    const counts = space <= 1 << 22 ? new Float64Array(space) : null;
    const sparse = counts ? null : new Map<number, number>();
    // Dense ids fit an Int32Array (cheaper to index with than doubles).
    const ids = counts ? new Int32Array(n) : new Float64Array(n);
    let mult = 1;
    for (let j = 0; j < nb; j++) {
      const k = cp.byLabel[j]!;
      if (k >= 0) {
        const codes = cols[k]!.codes;
        if (codes === null) {
          const c = cols[k]!.dict.length === 0 ? 0 : 1;
          if (c) for (let i = 0; i < n; i++) ids[i]! += mult;
        } else for (let i = 0; i < n; i++) ids[i]! += (codes[i]! + 1) * mult;
      } else for (let i = 0; i < n; i++) ids[i]! += buckets![i]! * mult;
      mult *= radices[j]!;
    }
    if (w) {
      if (counts) for (let i = 0; i < n; i++) counts[ids[i]!]! += w[i]!;
      else for (let i = 0; i < n; i++) sparse!.set(ids[i]!, (sparse!.get(ids[i]!) ?? 0) + w[i]!);
    } else if (counts) for (let i = 0; i < n; i++) counts[ids[i]!]!++;
    else for (let i = 0; i < n; i++) sparse!.set(ids[i]!, (sparse!.get(ids[i]!) ?? 0) + 1);
    const emit = (id: number, c: number) => {
      const vals: Value[] = [];
      let rest = id;
      for (let j = 0; j < nb; j++) {
        const r = radices[j]!;
        const digit = rest % r;
        rest = (rest - digit) / r;
        const k = cp.byLabel[j]!;
        if (k >= 0) vals.push(digit === 0 ? null : cols[k]!.dict[digit - 1]!);
        else vals.push((digit + minBucket) * cp.durMs!);
      }
      agg.addCount(vals, c);
    };
    if (counts) {
      for (let id = 0; id < space; id++) if (counts[id]! > 0) emit(id, counts[id]!);
    } else for (const [id, c] of sparse!) emit(id, c);
  }
  return agg;
}

/** Result columns when no row came back (so clients still see the shape). */
function staticColumns(stages: readonly Stage[]): string[] {
  let cols: string[] = ['_timestamp', '_message'];
  for (const s of stages) {
    switch (s.kind) {
      case 'parse':
        cols = [...cols, ...s.names.filter((n) => !cols.includes(n))];
        break;
      case 'json':
        if (s.paths) cols = [...cols, ...(s.names ?? s.paths).filter((n) => !cols.includes(n))];
        break;
      case 'timeslice':
        if (!cols.includes(s.name)) cols = [...cols, s.name];
        break;
      case 'fields': {
        const keys = s.keys.map((k) => k.column);
        cols = s.drop ? cols.filter((c) => !keys.includes(c)) : ['_timestamp', ...keys.filter((k) => k !== '_timestamp')];
        break;
      }
      case 'aggregate':
        cols = [...s.by.map((k) => k.column), ...s.aggs.map((a) => a.name)];
        break;
      case 'top':
        cols = [...s.by.map((k) => k.column), s.agg.name];
        break;
      default:
    }
  }
  return cols;
}

function refOf(column: string): FieldRef {
  const facet = column.startsWith('@');
  return { name: facet ? column.slice(1) : column, facet, column, pos: { line: 1, column: 1, offset: 0 } };
}

/** Rows → table: columns by first appearance, cells under their column, missing = null. */
export function buildTable(rows: readonly Row[], plan: Plan, stages: readonly Stage[]): SvcQLTable {
  let columns: string[];
  if (rows.length === 0) columns = staticColumns(stages);
  else {
    const seen = new Set<string>();
    columns = [];
    let last: readonly string[] | null = null;
    for (const r of rows) {
      if (r.cols === last) continue;
      last = r.cols;
      for (const c of r.cols)
        if (!seen.has(c)) {
          seen.add(c);
          columns.push(c);
        }
    }
  }
  const refs = columns.map(refOf);
  const present = new Set(columns);
  return {
    columns,
    groupKeys: plan.groupKeys.filter((c) => present.has(c)),
    aggrValues: plan.aggrValues.filter((c) => present.has(c)),
    rows: rows.map((r) => refs.map((f) => toCell(r.get(f)))),
  };
}
