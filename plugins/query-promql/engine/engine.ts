/**
 * The PromQL evaluator. Every node is evaluated once for all steps of the query (see values.ts):
 * selectors read each series once for the whole range and slide windows over typed arrays.
 */
import type { MatcherAlternatives } from '../../../kernel/matchers.js';
import type { FloatHistogram, Labels } from '../../../kernel/models.js';
import { isStaleMarker } from '../../../kernel/models.js';
import type { MetricStore, StoredSeries } from '../../../kernel/storage.js';
import type { AtModifier, DurationExpr, Expr, MatrixSelector, SubqueryExpr, VectorSelector } from '../parser/ast.js';
import { positionOf } from '../parser/errors.js';
import { exprType, parsePromQL, sourceOf } from '../parser/parser.js';
import { evalAggregate } from './aggregate.js';
import { evalBinary } from './binary.js';
import { PromQLExecutionError, TOO_MANY_SAMPLES } from './errors.js';
import { evalCall } from './functions.js';
import { evalSmoothedSelector } from './smoothed.js';
import { histNeg } from './histogram.js';
import { markStatsOnlySelectors, statsIteratorHints } from './stats-hints.js';
import { dropMetricName, keyOf, compareLabels } from './labels.js';
import {
  ABSENT,
  FLOAT,
  HIST,
  newSeries,
  type MatrixValue,
  type RangeSeries,
  type ScalarValue,
  type StepSeries,
  type Value,
  type VectorValue,
} from './values.js';

export { PromQLExecutionError } from './errors.js';

export interface PromQLEngineOptions {
  /** Default 300000 (5 minutes). */
  lookbackDeltaMs?: number;
  /** Maximum samples a query may hold; default 50,000,000. */
  maxSamples?: number;
  /** Step of subqueries written without one (`[10m:]`); default 60000. */
  noStepSubqueryIntervalMs?: number;
  /** Remove `__name__` only at the end of the query (Prometheus' feature flag); default false. */
  delayedNameRemoval?: boolean;
}

export interface PromEvalContext {
  metrics: MetricStore;
  scope?: MatcherAlternatives;
  signal?: AbortSignal;
  /** Unix ms. */
  deadline?: number;
}

export type PromPoint = { t: number; v: number; h?: FloatHistogram };

export type PromResult =
  | { type: 'vector'; samples: { metric: Labels; t: number; v: number; h?: FloatHistogram }[] }
  | { type: 'matrix'; series: { metric: Labels; points: PromPoint[] }[] }
  | { type: 'scalar'; t: number; v: number }
  | { type: 'string'; t: number; v: string };

export interface PromQueryOutput {
  result: PromResult;
  warnings: string[];
  infos: string[];
  samplesLoaded?: number;
}

/** Steps of one evaluation: the timestamps (ms) a node is evaluated at. */
export interface Steps {
  ts: Float64Array;
}

export interface QueryBounds {
  start: number;
  end: number;
  step: number;
}

export class PromQLEngine {
  readonly lookback: number;
  readonly maxSamples: number;
  readonly noStepSubqueryInterval: number;
  readonly delayedNameRemoval: boolean;

  constructor(opts: PromQLEngineOptions = {}) {
    this.lookback = opts.lookbackDeltaMs ?? 300_000;
    this.maxSamples = opts.maxSamples ?? 50_000_000;
    this.noStepSubqueryInterval = opts.noStepSubqueryIntervalMs ?? 60_000;
    this.delayedNameRemoval = opts.delayedNameRemoval ?? false;
  }

  async instantQuery(q: string | Expr, timeMs: number, ctx: PromEvalContext): Promise<PromQueryOutput> {
    const expr = typeof q === 'string' ? parsePromQL(q) : q;
    markStatsOnlySelectors(expr);
    const ev = new Evaluator(this, ctx, { start: timeMs, end: timeMs, step: 0 }, sourceOf(expr));
    const steps: Steps = { ts: Float64Array.of(timeMs) };
    const v = await ev.evalTop(expr, steps);
    const result = ev.toInstantResult(v, timeMs, expr);
    return { result, warnings: [...ev.warnings], infos: [...ev.infos], samplesLoaded: ev.samplesLoaded };
  }

