/**
 * info(v, [data-label selector]): enriches each series of v with the data labels of the info
 * series (default `target_info`) that share its identifying labels (instance, job), as
 * Prometheus' experimental info() does.
 *
 * - Info series are read once for the whole query, at the same reference times as v's samples
 *   (so `@` and offsets inside v, also through subqueries, pin which info series applies).
 * - Among several series of the same info metric the one with the latest sample wins; data
 *   labels from different info metrics are merged and must not conflict.
 * - Series of v that are themselves info series (match all `__name__` matchers) pass through.
 * - With data matchers that reject the empty string, samples without a matching info series are
 *   dropped; otherwise they pass through unenriched.
 */
import type { LabelMatcher } from '../../../kernel/matchers.js';
import { compileMatcher } from '../../../kernel/matchers.js';
import type { Labels } from '../../../kernel/models.js';
import { isStaleMarker } from '../../../kernel/models.js';
import type { Call, Expr } from '../parser/ast.js';
import { exprType } from '../parser/parser.js';
import type { Evaluator, Steps } from './engine.js';
import { PromQLExecutionError } from './errors.js';
import { keyOf, METRIC_NAME, sortLabels } from './labels.js';
import { ABSENT, HIST, newSeries, setHist, type StepSeries, type VectorValue } from './values.js';

const IDENTIFYING = ['instance', 'job'];

interface InfoSeries {
  labels: Labels;
  name: string;
  /** Timestamp of the sample in effect at each step (NaN: none). */
  sampleT: Float64Array;
}

/** The times at which v's underlying samples are read, following `@`/offset down the first path. */
function refTimes(ev: Evaluator, e: Expr, ts: Float64Array): Float64Array {
  switch (e.type) {
    case 'VectorSelector':
      return ev.selectorTimes(e.at, ev.durationMs(e.offset, e.offsetExpr), { ts });
    case 'MatrixSelector':
      return ev.selectorTimes(e.vector.at, ev.durationMs(e.vector.offset, e.vector.offsetExpr), { ts });
    case 'SubqueryExpr':
      return refTimes(ev, e.expr, ev.selectorTimes(e.at, ev.durationMs(e.offset, e.offsetExpr), { ts }));
    case 'ParenExpr':
    case 'UnaryExpr':
      return refTimes(ev, e.expr, ts);
    case 'AggregateExpr':
      return refTimes(ev, e.expr, ts);
    case 'BinaryExpr':
      return refTimes(ev, exprType(e.lhs) === 'vector' ? e.lhs : e.rhs, ts);
    case 'Call': {
      const a = e.args.find((x) => {
        const t = exprType(x);
        return t === 'vector' || t === 'matrix';
      });
      return a ? refTimes(ev, a, ts) : ts;
    }
    default:
      return ts;
  }
}

function unwrap(e: Expr): Expr {
  while (e.type === 'ParenExpr') e = e.expr;
  return e;
}

