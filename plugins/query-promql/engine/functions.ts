/**
 * PromQL functions. Range-vector functions slide a (T - range, T] window over each series'
 * raw points with two indices; instant-vector functions map step slots in place.
 */
import type { FloatHistogram, Labels } from '../../../kernel/models.js';
import { compileAnchoredRegex, InvalidRegexError } from '../../../kernel/matchers.js';
import type { Call, Expr, MatrixSelector, VectorSelector } from '../parser/ast.js';
import type { Evaluator, Steps } from './engine.js';
import { PromQLExecutionError } from './errors.js';
import { histAddSub, histScale, histIsReset, CUSTOM_SCHEMA } from './histogram.js';
import { foldHistograms } from './histsum.js';
import { evalHistogramFunction } from './histfuncs.js';
import { evalInfo } from './info.js';
import { ANCHORED_FUNCS, SMOOTHED_FUNCS, anchoredPoints, extendedRate, type ExtCtx } from './extended.js';
import { dropMetricName, isValidLabelName, keyOf, labelsString, sortLabels, METRIC_NAME } from './labels.js';
import { kahanInc, quantile } from './mathutil.js';
import {
  ABSENT,
  FLOAT,
  HIST,
  newSeries,
  setHist,
  type MatrixValue,
  type RangeSeries,
  type StepSeries,
  type Value,
  type VectorValue,
} from './values.js';

const MATH: Record<string, (x: number) => number> = {
  abs: Math.abs,
  ceil: Math.ceil,
  floor: Math.floor,
  exp: Math.exp,
  sqrt: Math.sqrt,
  ln: Math.log,
  log2: Math.log2,
  log10: Math.log10,
  sgn: (x) => (x > 0 ? 1 : x < 0 ? -1 : x),
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  asin: Math.asin,
  acos: Math.acos,
  atan: Math.atan,
  sinh: Math.sinh,
  cosh: Math.cosh,
  tanh: Math.tanh,
  asinh: Math.asinh,
  acosh: Math.acosh,
  atanh: Math.atanh,
  deg: (x) => (x * 180) / Math.PI,
  rad: (x) => (x * Math.PI) / 180,
};

const DATE: Record<string, (d: Date) => number> = {
  year: (d) => d.getUTCFullYear(),
  month: (d) => d.getUTCMonth() + 1,
  day_of_month: (d) => d.getUTCDate(),
  day_of_week: (d) => d.getUTCDay(),
  day_of_year: (d) => {
    const start = Date.UTC(d.getUTCFullYear(), 0, 1);
    return Math.floor((d.getTime() - start) / 86_400_000) + 1;
  },
  hour: (d) => d.getUTCHours(),
  minute: (d) => d.getUTCMinutes(),
  days_in_month: (d) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate(),
};

/** Functions whose result keeps the metric name. */
const KEEPS_NAME = new Set(['last_over_time', 'first_over_time', 'sort', 'sort_desc', 'sort_by_label', 'sort_by_label_desc', 'label_replace', 'label_join', 'info']);

function unwrapParens(e: Expr): Expr {
  while (e.type === 'ParenExpr') e = e.expr;
  return e;
}