  async rangeQuery(q: string | Expr, startMs: number, endMs: number, stepMs: number, ctx: PromEvalContext): Promise<PromQueryOutput> {
    const expr = typeof q === 'string' ? parsePromQL(q) : q;
    if (!(stepMs > 0)) throw new PromQLExecutionError('zero or negative query resolution step widths are not accepted. Try a positive integer', 'bad_data');
    if (endMs < startMs) throw new PromQLExecutionError('end timestamp must not be before start time', 'bad_data');
    const t = exprType(expr);
    if (t !== 'scalar' && t !== 'vector') {
      throw new PromQLExecutionError(
        `invalid expression type "${t === 'matrix' ? 'range vector' : t}" for range query, must be Scalar or instant Vector`,
        'bad_data',
      );
    }
    const n = Math.floor((endMs - startMs) / stepMs) + 1;
    if (n > 11_000) {
      throw new PromQLExecutionError('exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)', 'bad_data');
    }
    const ts = new Float64Array(n);
    for (let i = 0; i < n; i++) ts[i] = startMs + i * stepMs;
    markStatsOnlySelectors(expr);
    const ev = new Evaluator(this, ctx, { start: startMs, end: endMs, step: stepMs }, sourceOf(expr));
    const v = await ev.evalTop(expr, { ts });
    const result = ev.toRangeResult(v, ts);
    return { result, warnings: [...ev.warnings], infos: [...ev.infos], samplesLoaded: ev.samplesLoaded };
  }
}

/** One query's evaluation state. */
export class Evaluator {
  readonly warnings = new Set<string>();
  readonly infos = new Set<string>();
  samplesLoaded = 0;
  private checkCounter = 0;

  constructor(
    readonly engine: PromQLEngine,
    readonly ctx: PromEvalContext,
    readonly bounds: QueryBounds,
    readonly src: string | undefined,
  ) {}

  get delayed(): boolean {
    return this.engine.delayedNameRemoval;
  }

  private pos(p: { start: number }): string {
    if (this.src === undefined) return '';
    const { line, column } = positionOf(this.src, p.start);
    return ` (${line}:${column})`;
  }
  warn(msg: string, p: { start: number }): void {
    this.warnings.add(`PromQL warning: ${msg}${this.pos(p)}`);
  }
  info(msg: string, p: { start: number }): void {
    this.infos.add(`PromQL info: ${msg}${this.pos(p)}`);
  }

  /** Deadline/abort check; cheap enough to call per series. */
  check(): void {
    if ((++this.checkCounter & 63) !== 0) return;
    this.checkNow();
  }
  checkNow(): void {
    if (this.ctx.signal?.aborted) throw new PromQLExecutionError('query was canceled', 'timeout');
    if (this.ctx.deadline !== undefined && Date.now() > this.ctx.deadline) {
      throw new PromQLExecutionError('query timed out in query execution', 'timeout');
    }
  }
  addSamples(n: number): void {
    this.samplesLoaded += n;
    if (this.samplesLoaded > this.engine.maxSamples) throw new PromQLExecutionError(TOO_MANY_SAMPLES);
  }

  async evalTop(e: Expr, steps: Steps): Promise<Value> {
    this.checkNow();
    const v = await this.eval(e, steps);
    if (v.kind === 'vector') {
      if (this.delayed) this.finalizeNames(v);
      this.checkDuplicates(v);
    } else if (v.kind === 'matrix' && this.delayed) {
      for (const s of v.series) if (s.dropName) s.labels = dropMetricName(s.labels);
    }
    return v;
  }

  private finalizeNames(v: VectorValue): void {
    for (const s of v.series) {
      if (s.dropName) {
        s.labels = dropMetricName(s.labels);
        s.dropName = false;
      }
    }
  }