export async function evalInfo(ev: Evaluator, call: Call, steps: Steps): Promise<VectorValue> {
  const base = await ev.evalVector(call.args[0]!, steps);
  const selArg = call.args[1] ? unwrap(call.args[1]) : undefined;
  const matchers: LabelMatcher[] = selArg?.type === 'VectorSelector' ? selArg.matchers : [];
  let nameMs = matchers.filter((m) => m.name === METRIC_NAME);
  const dataMs = matchers.filter((m) => m.name !== METRIC_NAME);
  if (nameMs.length === 0) nameMs = [{ name: METRIC_NAME, op: '=', value: 'target_info' }];
  // Only negative name matchers: the candidates are still info metrics (`*_info`).
  if (!nameMs.some((m) => m.op === '=' || m.op === '=~')) nameMs = [...nameMs, { name: METRIC_NAME, op: '=~', value: '.+_info' }];
  const namePreds = nameMs.map((m) => compileMatcher(m));
  const isInfoName = (l: Labels) => namePreds.every((p) => p(l[METRIC_NAME] ?? ''));
  const dataLabelNames = new Set(dataMs.map((m) => m.name));
  const dropWithoutInfo = dataMs.length > 0 && !dataMs.every((m) => compileMatcher(m)(''));

  const n = steps.ts.length;
  const times = refTimes(ev, call.args[0]!, steps.ts);
  let mint = Infinity;
  let maxt = -Infinity;
  for (let i = 0; i < n; i++) {
    mint = Math.min(mint, times[i]!);
    maxt = Math.max(maxt, times[i]!);
  }
  const lookback = ev.engine.lookback;
  // Info series by instance value (the most selective identifying label).
  const infos: InfoSeries[] = [];
  if (base.series.length > 0) {
    await ev.eachSelected([...nameMs, ...dataMs], mint - lookback + 1, maxt, (ss) => {
      ev.check();
      if (ss.histograms?.some((h) => h)) {
        throw new PromQLExecutionError(`info metric ${JSON.stringify(ss.labels[METRIC_NAME] ?? '')} has native histogram samples; info metrics must be floats`);
      }
      const sampleT = new Float64Array(n).fill(NaN);
      const ts = ss.timestamps;
      let any = false;
      for (let i = 0; i < n; i++) {
        const T = times[i]!;
        // Binary search: last sample at or before T.
        let lo = 0;
        let hi = ts.length;
        while (lo < hi) {
          const m = (lo + hi) >>> 1;
          if (ts[m]! <= T) lo = m + 1;
          else hi = m;
        }
        const k = lo - 1;
        if (k < 0 || ts[k]! <= T - lookback || isStaleMarker(ss.values[k]!)) continue;
        sampleT[i] = ts[k]!;
        any = true;
      }
      if (any) infos.push({ labels: ss.labels, name: ss.labels[METRIC_NAME] ?? '', sampleT });
    });
  }

  const out: StepSeries[] = [];
  const byKey = new Map<string, StepSeries>();
  const emit = (labels: Labels, src: StepSeries, i: number) => {
    const k = keyOf(labels);
    let o = byKey.get(k);
    if (!o) {
      o = newSeries(labels, n, src.dropName);
      byKey.set(k, o);
      out.push(o);
    }
    if (src.has[i] === HIST) setHist(o, i, src.hists![i]!);
    else {
      o.vals[i] = src.vals[i]!;
      o.has[i] = src.has[i]!;
    }
  };
  for (const s of base.series) {
    ev.check();
    const ids = IDENTIFYING.filter((l) => (s.labels[l] ?? '') !== '');
    if (isInfoName(s.labels) || ids.length === 0) {
      out.push(s);
      continue;
    }
    const cands = infos.filter((x) => ids.every((l) => x.labels[l] === s.labels[l]));
    for (let i = 0; i < n; i++) {
      if (s.has[i] === ABSENT) continue;
      // Latest sample per info metric name.
      const best = new Map<string, InfoSeries>();
      for (const c of cands) {
        const t = c.sampleT[i]!;
        if (t !== t) continue;
        const b = best.get(c.name);
        if (!b || t > b.sampleT[i]!) best.set(c.name, c);
      }
      if (best.size === 0) {
        if (!dropWithoutInfo) emit(s.labels, s, i);
        continue;
      }
      const added: Record<string, string> = {};
      const from: Record<string, string> = {};
      for (const c of best.values()) {
        for (const l in c.labels) {
          if (l === METRIC_NAME || IDENTIFYING.includes(l)) continue;
          if (dataLabelNames.size > 0 && !dataLabelNames.has(l)) continue;
          const v = c.labels[l]!;
          if (v === '' || (s.labels[l] ?? '') !== '') continue;
          if (added[l] !== undefined && added[l] !== v) {
            throw new PromQLExecutionError(`conflicting label: ${l} has values ${JSON.stringify(added[l])} (from ${from[l]}) and ${JSON.stringify(v)} (from ${c.name})`);
          }
          added[l] = v;
          from[l] = c.name;
        }
      }
      emit(Object.keys(added).length ? sortLabels({ ...s.labels, ...added }) : s.labels, s, i);
    }
  }
  return { kind: 'vector', series: out };
}