export async function evalCall(ev: Evaluator, call: Call, steps: Steps): Promise<Value> {
  const f = call.func;
  const n = steps.ts.length;
  const args = call.args;
  if (f in MATH) {
    const fn = MATH[f]!;
    const v = await ev.evalVector(args[0]!, steps);
    return mapFloats(ev, v, fn);
  }
  if (f in DATE) {
    const fn = DATE[f]!;
    const d = new Date(0);
    if (args.length === 0) {
      const s = newSeries({}, n);
      for (let i = 0; i < n; i++) {
        d.setTime(Math.floor(steps.ts[i]! / 1000) * 1000);
        s.vals[i] = fn(d);
        s.has[i] = FLOAT;
      }
      return { kind: 'vector', series: [s] };
    }
    const v = await ev.evalVector(args[0]!, steps);
    return mapFloats(ev, v, (x) => {
      if (!Number.isFinite(x)) return NaN;
      d.setTime(Math.floor(x) * 1000);
      return fn(d);
    });
  }
  switch (f) {
    case 'time':
      return { kind: 'scalar', vals: steps.ts.map((t) => t / 1000) };
    case 'pi':
      return { kind: 'scalar', vals: new Float64Array(n).fill(Math.PI) };
    case 'min_of':
    case 'max_of': {
      const a = await ev.evalScalarArg(args[0]!, steps);
      const b = await ev.evalScalarArg(args[1]!, steps);
      return { kind: 'scalar', vals: a.map((x, i) => (f === 'min_of' ? goMin(x, b[i]!) : goMax(x, b[i]!))) };
    }
    case 'vector': {
      const a = await ev.evalScalarArg(args[0]!, steps);
      const s = newSeries({}, n);
      s.vals.set(a);
      s.has.fill(FLOAT);
      return { kind: 'vector', series: [s] };
    }
    case 'scalar': {
      const v = await ev.evalVector(args[0]!, steps);
      const out = new Float64Array(n).fill(NaN);
      for (let i = 0; i < n; i++) {
        let cnt = 0;
        let val = NaN;
        for (const s of v.series) {
          if (s.has[i] === FLOAT) {
            cnt++;
            val = s.vals[i]!;
          }
          // Histograms are ignored: only the float samples count.
        }
        if (cnt === 1) out[i] = val;
      }
      return { kind: 'scalar', vals: out };
    }
    case 'timestamp': {
      const a = unwrapParens(args[0]!);
      if (a.type === 'VectorSelector') {
        const v = await ev.evalVectorSelectorTs(a, steps);
        for (const s of v.series) ev.dropName(s);
        if (!ev.delayed) ev.checkDuplicates(v);
        return v;
      }
      const v = await ev.evalVector(args[0]!, steps);
      for (const s of v.series) {
        for (let i = 0; i < n; i++) {
          if (s.has[i] !== ABSENT) {
            s.vals[i] = steps.ts[i]! / 1000;
            s.has[i] = FLOAT;
          }
        }
        s.hists = null;
        ev.dropName(s);
      }
      if (!ev.delayed) ev.checkDuplicates(v);
      return v;
    }
    case 'clamp':
    case 'clamp_min':
    case 'clamp_max': {
      const v = await ev.evalVector(args[0]!, steps);
      const lo = f === 'clamp_max' ? null : await ev.evalScalarArg(args[1]!, steps);
      const hi = f === 'clamp' ? await ev.evalScalarArg(args[2]!, steps) : f === 'clamp_max' ? await ev.evalScalarArg(args[1]!, steps) : null;
      for (const s of v.series) {
        for (let i = 0; i < n; i++) {
          if (s.has[i] === HIST) {
            s.has[i] = ABSENT;
            continue;
          }
          if (s.has[i] !== FLOAT) continue;
          let x = s.vals[i]!;
          const l = lo ? lo[i]! : -Infinity;
          const h = hi ? hi[i]! : Infinity;
          if (f === 'clamp' && h < l) {
            s.has[i] = ABSENT;
            continue;
          }
          if (lo) x = goMax(l, x);
          if (hi) x = goMin(h, x);
          s.vals[i] = x;
        }
        ev.dropName(s);
      }
      return finish(ev, v);
    }
    case 'round': {
      const v = await ev.evalVector(args[0]!, steps);
      const to = args[1] ? await ev.evalScalarArg(args[1], steps) : null;
      for (const s of v.series) {
        for (let i = 0; i < n; i++) {
          if (s.has[i] === HIST) s.has[i] = ABSENT;
          if (s.has[i] !== FLOAT) continue;
          const inv = 1 / (to ? to[i]! : 1);
          s.vals[i] = Math.floor(s.vals[i]! * inv + 0.5) / inv;
        }
        ev.dropName(s);
      }
      return finish(ev, v);
    }
    case 'absent': {
      const v = await ev.evalVector(args[0]!, steps);
      const s = newSeries(absentLabels(args[0]!), n);
      for (let i = 0; i < n; i++) {
        let present = false;
        for (const x of v.series) if (x.has[i] !== ABSENT) {
          present = true;
          break;
        }
        if (!present) {
          s.vals[i] = 1;
          s.has[i] = FLOAT;
        }
      }
      return { kind: 'vector', series: s.has.some((x) => x) ? [s] : [] };
    }
    case 'label_replace':
      return labelReplace(ev, call, steps);
    case 'label_join':
      return labelJoin(ev, call, steps);
    case 'sort':
    case 'sort_desc': {
      const v = await ev.evalVector(args[0]!, steps);
      const desc = f === 'sort_desc';
      v.series = v.series.filter((s) => s.has[0] !== HIST);
      for (const s of v.series) for (let i = 0; i < n; i++) if (s.has[i] === HIST) s.has[i] = ABSENT;
      v.series.sort((a, b) => {
        const x = a.vals[0]!;
        const y = b.vals[0]!;
        if (x !== x) return y !== y ? 0 : 1;
        if (y !== y) return -1;
        return desc ? y - x : x - y;
      });
      return v;
    }
    case 'sort_by_label':
    case 'sort_by_label_desc': {
      const v = await ev.evalVector(args[0]!, steps);
      const names: string[] = [];
      for (const a of args.slice(1)) {
        const sv = await ev.eval(a, steps);
        if (sv.kind === 'string') names.push(sv.value);
      }
      const desc = f === 'sort_by_label_desc';
      v.series.sort((a, b) => {
        for (const l of names) {
          const c = naturalCompare(a.labels[l] ?? '', b.labels[l] ?? '');
          if (c !== 0) return desc ? -c : c;
        }
        const c = keyCompare(a.labels, b.labels);
        return desc ? -c : c;
      });
      return v;
    }
    case 'histogram_quantile':
    case 'histogram_quantiles':
    case 'histogram_fraction':
    case 'histogram_count':
    case 'histogram_sum':
    case 'histogram_avg':
    case 'histogram_stddev':
    case 'histogram_stdvar':
      return evalHistogramFunction(ev, call, steps);
    case 'info': {
      return evalInfo(ev, call, steps);
    }
    case 'start_timestamp': {
      // Only a plain selector carries start timestamps; any other expression has none.
      const a = unwrapParens(args[0]!);
      if (a.type !== 'VectorSelector') {
        await ev.evalVector(args[0]!, steps);
        return { kind: 'vector', series: [] };
      }
      const v = await ev.evalVectorSelectorSt(a, steps);
      for (const s of v.series) ev.dropName(s);
      return v;
    }
  }
  // Range-vector functions.
  return evalRangeFunction(ev, call, steps);
}

function goMin(a: number, b: number): number {
  if (a !== a || b !== b) return NaN;
  return Math.min(a, b);
}
function goMax(a: number, b: number): number {
  if (a !== a || b !== b) return NaN;
  return Math.max(a, b);
}

function finish(ev: Evaluator, v: VectorValue): VectorValue {
  v.series = v.series.filter((s) => s.has.some((x) => x !== ABSENT));
  if (!ev.delayed) ev.checkDuplicates(v);
  return v;
}

function mapFloats(ev: Evaluator, v: VectorValue, fn: (x: number) => number): VectorValue {
  for (const s of v.series) {
    const { vals, has } = s;
    for (let i = 0; i < vals.length; i++) {
      if (has[i] === FLOAT) vals[i] = fn(vals[i]!);
      else if (has[i] === HIST) has[i] = ABSENT;
    }
    s.hists = null;
    ev.dropName(s);
  }
  return finish(ev, v);
}

function absentLabels(e: Expr): Labels {
  e = unwrapParens(e);
  let vs: VectorSelector | null = null;
  if (e.type === 'VectorSelector') vs = e;
  else if (e.type === 'MatrixSelector') vs = e.vector;
  if (!vs) return {};
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const m of vs.matchers) {
    if (m.name === METRIC_NAME) continue;
    if (seen.has(m.name)) dup.add(m.name);
    seen.add(m.name);
    if (m.op === '=') out[m.name] = m.value;
  }
  for (const d of dup) delete out[d];
  return sortLabels(out);
}

function naturalCompare(a: string, b: string): number {
  const re = /(\d+|\D+)/g;
  const ca = a.match(re) ?? [];
  const cb = b.match(re) ?? [];
  for (let i = 0; i < Math.min(ca.length, cb.length); i++) {
    const x = ca[i]!;
    const y = cb[i]!;
    if (x === y) continue;
    const dx = /^\d/.test(x);
    const dy = /^\d/.test(y);
    if (dx && dy) {
      const nx = Number(x);
      const ny = Number(y);
      if (nx !== ny) return nx < ny ? -1 : 1;
      continue;
    }
    return x < y ? -1 : 1;
  }
  return ca.length - cb.length;
}