  /** Prometheus: a vector cannot contain two samples with the same label set at one step. */
  checkDuplicates(v: VectorValue): void {
    if (v.series.length < 2) return;
    const byKey = new Map<string, StepSeries[]>();
    let dup = false;
    for (const s of v.series) {
      const k = keyOf(s.labels);
      const l = byKey.get(k);
      if (l) {
        l.push(s);
        dup = true;
      } else byKey.set(k, [s]);
    }
    if (!dup) return;
    // Merge series with equal labels when they never overlap; otherwise fail.
    const out: StepSeries[] = [];
    for (const list of byKey.values()) {
      if (list.length === 1) {
        out.push(list[0]!);
        continue;
      }
      const base = list[0]!;
      for (let j = 1; j < list.length; j++) {
        const o = list[j]!;
        for (let i = 0; i < o.has.length; i++) {
          if (o.has[i] === ABSENT) continue;
          if (base.has[i] !== ABSENT) throw new PromQLExecutionError('vector cannot contain metrics with the same labelset');
          base.has[i] = o.has[i]!;
          base.vals[i] = o.vals[i]!;
          if (o.has[i] === HIST) {
            if (!base.hists) base.hists = new Array(base.has.length);
            base.hists[i] = o.hists![i];
          }
        }
      }
      out.push(base);
    }
    v.series = out;
  }

  /** Drops `__name__` now, or marks it for removal at the end (delayed name removal). */
  dropName(s: { labels: Labels; dropName: boolean }): void {
    if (this.delayed) s.dropName = true;
    else s.labels = dropMetricName(s.labels);
  }

  async eval(e: Expr, steps: Steps): Promise<Value> {
    this.check();
    switch (e.type) {
      case 'NumberLiteral':
        return { kind: 'scalar', vals: new Float64Array(steps.ts.length).fill(e.value) };
      case 'StringLiteral':
        return { kind: 'string', value: e.value };
      case 'ParenExpr':
        return this.eval(e.expr, steps);
      case 'TimeRef': {
        const b = this.bounds;
        const x =
          e.which === 'start' ? b.start / 1000 : e.which === 'end' ? b.end / 1000 : e.which === 'step' ? b.step / 1000 : (b.end - b.start) / 1000;
        return { kind: 'scalar', vals: new Float64Array(steps.ts.length).fill(x) };
      }
      case 'UnaryExpr': {
        const v = await this.eval(e.expr, steps);
        if (e.op === '+') return v;
        if (v.kind === 'scalar') return { kind: 'scalar', vals: v.vals.map((x) => -x) };
        if (v.kind === 'vector') {
          for (const s of v.series) {
            for (let i = 0; i < s.vals.length; i++) {
              if (s.has[i] === FLOAT) s.vals[i] = -s.vals[i]!;
              else if (s.has[i] === HIST) s.hists![i] = histNeg(s.hists![i]!);
            }
            this.dropName(s);
          }
          if (!this.delayed) this.checkDuplicates(v);
          return v;
        }
        throw new PromQLExecutionError('unary expression on unsupported type');
      }
      case 'VectorSelector':
        return this.evalVectorSelector(e, steps);
      case 'MatrixSelector':
        return this.evalMatrixSelector(e, steps);
      case 'SubqueryExpr':
        return this.evalSubquery(e, steps);
      case 'Call':
        return evalCall(this, e, steps);
      case 'AggregateExpr':
        return evalAggregate(this, e, steps);
      case 'BinaryExpr':
        return evalBinary(this, e, steps);
    }
  }

  async evalScalarArg(e: Expr, steps: Steps): Promise<Float64Array> {
    const v = await this.eval(e, steps);
    if (v.kind !== 'scalar') throw new PromQLExecutionError('expected scalar');
    return v.vals;
  }

  async evalVector(e: Expr, steps: Steps): Promise<VectorValue> {
    const v = await this.eval(e, steps);
    if (v.kind !== 'vector') throw new PromQLExecutionError(`expected instant vector, got ${v.kind}`);
    return v;
  }

  /** Evaluation time of a selector at each step: `@` pins it, offset shifts it. */
  selectorTimes(at: AtModifier | undefined, offset: number, steps: Steps): Float64Array {
    const n = steps.ts.length;
    const out = new Float64Array(n);
    if (at !== undefined) {
      const t = (at === 'start' ? this.bounds.start : at === 'end' ? this.bounds.end : at) - offset;
      out.fill(t);
    } else {
      for (let i = 0; i < n; i++) out[i] = steps.ts[i]! - offset;
    }
    return out;
  }

  durationMs(fixed: number, expr: DurationExpr | undefined): number {
    if (!expr) return fixed;
    return evalDuration(expr, this.bounds);
  }

  /** timestamp(selector): the sample's own timestamp instead of its value. */
  evalVectorSelectorTs(vs: VectorSelector, steps: Steps): Promise<VectorValue> {
    return this.evalVectorSelector(vs, steps, true);
  }

  /** start_timestamp(selector): the start time (s; 0 when unknown) of the sample in effect. */
  evalVectorSelectorSt(vs: VectorSelector, steps: Steps): Promise<VectorValue> {
    return this.evalVectorSelector(vs, steps, true, true);
  }

  /**
   * Hands each series of a selection to `fn`: synchronously when the store offers selectSync
   * (no promise and no event-loop turn per series), else one by one from its select.
   */
  async eachSelected(matchers: VectorSelector['matchers'], mint: number, maxt: number, fn: (ss: StoredSeries) => void): Promise<void> {
    const m = this.ctx.metrics;
    const hints = { scope: this.ctx.scope, signal: this.ctx.signal };
    if (m.selectSync) {
      for (const ss of m.selectSync(matchers, mint, maxt, hints)) fn(ss);
      return;
    }
    for await (const ss of m.select(matchers, mint, maxt, hints)) fn(ss);
  }

  async evalVectorSelector(vs: VectorSelector, steps: Steps, wantTs = false, wantSt = false): Promise<VectorValue> {
    if (vs.smoothed && !wantTs) return evalSmoothedSelector(this, vs, steps);
    const offset = this.durationMs(vs.offset, vs.offsetExpr);
    const times = this.selectorTimes(vs.at, offset, steps);
    const n = times.length;
    const lookback = this.engine.lookback;
    // A stats-only selector also reads the sample at the lookback boundary, as Prometheus'
    // iterator seeks to it; it only serves as the predecessor for hint detection.
    const mint = times[0]! - lookback + (vs.statsOnly ? 0 : 1);
    const maxt = times[n - 1]!;
    const out: StepSeries[] = [];
    await this.eachSelected(vs.matchers, mint, maxt, (ss) => {
      this.check();
      const ts = ss.timestamps;
      const vals = ss.values;
      const hs = vs.statsOnly && ss.histograms ? statsIteratorHints(ss.histograms) : ss.histograms;
      const s = newSeries(ss.labels, n);
      let j = 0;
      let any = false;
      let cnt = 0;
      for (let i = 0; i < n; i++) {
        const T = times[i]!;
        while (j < ts.length && ts[j]! <= T) j++;
        const k = j - 1;
        if (k < 0 || ts[k]! <= T - lookback) continue;
        const h = hs?.[k];
        if (wantTs) {
          const v = vals[k]!;
          if (!h && v !== v && isStaleMarker(v)) continue;
          if (wantSt) {
            const st = ss.startTimestamps?.[k] ?? NaN;
            s.vals[i] = st !== st ? 0 : st / 1000;
          } else s.vals[i] = ts[k]! / 1000;
          s.has[i] = FLOAT;
        } else if (h) {
          if (!s.hists) s.hists = new Array(n);
          s.hists[i] = h;
          s.has[i] = HIST;
        } else {
          const v = vals[k]!;
          if (v !== v && isStaleMarker(v)) continue;
          s.vals[i] = v;
          s.has[i] = FLOAT;
        }
        any = true;
        cnt++;
      }
      if (any) {
        this.addSamples(cnt);
        out.push(s);
      }
    });
    return { kind: 'vector', series: out };
  }

  /** Raw samples of a range selector, with stale markers removed. */
  async evalMatrixSelector(ms: MatrixSelector, steps: Steps): Promise<MatrixValue> {
    const series: RangeSeries[] = [];
    const { times, range } = await this.streamMatrixSelector(ms, steps, (rs) => void series.push(rs));
    return { kind: 'matrix', series, times, range };
  }

  /** Window end per step and window length of a range selector. */
  matrixWindow(ms: MatrixSelector, steps: Steps): { times: Float64Array; range: number } {
    const vs = ms.vector;
    const offset = this.durationMs(vs.offset, vs.offsetExpr);
    return { times: this.selectorTimes(vs.at, offset, steps), range: this.durationMs(ms.range, ms.rangeExpr) };
  }