function keyCompare(a: Labels, b: Labels): number {
  const ka = keyOf(a);
  const kb = keyOf(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

async function stringArg(ev: Evaluator, e: Expr, steps: Steps): Promise<string> {
  const v = await ev.eval(e, steps);
  if (v.kind !== 'string') throw new PromQLExecutionError('expected string argument');
  return v.value;
}

/** Go's regexp.Expand template syntax: $1, ${1}, $name, ${name}, $$. */
function expandTemplate(tpl: string, group: (name: string) => string | null): string {
  let out = '';
  for (let i = 0; i < tpl.length; i++) {
    const c = tpl[i]!;
    if (c !== '$' || i + 1 >= tpl.length) {
      out += c;
      continue;
    }
    const nx = tpl[i + 1]!;
    if (nx === '$') {
      out += '$';
      i++;
      continue;
    }
    let name: string;
    if (nx === '{') {
      const end = tpl.indexOf('}', i + 2);
      if (end < 0) {
        out += c;
        continue;
      }
      name = tpl.slice(i + 2, end);
      if (!/^[A-Za-z0-9_]+$/.test(name)) {
        out += c;
        continue;
      }
      i = end;
    } else {
      const m = /^[A-Za-z0-9_]+/.exec(tpl.slice(i + 1));
      if (!m) {
        out += c;
        continue;
      }
      name = m[0];
      i += name.length;
    }
    out += group(name) ?? '';
  }
  return out;
}

async function labelReplace(ev: Evaluator, call: Call, steps: Steps): Promise<Value> {
  const v = await ev.evalVector(call.args[0]!, steps);
  const dst = await stringArg(ev, call.args[1]!, steps);
  const repl = await stringArg(ev, call.args[2]!, steps);
  const src = await stringArg(ev, call.args[3]!, steps);
  const regex = await stringArg(ev, call.args[4]!, steps);
  let re;
  try {
    re = compileAnchoredRegex(regex);
  } catch (e) {
    if (e instanceof InvalidRegexError) throw new PromQLExecutionError(`invalid regular expression in label_replace(): ${regex}`);
    throw e;
  }
  if (!isValidLabelName(dst)) throw new PromQLExecutionError(`invalid destination label name in label_replace(): ${dst}`);
  for (const s of v.series) {
    const val = s.labels[src] ?? '';
    const m = re.matcher(val);
    if (!m.matches()) continue;
    const res = expandTemplate(repl, (name) => {
      try {
        if (/^\d+$/.test(name)) {
          const gi = Number(name);
          if (gi > m.groupCount()) return '';
          return m.group(gi) ?? '';
        }
        return m.group(name) ?? '';
      } catch {
        return '';
      }
    });
    const nl: Record<string, string> = { ...s.labels };
    if (res === '') delete nl[dst];
    else nl[dst] = res;
    s.labels = sortLabels(nl);
    if (dst === METRIC_NAME) s.dropName = false;
  }
  if (!ev.delayed) ev.checkDuplicates(v);
  return v;
}

async function labelJoin(ev: Evaluator, call: Call, steps: Steps): Promise<Value> {
  const v = await ev.evalVector(call.args[0]!, steps);
  const dst = await stringArg(ev, call.args[1]!, steps);
  const sep = await stringArg(ev, call.args[2]!, steps);
  const srcs: string[] = [];
  for (const a of call.args.slice(3)) srcs.push(await stringArg(ev, a, steps));
  if (!isValidLabelName(dst)) throw new PromQLExecutionError(`invalid destination label name in label_join(): ${dst}`);
  for (const src of srcs) if (!isValidLabelName(src)) throw new PromQLExecutionError(`invalid source label name in label_join(): ${src}`);
  for (const s of v.series) {
    const res = srcs.map((x) => s.labels[x] ?? '').join(sep);
    const nl: Record<string, string> = { ...s.labels };
    if (res === '') delete nl[dst];
    else nl[dst] = res;
    s.labels = sortLabels(nl);
    if (dst === METRIC_NAME) s.dropName = false;
  }
  if (!ev.delayed) ev.checkDuplicates(v);
  return v;
}

// ---- range-vector functions ---------------------------------------------------------------

/** A window over one series' float and histogram points, reused across steps. */
interface Win {
  ft: Float64Array;
  fv: Float64Array;
  flo: number;
  fhi: number;
  ht: Float64Array;
  hh: FloatHistogram[];
  hlo: number;
  hhi: number;
  /** Window end and length. */
  T: number;
  range: number;
  /** Step time (for predict_linear). */
  stepT: number;
  name: string;
  /** `anchored`/`smoothed` on the range selector (extended.ts). */
  ext?: 'anchored' | 'smoothed';
  lookback: number;
  /** Start timestamps of the float / histogram samples (NaN = none), when the selector has them. */
  fst: Float64Array | null;
  hst: Float64Array | null;
  /** Whether fv has a counter reset anywhere: -1 not yet known, 0 no, 1 yes (see extrapolatedRate). */
  resets: number;
}

/** A sample's start timestamp; 0 when unknown (Prometheus' convention). */
function stAt(a: Float64Array | null, i: number): number {
  if (!a) return 0;
  const x = a[i]!;
  return x !== x ? 0 : x;
}

/** A counter reset signalled by start timestamps (Prometheus' isStartTimestampReset). */
export function isStReset(prevSt: number, prevT: number, curSt: number, curT: number): boolean {
  if (curSt === 0 || curSt >= curT) return false;
  if (curSt < prevT) return false;
  if (curSt > prevT) return true;
  // curSt === prevT: a delta sample, unless the previous start time is unknown (or invalid).
  if (prevSt > prevT) return false;
  return prevSt !== 0 && prevSt !== prevT;
}

function stOverlapWarn(w: Win, c: FnCtx, prevSt: number, prevT: number, curSt: number): void {
  if (curSt !== 0 && curSt < prevT && curSt !== prevSt) {
    c.ev.warn(`sample has start time that overlaps with previous sample timestamp for metric ${JSON.stringify(w.name)}`, c.call.args[0]!.pos);
  }
}

function extCtx(w: Win, c: FnCtx): ExtCtx {
  void w;
  return { ev: c.ev, pos: c.call.args[0]!.pos };
}

type RangeOut = number | FloatHistogram | undefined;

const NON_COUNTER_SUFFIXES = ['_total', '_sum', '_count', '_bucket'];

async function evalRangeFunction(ev: Evaluator, call: Call, steps: Steps): Promise<Value> {
  const f = call.func;
  const n = steps.ts.length;
  const mArgIdx = f === 'quantile_over_time' ? 1 : 0;
  const mArg = call.args[mArgIdx]!;
  const mInner = unwrapParens(mArg);
  const ext = mInner.type === 'MatrixSelector' ? (mInner.vector.smoothed ? 'smoothed' : mInner.vector.anchored ? 'anchored' : undefined) : undefined;
  if (ext === 'smoothed' && !SMOOTHED_FUNCS.includes(f)) {
    throw new PromQLExecutionError(`smoothed modifier can only be used with: ${SMOOTHED_FUNCS.join(', ')} - not with ${f}`);
  }
  if (ext === 'anchored' && !ANCHORED_FUNCS.includes(f)) {
    throw new PromQLExecutionError(`anchored modifier can only be used with: ${ANCHORED_FUNCS.join(', ')} - not with ${f}`);
  }
  // A plain range selector is streamed series by series into the function below (its samples
  // are dropped as soon as the series is done); subqueries and absent_over_time take the whole
  // matrix.
  const stream = mInner.type === 'MatrixSelector' && f !== 'absent_over_time';
  let mv: MatrixValue | undefined;
  if (!stream) {
    mv = (await ev.eval(mArg, steps)) as MatrixValue;
    if (mv.kind !== 'matrix') throw new PromQLExecutionError(`expected range vector in call to ${f}`);
  }
  const scalarArgs: Float64Array[] = [];
  for (let i = 0; i < call.args.length; i++) {
    if (i === mArgIdx) continue;
    scalarArgs.push(await ev.evalScalarArg(call.args[i]!, steps));
  }
  if (f === 'absent_over_time') return absentOverTime(ev, call, mv!, n);
  const impl = RANGE_FUNCS[f];
  if (!impl) throw new PromQLExecutionError(`function ${f} is not supported`);
  if (f === 'double_exponential_smoothing') {
    for (let i = 0; i < n; i++) {
      const sf = scalarArgs[0]![i]!;
      const tf = scalarArgs[1]![i]!;
      if (!(sf > 0 && sf < 1)) throw new PromQLExecutionError(`invalid smoothing factor. Expected: 0 < sf < 1, got: ${sf.toFixed(6)}`);
      if (!(tf > 0 && tf < 1)) throw new PromQLExecutionError(`invalid trend factor. Expected: 0 < tf < 1, got: ${tf.toFixed(6)}`);
    }
  }
  if (f === 'quantile_over_time') {
    for (const q of new Set(scalarArgs[0]!)) {
      if (!(q >= 0 && q <= 1)) ev.warn(`quantile value should be between 0 and 1, got ${q}`, call.args[0]!.pos);
    }
  }
  const keep = KEEPS_NAME.has(f);
  const out: StepSeries[] = [];
  const { times, range } = mv ?? ev.matrixWindow(mInner as MatrixSelector, steps);
  const ctx: FnCtx = { ev, call, args: scalarArgs, i: 0, annos: { mixed: false } };
  let oneMeta = true;
  let meta: Labels | undefined;
  const consume = (rs: RangeSeries): void => {
    ev.check();
    if (meta === undefined) meta = rs.labels;
    else if (oneMeta) {
      const l = rs.labels;
      oneMeta = l.__name__ === meta.__name__ && l.__type__ === meta.__type__ && l.__unit__ === meta.__unit__;
    }
    // Split floats and histograms once per series.
    let ft = rs.ts;
    let fv = rs.vals;
    let ht = EMPTY_F64;
    let hh: FloatHistogram[] = [];
    let fst: Float64Array | null = rs.sts ?? null;
    let hst: Float64Array | null = null;
    if (rs.hists && rs.hists.some((h) => h)) {
      const fT: number[] = [];
      const fV: number[] = [];
      const hT: number[] = [];
      const fS: number[] = [];
      const hS: number[] = [];
      for (let i = 0; i < rs.ts.length; i++) {
        const h = rs.hists[i];
        if (h) {
          hT.push(rs.ts[i]!);
          hh.push(h);
          if (rs.sts) hS.push(rs.sts[i]!);
        } else {
          fT.push(rs.ts[i]!);
          fV.push(rs.vals[i]!);
          if (rs.sts) fS.push(rs.sts[i]!);
        }
      }
      ft = Float64Array.from(fT);
      fv = Float64Array.from(fV);
      ht = Float64Array.from(hT);
      fst = rs.sts ? Float64Array.from(fS) : null;
      hst = rs.sts ? Float64Array.from(hS) : null;
    }
    const name = rs.labels[METRIC_NAME] ?? '';
    const w: Win = { ft, fv, flo: 0, fhi: 0, ht, hh, hlo: 0, hhi: 0, T: 0, range, stepT: 0, name, ext, lookback: ev.engine.lookback, fst, hst, resets: -1 };
    const s = newSeries(rs.labels, n, rs.dropName);
    let any = false;
    let anyFloat = false;
    for (let i = 0; i < n; i++) {
      const T = times[i]!;
      const lo = T - range;
      while (w.fhi < ft.length && ft[w.fhi]! <= T) w.fhi++;
      while (w.flo < w.fhi && ft[w.flo]! <= lo) w.flo++;
      if (w.flo > w.fhi) w.flo = w.fhi;
      while (w.hhi < ht.length && ht[w.hhi]! <= T) w.hhi++;
      while (w.hlo < w.hhi && ht[w.hlo]! <= lo) w.hlo++;
      // Windows can move backwards only with `@` pinned times, which are constant; reset when T drops.
      if (i > 0 && T < times[i - 1]!) {
        w.flo = w.fhi = w.hlo = w.hhi = 0;
        i--;
        continue;
      }
      // Smoothed windows may be empty and still interpolate between the samples around them.
      if (w.flo === w.fhi && w.hlo === w.hhi && ext !== 'smoothed') continue;
      w.T = T;
      w.stepT = steps.ts[i]!;
      ctx.i = i;
      const r = impl(w, ctx);
      if (r === undefined) continue;
      if (typeof r === 'number') {
        s.vals[i] = r;
        s.has[i] = FLOAT;
        anyFloat = true;
      } else setHist(s, i, r);
      any = true;
    }
    if (!any) return;
    if (!keep) ev.dropName(s);
    if ((f === 'rate' || f === 'increase') && anyFloat && name !== '' && !NON_COUNTER_SUFFIXES.some((x) => name.endsWith(x))) {
      ev.info(`metric might not be a counter, name does not end in _total/_sum/_count/_bucket: ${JSON.stringify(name)}`, mArg.pos);
    }
    out.push(s);
  };
  if (mv) for (const rs of mv.series) consume(rs);
  else await ev.streamMatrixSelector(mInner as MatrixSelector, steps, consume);
  const v: VectorValue = { kind: 'vector', series: out };
  // A selector's series have distinct label sets; dropping the name can only make two equal
  // when their metadata labels differ, so a selection with one name needs no check.
  if (!ev.delayed && !keep && !(stream && oneMeta)) ev.checkDuplicates(v);
  return v;
}

const EMPTY_F64 = new Float64Array(0);


interface FnCtx {
  ev: Evaluator;
  call: Call;
  args: Float64Array[];
  i: number;
  annos: { mixed: boolean };
}

function mixedWarn(w: Win, c: FnCtx): undefined {
  c.ev.warn(`encountered a mix of histograms and floats for metric name ${JSON.stringify(w.name)}`, c.call.args[0]!.pos);
  return undefined;
}

const kbuf = new Float64Array(2);

function hasDecrease(v: Float64Array): boolean {
  for (let i = 1; i < v.length; i++) if (v[i]! < v[i - 1]!) return true;
  return false;
}

function extrapolatedRate(w: Win, c: FnCtx, isCounter: boolean, isRate: boolean): RangeOut {
  const nf = w.fhi - w.flo;
  const nh = w.hhi - w.hlo;
  if (nf > 0 && nh > 0) return mixedWarn(w, c);
  let firstT: number;
  let lastT: number;
  let numMinusOne: number;
  let result = 0;
  let rh: FloatHistogram | undefined;
  let firstVal = 0;
  let firstSt: number;
  if (nh > 0) {
    numMinusOne = nh - 1;
    firstT = w.ht[w.hlo]!;
    lastT = w.ht[w.hhi - 1]!;
    if (nh > 1) {
      const r = histogramRate(w, c, isCounter);
      if (!r) return undefined;
      rh = r;
    }
    firstVal = w.hh[w.hlo]!.count;
    firstSt = stAt(w.hst, w.hlo);
  } else if (nf > 0) {
    numMinusOne = nf - 1;
    firstT = w.ft[w.flo]!;
    lastT = w.ft[w.fhi - 1]!;
    firstVal = w.fv[w.flo]!;
    firstSt = stAt(w.fst, w.flo);
    result = w.fv[w.fhi - 1]! - firstVal;
    // Most counters never reset: one scan per series instead of one per window.
    if (isCounter && w.resets < 0 && !w.fst) w.resets = hasDecrease(w.fv) ? 1 : 0;
    if (isCounter && w.resets !== 0) {
      let prev = firstVal;
      for (let i = w.flo + 1; i < w.fhi; i++) {
        const cur = w.fv[i]!;
        let stReset = false;
        if (w.fst) {
          const ps = stAt(w.fst, i - 1);
          const cs = stAt(w.fst, i);
          stOverlapWarn(w, c, ps, w.ft[i - 1]!, cs);
          stReset = isStReset(ps, w.ft[i - 1]!, cs, w.ft[i]!);
        }
        if (cur < prev || stReset) result += prev;
        prev = cur;
      }
    }
  } else return undefined;
  const rangeStart = w.T - w.range;
  const rangeEnd = w.T;
  let durationToStart = (firstT - rangeStart) / 1000;
  let durationToEnd = (rangeEnd - lastT) / 1000;
  let sampled = (lastT - firstT) / 1000;
  const avg = numMinusOne > 0 ? sampled / numMinusOne : 0;
  const threshold = avg * 1.1;
  if (isCounter && firstSt !== 0 && firstSt > rangeStart && firstSt < firstT) {
    // The first sample's start time lies in the range: assume a zero sample there instead of
    // extrapolating to the left.
    durationToStart = 0;
    sampled = (lastT - firstSt) / 1000;
    if (nh > 0) {
      if (!rh) rh = { ...w.hh[w.hlo]! };
      else {
        const a = histAddSub(rh, w.hh[w.hlo]!, 1);
        if (a.incompatible || !a.h) return undefined;
        rh = { ...a.h, counterResetHint: rh.counterResetHint };
      }
    } else result += firstVal;
  } else if (numMinusOne === 0) {
    return undefined;
  } else {
    if (durationToStart >= threshold) durationToStart = avg / 2;
    if (isCounter) {
      let durationToZero = durationToStart;
      if (!rh && result > 0 && firstVal >= 0) durationToZero = sampled * (firstVal / result);
      else if (rh && rh.count > 0 && firstVal >= 0) durationToZero = sampled * (firstVal / rh.count);
      if (durationToZero < durationToStart) durationToStart = durationToZero;
    }
  }
  if (durationToEnd >= threshold) durationToEnd = avg / 2;
  let factor = sampled !== 0 ? (sampled + durationToStart + durationToEnd) / sampled : 1;
  if (isRate) factor /= w.range / 1000;
  if (rh) return { ...histScale(rh, factor), counterResetHint: 'gauge' };
  return result * factor;
}

function histogramRate(w: Win, c: FnCtx, isCounter: boolean): FloatHistogram | undefined {
  const first = w.hh[w.hlo]!;
  const last = w.hh[w.hhi - 1]!;
  const pos = c.call.args[0]!.pos;
  if (isCounter) {
    for (let i = w.hlo; i < w.hhi; i++) {
      if (w.hh[i]!.counterResetHint === 'gauge') {
        c.ev.warn(`this native histogram metric is not a counter: ${JSON.stringify(w.name)}`, pos);
        break;
      }
    }
  } else {
    for (let i = w.hlo; i < w.hhi; i++) {
      if (w.hh[i]!.counterResetHint !== 'gauge') {
        c.ev.warn(`this native histogram metric is not a gauge: ${JSON.stringify(w.name)}`, pos);
        break;
      }
    }
  }
  const mixWarn = () =>
    c.ev.warn(`vector contains a mix of histograms with exponential and custom buckets schemas for metric name ${JSON.stringify(w.name)}`, pos);
  const custom = first.schema === CUSTOM_SCHEMA;
  for (let i = w.hlo + 1; i < w.hhi - 1; i++) {
    if ((w.hh[i]!.schema === CUSTOM_SCHEMA) !== custom) {
      mixWarn();
      return undefined;
    }
  }
  if ((last.schema === CUSTOM_SCHEMA) !== custom) {
    // Two samples only: the switch of bucket kind is a counter reset, so the increase is the
    // last histogram itself (the first one still bounds the extrapolation by its count).
    if (!isCounter || w.hhi - w.hlo !== 2) {
      mixWarn();
      return undefined;
    }
    return { ...last, counterResetHint: 'not_reset' };
  }
  const r = histAddSub(last, first, -1);
  if (r.incompatible) {
    mixWarn();
    return undefined;
  }
  let res = r.h!;
  if (r.reconciled) c.ev.info('mismatched custom buckets were reconciled during subtraction', pos);
  if (isCounter) {
    let prev = first;
    for (let i = w.hlo + 1; i < w.hhi; i++) {
      const cur = w.hh[i]!;
      const stReset = !!w.hst && isStReset(stAt(w.hst, i - 1), w.ht[i - 1]!, stAt(w.hst, i), w.ht[i]!);
      if (stReset || histIsReset(prev, cur)) {
        const a = histAddSub(res, prev, 1);
        if (a.h) res = a.h;
      }
      prev = cur;
    }
  }
  res = { ...res, counterResetHint: isCounter ? 'not_reset' : 'gauge' };
  if (first.schema === CUSTOM_SCHEMA) res.customValues = res.customValues ?? first.customValues;
  return res;
}

function instantValue(w: Win, c: FnCtx, isRate: boolean): RangeOut {
  const nf = w.fhi - w.flo;
  const nh = w.hhi - w.hlo;
  // The last two samples regardless of type.
  if (nf + nh < 2) return undefined;
  type P = { t: number; v: number; h?: FloatHistogram; st: number };
  const pts: P[] = [];
  const lastF = nf > 0 ? w.ft[w.fhi - 1]! : -Infinity;
  const lastH = nh > 0 ? w.ht[w.hhi - 1]! : -Infinity;
  // Merge the last two from both lists.
  let fi = w.fhi - 1;
  let hi = w.hhi - 1;
  while (pts.length < 2) {
    const tf = fi >= w.flo ? w.ft[fi]! : -Infinity;
    const th = hi >= w.hlo ? w.ht[hi]! : -Infinity;
    if (tf >= th) {
      pts.unshift({ t: tf, v: w.fv[fi]!, st: stAt(w.fst, fi) });
      fi--;
    } else {
      pts.unshift({ t: th, v: 0, h: w.hh[hi]!, st: stAt(w.hst, hi) });
      hi--;
    }
  }
  void lastF;
  void lastH;
  const [prev, last] = pts as [P, P];
  const interval = last.t - prev.t;
  const stReset = isStReset(prev.st, prev.t, last.st, last.t);
  if (interval === 0) return undefined;
  if (!!prev.h !== !!last.h) return mixedWarn(w, c);
  if (last.h && prev.h) {
    const pos = c.call.args[0]!.pos;
    if (isRate && (last.h.counterResetHint === 'gauge' || prev.h.counterResetHint === 'gauge')) {
      c.ev.warn(`this native histogram metric is not a counter: ${JSON.stringify(w.name)}`, pos);
    }
    if (!isRate && (last.h.counterResetHint !== 'gauge' || prev.h.counterResetHint !== 'gauge')) {
      c.ev.warn(`this native histogram metric is not a gauge: ${JSON.stringify(w.name)}`, pos);
    }
    let res: FloatHistogram;
    if (isRate && (stReset || histIsReset(prev.h, last.h))) res = last.h;
    else {
      const r = histAddSub(last.h, prev.h, -1);
      if (r.incompatible) {
        c.ev.warn(`vector contains a mix of histograms with exponential and custom buckets schemas for metric name ${JSON.stringify(w.name)}`, pos);
        return undefined;
      }
      if (r.reconciled) c.ev.info('mismatched custom buckets were reconciled during subtraction', pos);
      res = r.h!;
    }
    if (isRate) res = histScale(res, 1000 / interval);
    return { ...res, counterResetHint: 'gauge' };
  }
  let r = last.v - prev.v;
  if (isRate && (last.v < prev.v || stReset)) r = last.v;
  if (isRate) r /= interval / 1000;
  return r;
}

function linearRegression(ft: Float64Array, fv: Float64Array, lo: number, hi: number, interceptT: number): [number, number] {
  // Four Kahan sums as Prometheus' kahanSumInc, written out inline: this loop runs once per
  // sample per window, and the call with an out-buffer per sum cost about as much as the math.
  const n = hi - lo;
  let sumX = 0,
    cX = 0,
    sumY = 0,
    cY = 0,
    sumXY = 0,
    cXY = 0,
    sumX2 = 0,
    cX2 = 0;
  const initY = fv[lo]!;
  let constY = true;
  for (let i = lo; i < hi; i++) {
    const y = fv[i]!;
    if (constY && i > lo && y !== initY) constY = false;
    const x = (ft[i]! - interceptT) / 1000;
    let t = sumX + x;
    if (!Number.isFinite(t) && t === t) cX = 0;
    else if (Math.abs(sumX) >= Math.abs(x)) cX += sumX - t + x;
    else cX += x - t + sumX;
    sumX = t;
    t = sumY + y;
    if (!Number.isFinite(t) && t === t) cY = 0;
    else if (Math.abs(sumY) >= Math.abs(y)) cY += sumY - t + y;
    else cY += y - t + sumY;
    sumY = t;
    const xy = x * y;
    t = sumXY + xy;
    if (!Number.isFinite(t) && t === t) cXY = 0;
    else if (Math.abs(sumXY) >= Math.abs(xy)) cXY += sumXY - t + xy;
    else cXY += xy - t + sumXY;
    sumXY = t;
    const x2 = x * x;
    t = sumX2 + x2;
    if (!Number.isFinite(t) && t === t) cX2 = 0;
    else if (Math.abs(sumX2) >= Math.abs(x2)) cX2 += sumX2 - t + x2;
    else cX2 += x2 - t + sumX2;
    sumX2 = t;
  }
  if (constY) {
    if (!Number.isFinite(initY) && initY === initY) return [NaN, NaN];
    return [0, initY];
  }
  sumX += cX;
  sumY += cY;
  sumXY += cXY;
  sumX2 += cX2;
  const covXY = sumXY - (sumX * sumY) / n;
  const varX = sumX2 - (sumX * sumX) / n;
  const slope = covXY / varX;
  const intercept = sumY / n - (slope * sumX) / n;
  return [slope, intercept];
}

function floatsOnly(w: Win, c: FnCtx, fn: (w: Win) => RangeOut): RangeOut {
  if (w.fhi === w.flo) {
    return undefined;
  }
  if (w.hhi > w.hlo) {
    c.ev.info(`ignored histograms in a range containing both floats and histograms for metric name ${JSON.stringify(w.name)}`, c.call.args[0]!.pos);
  }
  return fn(w);
}

function windowFloats(w: Win): number[] {
  const out: number[] = [];
  for (let i = w.flo; i < w.fhi; i++) out.push(w.fv[i]!);
  return out;
}

/** sum_over_time / avg_over_time of a window of histograms (compensated, with hint tracking). */
function foldHists(w: Win, c: FnCtx, mean: boolean): FloatHistogram | undefined {
  const r = foldHistograms(w.hh.slice(w.hlo, w.hhi) as FloatHistogram[], mean);
  const pos = c.call.args[0]!.pos;
  if (r.incompatible) {
    c.ev.warn(`vector contains a mix of histograms with exponential and custom buckets schemas for metric name ${JSON.stringify(w.name)}`, pos);
    return undefined;
  }
  if (r.reconciled) c.ev.info('mismatched custom buckets were reconciled during aggregation', pos);
  if (r.collision) c.ev.warn('conflicting counter resets during histogram aggregation', pos);
  return r.h;
}

const RANGE_FUNCS: Record<string, (w: Win, c: FnCtx) => RangeOut> = {
  rate: (w, c) => (w.ext ? extendedRate(w, extCtx(w, c), true, true) : extrapolatedRate(w, c, true, true)),
  increase: (w, c) => (w.ext ? extendedRate(w, extCtx(w, c), true, false) : extrapolatedRate(w, c, true, false)),
  delta: (w, c) => (w.ext ? extendedRate(w, extCtx(w, c), false, false) : extrapolatedRate(w, c, false, false)),
  irate: (w, c) => instantValue(w, c, true),
  idelta: (w, c) => instantValue(w, c, false),
  deriv: (w, c) =>
    floatsOnly(w, c, (w) => {
      if (w.fhi - w.flo < 2) return undefined;
      return linearRegression(w.ft, w.fv, w.flo, w.fhi, w.ft[w.flo]!)[0];
    }),
  predict_linear: (w, c) =>
    floatsOnly(w, c, (w) => {
      if (w.fhi - w.flo < 2) return undefined;
      const [slope, intercept] = linearRegression(w.ft, w.fv, w.flo, w.fhi, w.stepT);
      return slope * c.args[0]![c.i]! + intercept;
    }),
  double_exponential_smoothing: (w, c) =>
    floatsOnly(w, c, (w) => {
      const l = w.fhi - w.flo;
      if (l < 2) return undefined;
      const sf = c.args[0]![c.i]!;
      const tf = c.args[1]![c.i]!;
      let s0 = 0;
      let s1 = w.fv[w.flo]!;
      let b = w.fv[w.flo + 1]! - w.fv[w.flo]!;
      for (let i = 1; i < l; i++) {
        const x = sf * w.fv[w.flo + i]!;
        if (i - 1 !== 0) b = tf * (s1 - s0) + (1 - tf) * b;
        const y = (1 - sf) * (s1 + b);
        s0 = s1;
        s1 = x + y;
      }
      return s1;
    }),
  changes: (w) => {
    const pts = w.ext ? anchoredPoints(w) : mergedPoints(w);
    if (!pts) return undefined;
    let changes = 0;
    for (let i = 1; i < pts.length; i++) {
      const p = pts[i - 1]!;
      const q = pts[i]!;
      if (p.h || q.h) {
        if (!p.h || !q.h || !histSame(p.h, q.h)) changes++;
      } else if (q.v !== p.v && !(q.v !== q.v && p.v !== p.v)) changes++;
    }
    return changes;
  },
  resets: (w) => {
    const pts = w.ext ? anchoredPoints(w) : mergedPoints(w);
    if (!pts) return undefined;
    let resets = 0;
    for (let i = 1; i < pts.length; i++) {
      const p = pts[i - 1]!;
      const q = pts[i]!;
      const stReset = isStReset(p.st ?? 0, p.t, q.st ?? 0, q.t);
      if (p.h && q.h) {
        if (stReset || histIsReset(p.h, q.h)) resets++;
      } else if (!p.h && !q.h) {
        if (q.v < p.v || stReset) resets++;
      } else resets++;
    }
    return resets;
  },
  sum_over_time: (w, c) => {
    if (w.fhi > w.flo && w.hhi > w.hlo) return mixedWarn(w, c);
    if (w.hhi > w.hlo) return foldHists(w, c, false);
    let sum = 0;
    let comp = 0;
    for (let i = w.flo; i < w.fhi; i++) {
      kahanInc(w.fv[i]!, sum, comp, kbuf);
      sum = kbuf[0]!;
      comp = kbuf[1]!;
    }
    return Number.isFinite(sum) ? sum + comp : sum;
  },
  avg_over_time: (w, c) => {
    if (w.fhi > w.flo && w.hhi > w.hlo) return mixedWarn(w, c);
    if (w.hhi > w.hlo) return foldHists(w, c, true);
    let sum = 0,
      mean = 0,
      count = 0,
      kc = 0;
    let incremental = false;
    for (let i = w.flo; i < w.fhi; i++) {
      const f = w.fv[i]!;
      count++;
      if (!incremental) {
        kahanInc(f, sum, kc, kbuf);
        if (count === 1 || Number.isFinite(kbuf[0]!) || kbuf[0] !== kbuf[0]) {
          sum = kbuf[0]!;
          kc = kbuf[1]!;
          continue;
        }
        incremental = true;
        mean = sum / (count - 1);
        kc /= count - 1;
      }
      const q = (count - 1) / count;
      kahanInc(f / count, q * mean, q * kc, kbuf);
      mean = kbuf[0]!;
      kc = kbuf[1]!;
    }
    if (incremental) return mean + kc;
    const r = sum / count;
    return Number.isFinite(kc / count) ? r + kc / count : r;
  },
  count_over_time: (w) => w.fhi - w.flo + (w.hhi - w.hlo),
  present_over_time: () => 1,
  min_over_time: (w, c) =>
    floatsOnly(w, c, (w) => {
      let m = w.fv[w.flo]!;
      for (let i = w.flo + 1; i < w.fhi; i++) {
        const x = w.fv[i]!;
        if (x < m || m !== m) m = x;
      }
      return m;
    }),
  max_over_time: (w, c) =>
    floatsOnly(w, c, (w) => {
      let m = w.fv[w.flo]!;
      for (let i = w.flo + 1; i < w.fhi; i++) {
        const x = w.fv[i]!;
        if (x > m || m !== m) m = x;
      }
      return m;
    }),
  ts_of_min_over_time: (w, c) =>
    floatsOnly(w, c, (w) => {
      let m = w.fv[w.flo]!;
      let t = w.ft[w.flo]!;
      for (let i = w.flo + 1; i < w.fhi; i++) {
        const x = w.fv[i]!;
        if (x <= m || m !== m) {
          m = x;
          t = w.ft[i]!;
        }
      }
      return t / 1000;
    }),
  ts_of_max_over_time: (w, c) =>
    floatsOnly(w, c, (w) => {
      let m = w.fv[w.flo]!;
      let t = w.ft[w.flo]!;
      for (let i = w.flo + 1; i < w.fhi; i++) {
        const x = w.fv[i]!;
        if (x >= m || m !== m) {
          m = x;
          t = w.ft[i]!;
        }
      }
      return t / 1000;
    }),
  stddev_over_time: (w, c) => floatsOnly(w, c, (w) => Math.sqrt(variance(w))),
  stdvar_over_time: (w, c) => floatsOnly(w, c, (w) => variance(w)),
  quantile_over_time: (w, c) => floatsOnly(w, c, (w) => quantile(c.args[0]![c.i]!, windowFloats(w))),
  mad_over_time: (w, c) =>
    floatsOnly(w, c, (w) => {
      const vals = windowFloats(w);
      // A NaN sample makes the median, and so the deviation, undefined.
      if (vals.some((x) => x !== x)) return NaN;
      const med = quantile(0.5, vals);
      return quantile(0.5, vals.map((x) => Math.abs(x - med)));
    }),
  last_over_time: (w) => {
    const tf = w.fhi > w.flo ? w.ft[w.fhi - 1]! : -Infinity;
    const th = w.hhi > w.hlo ? w.ht[w.hhi - 1]! : -Infinity;
    return tf >= th ? w.fv[w.fhi - 1]! : w.hh[w.hhi - 1]!;
  },
  first_over_time: (w) => {
    const tf = w.fhi > w.flo ? w.ft[w.flo]! : Infinity;
    const th = w.hhi > w.hlo ? w.ht[w.hlo]! : Infinity;
    return tf <= th ? w.fv[w.flo]! : w.hh[w.hlo]!;
  },
  ts_of_last_over_time: (w) => {
    const tf = w.fhi > w.flo ? w.ft[w.fhi - 1]! : -Infinity;
    const th = w.hhi > w.hlo ? w.ht[w.hhi - 1]! : -Infinity;
    return Math.max(tf, th) / 1000;
  },
  ts_of_first_over_time: (w) => {
    const tf = w.fhi > w.flo ? w.ft[w.flo]! : Infinity;
    const th = w.hhi > w.hlo ? w.ht[w.hlo]! : Infinity;
    return Math.min(tf, th) / 1000;
  },
};

function variance(w: Win): number {
  let count = 0,
    mean = 0,
    cMean = 0,
    aux = 0,
    cAux = 0;
  for (let i = w.flo; i < w.fhi; i++) {
    const f = w.fv[i]!;
    count++;
    const delta = f - (mean + cMean);
    kahanInc(delta / count, mean, cMean, kbuf);
    mean = kbuf[0]!;
    cMean = kbuf[1]!;
    kahanInc(delta * (f - (mean + cMean)), aux, cAux, kbuf);
    aux = kbuf[0]!;
    cAux = kbuf[1]!;
  }
  return (aux + cAux) / count;
}

/** Prometheus' FloatHistogram.Equals: the data, not the counter-reset hint. */
function histSame(a: FloatHistogram, b: FloatHistogram): boolean {
  if (a.counterResetHint === b.counterResetHint) return JSON.stringify(a) === JSON.stringify(b);
  return JSON.stringify({ ...a, counterResetHint: b.counterResetHint }) === JSON.stringify(b);
}

function mergedPoints(w: Win): { t: number; v: number; h?: FloatHistogram; st?: number }[] {
  const out: { t: number; v: number; h?: FloatHistogram; st?: number }[] = [];
  let i = w.flo;
  let j = w.hlo;
  while (i < w.fhi || j < w.hhi) {
    if (j >= w.hhi || (i < w.fhi && w.ft[i]! <= w.ht[j]!)) {
      out.push({ t: w.ft[i]!, v: w.fv[i]!, st: stAt(w.fst, i) });
      i++;
    } else {
      out.push({ t: w.ht[j]!, v: 0, h: w.hh[j]!, st: stAt(w.hst, j) });
      j++;
    }
  }
  return out;
}

function absentOverTime(ev: Evaluator, call: Call, mv: MatrixValue, n: number): VectorValue {
  const s = newSeries(absentLabels(call.args[0]!), n);
  const { times, range } = mv;
  for (let i = 0; i < n; i++) {
    const T = times[i]!;
    let present = false;
    for (const rs of mv.series) {
      // Binary search for a point in (T - range, T].
      let lo = 0;
      let hi = rs.ts.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (rs.ts[mid]! <= T - range) lo = mid + 1;
        else hi = mid;
      }
      if (lo < rs.ts.length && rs.ts[lo]! <= T) {
        present = true;
        break;
      }
    }
    if (!present) {
      s.vals[i] = 1;
      s.has[i] = FLOAT;
    }
  }
  void ev;
  return { kind: 'vector', series: s.has.some((x) => x) ? [s] : [] };
}

export { dropMetricName, labelsString };