  /**
   * A range selector's series one at a time (stale markers removed), so range functions can
   * consume each series and drop its samples before the next is read: the samples of a whole
   * 24 h selection are never held at once.
   */
  async streamMatrixSelector(
    ms: MatrixSelector,
    steps: Steps,
    each: (rs: RangeSeries) => void,
  ): Promise<{ times: Float64Array; range: number }> {
    const vs = ms.vector;
    const { times, range } = this.matrixWindow(ms, steps);
    const n = times.length;
    // Extended range selectors look one lookback further back for the anchoring sample.
    const extra = vs.anchored || vs.smoothed ? this.engine.lookback : 0;
    const mint = times[0]! - range + (vs.statsOnly ? 0 : 1) - extra;
    const maxt = times[n - 1]! + (vs.smoothed ? this.engine.lookback : 0);
    await this.eachSelected(vs.matchers, mint, maxt, (ss) => {
      this.check();
      let ts = ss.timestamps;
      let vals = ss.values;
      let hs = ss.histograms ?? null;
      let sts = ss.startTimestamps;
      // Remove staleness markers (rare: scan first, copy only when needed).
      let stale = 0;
      for (let i = 0; i < vals.length; i++) {
        const v = vals[i]!;
        if (v !== v && !(hs && hs[i]) && isStaleMarker(v)) stale++;
      }
      if (stale > 0) {
        const m = vals.length - stale;
        const nts = new Float64Array(m);
        const nv = new Float64Array(m);
        const nh: (FloatHistogram | undefined)[] | null = hs ? new Array(m) : null;
        const nst = sts ? new Float64Array(m) : undefined;
        let w = 0;
        for (let i = 0; i < vals.length; i++) {
          const v = vals[i]!;
          if (v !== v && !(hs && hs[i]) && isStaleMarker(v)) continue;
          nts[w] = ts[i]!;
          nv[w] = v;
          if (nh) nh[w] = hs![i];
          if (nst) nst[w] = sts![i]!;
          w++;
        }
        ts = nts;
        vals = nv;
        hs = nh;
        sts = nst;
      }
      if (ts.length === 0) return;
      if (vs.statsOnly && hs) hs = statsIteratorHints(hs);
      this.addSamples(ts.length);
      each({ labels: ss.labels, ts, vals, hists: hs, dropName: false, sts });
    });
    return { times, range };
  }

  async evalSubquery(sq: SubqueryExpr, steps: Steps): Promise<MatrixValue> {
    const offset = this.durationMs(sq.offset, sq.offsetExpr);
    const range = this.durationMs(sq.range, sq.rangeExpr);
    let step = sq.stepExpr ? this.durationMs(0, sq.stepExpr) : sq.step;
    if (!step) step = this.engine.noStepSubqueryInterval;
    if (step <= 0) throw new PromQLExecutionError('zero or negative subquery step');
    const times = this.selectorTimes(sq.at, offset, steps);
    const first = times[0]! - range;
    let start = first - (first % step);
    if (start < first) start += step;
    const last = times[times.length - 1]!;
    const cnt = start > last ? 0 : Math.floor((last - start) / step) + 1;
    if (cnt > 11_000_000) throw new PromQLExecutionError(TOO_MANY_SAMPLES);
    const inner = new Float64Array(cnt);
    for (let i = 0; i < cnt; i++) inner[i] = start + i * step;
    const series: RangeSeries[] = [];
    if (cnt > 0) {
      const v = await this.eval(sq.expr, { ts: inner });
      if (v.kind === 'vector') {
        if (!this.delayed) this.checkDuplicates(v);
        for (const s of v.series) series.push(forgetCounterHints(compactSeries(s, inner)));
      } else if (v.kind === 'scalar') {
        // A scalar subquery is not allowed by the type checker; kept for safety.
      }
    }
    return { kind: 'matrix', series, times, range };
  }

  toInstantResult(v: Value, t: number, expr: Expr): PromResult {
    void expr;
    switch (v.kind) {
      case 'scalar':
        return { type: 'scalar', t, v: v.vals[0]! };
      case 'string':
        return { type: 'string', t, v: v.value };
      case 'vector': {
        const samples: { metric: Labels; t: number; v: number; h?: FloatHistogram }[] = [];
        for (const s of v.series) {
          if (s.has[0] === FLOAT) samples.push({ metric: s.labels, t, v: s.vals[0]! });
          else if (s.has[0] === HIST) samples.push({ metric: s.labels, t, v: 0, h: s.hists![0]! });
        }
        return { type: 'vector', samples };
      }
      case 'matrix': {
        const T = v.times[0]!;
        const out: { metric: Labels; points: PromPoint[] }[] = [];
        for (const s of v.series) {
          const points: PromPoint[] = [];
          for (let i = 0; i < s.ts.length; i++) {
            const pt = s.ts[i]!;
            if (pt <= T - v.range || pt > T) continue;
            const h = s.hists?.[i];
            points.push(h ? { t: pt, v: 0, h } : { t: pt, v: s.vals[i]! });
          }
          if (points.length) out.push({ metric: s.labels, points });
        }
        out.sort((a, b) => compareLabels(a.metric, b.metric));
        return { type: 'matrix', series: out };
      }
    }
  }

  toRangeResult(v: Value, ts: Float64Array): PromResult {
    const out: { metric: Labels; points: PromPoint[] }[] = [];
    if (v.kind === 'scalar') {
      const points: PromPoint[] = [];
      for (let i = 0; i < ts.length; i++) points.push({ t: ts[i]!, v: v.vals[i]! });
      out.push({ metric: {}, points });
    } else if (v.kind === 'vector') {
      for (const s of v.series) {
        const points: PromPoint[] = [];
        for (let i = 0; i < ts.length; i++) {
          if (s.has[i] === FLOAT) points.push({ t: ts[i]!, v: s.vals[i]! });
          else if (s.has[i] === HIST) points.push({ t: ts[i]!, v: 0, h: s.hists![i]! });
        }
        if (points.length) out.push({ metric: s.labels, points });
      }
      out.sort((a, b) => compareLabels(a.metric, b.metric));
    }
    return { type: 'matrix', series: out };
  }
}

/** Keeps only the present steps of a series as raw points (subquery results). */
export function compactSeries(s: StepSeries, ts: Float64Array): RangeSeries {
  let m = 0;
  for (let i = 0; i < s.has.length; i++) if (s.has[i] !== ABSENT) m++;
  const nts = new Float64Array(m);
  const nv = new Float64Array(m);
  const nh: (FloatHistogram | undefined)[] | null = s.hists ? new Array(m) : null;
  let w = 0;
  for (let i = 0; i < s.has.length; i++) {
    if (s.has[i] === ABSENT) continue;
    nts[w] = ts[i]!;
    nv[w] = s.vals[i]!;
    if (nh) nh[w] = s.has[i] === HIST ? s.hists![i] : undefined;
    w++;
  }
  return { labels: s.labels, ts: nts, vals: nv, hists: nh, dropName: s.dropName };
}

/**
 * A subquery's points are not consecutive stored samples, so the hints reset/not_reset (which
 * relate a sample to its stored predecessor) say nothing about them: they become "unknown" and
 * range functions detect resets themselves, as Prometheus does.
 */
function forgetCounterHints(rs: RangeSeries): RangeSeries {
  const hs = rs.hists;
  if (!hs) return rs;
  for (let i = 0; i < hs.length; i++) {
    const h = hs[i];
    if (h && (h.counterResetHint === 'not_reset' || h.counterResetHint === 'reset')) hs[i] = { ...h, counterResetHint: 'unknown' };
  }
  return rs;
}

export function evalDuration(d: DurationExpr, b: QueryBounds): number {
  switch (d.kind) {
    case 'num':
      return d.ms;
    case 'neg':
      return -evalDuration(d.expr, b);
    case 'step':
      return b.step;
    case 'range':
      return b.end - b.start;
    case 'min':
      return Math.min(evalDuration(d.args[0], b), evalDuration(d.args[1], b));
    case 'max':
      return Math.max(evalDuration(d.args[0], b), evalDuration(d.args[1], b));
    case 'binary': {
      const a = evalDuration(d.lhs, b) / 1000;
      const c = evalDuration(d.rhs, b) / 1000;
      let r: number;
      switch (d.op) {
        case '+':
          r = a + c;
          break;
        case '-':
          r = a - c;
          break;
        case '*':
          r = a * c;
          break;
        case '/':
          r = a / c;
          break;
        case '%':
          r = a % c;
          break;
        case '^':
          r = Math.pow(a, c);
          break;
      }
      return Math.round(r * 1000);
    }
  }
}

export type { ScalarValue };
