/** Aggregation operators. Groups are computed once per series; values accumulate per step. */
import type { FloatHistogram, Labels } from '../../../kernel/models.js';
import type { AggregateExpr } from '../parser/ast.js';
import type { Evaluator, Steps } from './engine.js';
import { PromQLExecutionError } from './errors.js';
import { histString } from './histogram.js';
import { foldHistograms } from './histsum.js';
import { goQuote } from '../parser/lexer.js';
import { xxhash64 } from './xxhash64.js';
import { isValidLabelName, keyOf, sortLabels, METRIC_NAME, isMetadataLabel } from './labels.js';
import { formatFloat, kahanInc, quantile } from './mathutil.js';
import { ABSENT, FLOAT, HIST, newSeries, setHist, type StepSeries, type VectorValue } from './values.js';

interface Group {
  labels: Labels;
  members: StepSeries[];
  dropName: boolean;
}

function groupLabels(l: Labels, e: AggregateExpr): Labels {
  const out: Record<string, string> = {};
  if (e.without) {
    for (const k in l) if (!e.grouping.includes(k) && !isMetadataLabel(k)) out[k] = l[k]!;
  } else {
    for (const k of e.grouping) if (l[k] !== undefined && l[k] !== '') out[k] = l[k]!;
  }
  return sortLabels(out);
}

/**
 * The group key of a series, equal to keyOf(groupLabels(l, e)) but built without the
 * intermediate label object (the group's labels are made once per group, not per series).
 */
function groupKeyer(e: AggregateExpr): (l: Labels) => string {
  if (!e.without) {
    const names = [...new Set(e.grouping)].sort();
    return (l) => {
      let k = '';
      for (const n of names) {
        const v = l[n];
        if (v !== undefined && v !== '') k += n + '\xff' + v + '\xfe';
      }
      return k;
    };
  }
  const skip = new Set(e.grouping);
  return (l) => {
    let k = '';
    let prev = '';
    for (const n in l) {
      // Label sets are normally sorted by name; otherwise take the general path.
      if (n < prev) return keyOf(groupLabels(l, e));
      prev = n;
      const v = l[n]!;
      if (v === '' || skip.has(n) || isMetadataLabel(n)) continue;
      k += n + '\xff' + v + '\xfe';
    }
    return k;
  };
}

const kbuf = new Float64Array(2);

export async function evalAggregate(ev: Evaluator, e: AggregateExpr, steps: Steps): Promise<VectorValue> {
  const n = steps.ts.length;
  let param: Float64Array | null = null;
  let strParam = '';
  if (e.param) {
    const pv = await ev.eval(e.param, steps);
    if (pv.kind === 'scalar') param = pv.vals;
    else if (pv.kind === 'string') strParam = pv.value;
  }
  const v = await ev.evalVector(e.expr, steps);
  const op = e.op;
  if (op === 'count_values') {
    if (!isValidLabelName(strParam)) throw new PromQLExecutionError(`invalid label name ${goQuote(strParam)}`);
  }
  if (op === 'topk' || op === 'bottomk' || op === 'limitk') {
    for (let i = 0; i < n; i++) {
      if (param![i] !== param![i] && v.series.length > 0) throw new PromQLExecutionError('Parameter value is NaN');
    }
    if (v.series.length === 0 && param!.some((x) => x !== x)) throw new PromQLExecutionError('Parameter value is NaN');
  }
  if (op === 'limit_ratio') {
    if (param!.some((x) => x !== x)) throw new PromQLExecutionError('Ratio value is NaN');
    for (const r of new Set(param!)) {
      if (r < -1 || r > 1) ev.warn(`ratio value should be between -1 and 1, got ${formatFloat(r)}, capping to ${r < 0 ? -1 : 1}`, e.param!.pos);
    }
  }
  if (op === 'quantile') {
    for (const q of new Set(param!)) {
      if (!(q >= 0 && q <= 1)) ev.warn(`quantile value should be between 0 and 1, got ${formatFloat(q)}`, e.param!.pos);
    }
  }
  // Group series.
  const groups = new Map<string, Group>();
  const order: Group[] = [];
  const keyer = groupKeyer(e);
  for (const s of v.series) {
    const k = keyer(s.labels);
    let g = groups.get(k);
    if (!g) {
      g = { labels: groupLabels(s.labels, e), members: [], dropName: false };
      groups.set(k, g);
      order.push(g);
    }
    g.members.push(s);
    if (s.dropName && !e.without && e.grouping.includes(METRIC_NAME)) g.dropName = true;
  }
  const out: StepSeries[] = [];
  switch (op) {
    case 'topk':
    case 'bottomk':
    case 'limitk':
    case 'limit_ratio':
      return selectK(ev, e, v, order, param!, n);
    case 'count_values': {
      // Output label sets are global: the value label may override a grouping label.
      const byVal = new Map<string, StepSeries>();
      for (const g of order) {
        for (let i = 0; i < n; i++) {
          for (const s of g.members) {
            if (s.has[i] === ABSENT) continue;
            const str = s.has[i] === HIST ? histString(s.hists![i]!) : formatFloat(s.vals[i]!);
            const lab = sortLabels({ ...g.labels, [strParam]: str });
            const key = keyOf(lab);
            let o = byVal.get(key);
            if (!o) {
              o = newSeries(lab, n);
              byVal.set(key, o);
              out.push(o);
            }
            o.vals[i] = (o.has[i] ? o.vals[i]! : 0) + 1;
            o.has[i] = FLOAT;
          }
        }
      }
      return { kind: 'vector', series: out };
    }
  }
  for (const g of order) {
    ev.check();
    const o = newSeries(g.labels, n, g.dropName);
    const ms = g.members;
    if (n > 1 && floatOnly(ms) && aggregateFloatsBySeries(op, ms, o)) {
      if (o.has.some((x) => x !== ABSENT)) out.push(o);
      continue;
    }
    const vals: number[] = [];
    for (let i = 0; i < n; i++) {
      let cnt = 0;
      let hcnt = 0;
      for (const s of ms) {
        if (s.has[i] === FLOAT) cnt++;
        else if (s.has[i] === HIST) hcnt++;
      }
      if (cnt === 0 && hcnt === 0) continue;
      if (hcnt > 0 && (op === 'sum' || op === 'avg')) {
        if (cnt > 0) {
          ev.warn(`encountered a mix of histograms and floats for aggregation`, e.pos);
          continue;
        }
        const hs: FloatHistogram[] = [];
        for (const s of ms) if (s.has[i] === HIST) hs.push(s.hists![i]!);
        const r = foldHistograms(hs, op === 'avg');
        if (r.reconciled) ev.info('mismatched custom buckets were reconciled during aggregation', e.pos);
        if (r.incompatible) {
          ev.warn(`vector contains a mix of histograms with exponential and custom buckets schemas for metric name ""`, e.pos);
          continue;
        }
        if (r.collision) ev.warn('conflicting counter resets during histogram aggregation', e.expr.pos);
        setHist(o, i, r.h!);
        continue;
      }
      if (hcnt > 0 && op !== 'count' && op !== 'group') {
        ev.info(`ignored histogram in ${op} aggregation`, e.pos);
      }
      let r: number;
      switch (op) {
        case 'sum': {
          let sum = 0;
          let c = 0;
          for (const s of ms) {
            if (s.has[i] !== FLOAT) continue;
            kahanInc(s.vals[i]!, sum, c, kbuf);
            sum = kbuf[0]!;
            c = kbuf[1]!;
          }
          if (cnt === 0) continue;
          r = Number.isFinite(c) ? sum + c : sum;
          break;
        }
        case 'avg': {
          if (cnt === 0) continue;
          let sum = 0,
            c = 0,
            mean = 0,
            k = 0;
          let incremental = false;
          for (const s of ms) {
            if (s.has[i] !== FLOAT) continue;
            const f = s.vals[i]!;
            k++;
            if (!incremental) {
              kahanInc(f, sum, c, kbuf);
              if (k === 1 || Number.isFinite(kbuf[0]!) || kbuf[0] !== kbuf[0]) {
                sum = kbuf[0]!;
                c = kbuf[1]!;
                continue;
              }
              incremental = true;
              mean = sum / (k - 1);
              c /= k - 1;
            }
            const q = (k - 1) / k;
            kahanInc(f / k, q * mean, q * c, kbuf);
            mean = kbuf[0]!;
            c = kbuf[1]!;
          }
          if (incremental) r = mean + c;
          else r = sum / k + (Number.isFinite(c / k) ? c / k : 0);
          break;
        }
        case 'count':
          r = cnt + hcnt;
          break;
        case 'group':
          r = 1;
          break;
        case 'min':
        case 'max': {
          if (cnt === 0) continue;
          r = NaN;
          let first = true;
          for (const s of ms) {
            if (s.has[i] !== FLOAT) continue;
            const x = s.vals[i]!;
            if (first || (op === 'max' ? x > r || r !== r : x < r || r !== r)) r = x;
            first = false;
          }
          break;
        }
        case 'stddev':
        case 'stdvar': {
          if (cnt === 0) continue;
          let k = 0,
            mean = 0,
            cMean = 0,
            aux = 0,
            cAux = 0;
          for (const s of ms) {
            if (s.has[i] !== FLOAT) continue;
            const f = s.vals[i]!;
            k++;
            const delta = f - (mean + cMean);
            kahanInc(delta / k, mean, cMean, kbuf);
            mean = kbuf[0]!;
            cMean = kbuf[1]!;
            kahanInc(delta * (f - (mean + cMean)), aux, cAux, kbuf);
            aux = kbuf[0]!;
            cAux = kbuf[1]!;
          }
          const vr = (aux + cAux) / k;
          r = op === 'stddev' ? Math.sqrt(vr) : vr;
          break;
        }
        case 'quantile': {
          if (cnt === 0) continue;
          vals.length = 0;
          for (const s of ms) if (s.has[i] === FLOAT) vals.push(s.vals[i]!);
          r = quantile(param![i]!, vals);
          break;
        }
        default:
          throw new PromQLExecutionError(`unsupported aggregation ${op}`);
      }
      o.vals[i] = r;
      o.has[i] = FLOAT;
    }
    if (o.has.some((x) => x !== ABSENT)) out.push(o);
  }
  return { kind: 'vector', series: out };
}

function floatOnly(ms: readonly StepSeries[]): boolean {
  for (const s of ms) if (s.hists !== null) return false;
  return true;
}

/**
 * sum/count/group/min/max of float-only members, member by member over all steps (typed arrays
 * walked in order instead of one step across every member). Each step sees the members in the
 * same order with the same arithmetic as the per-step loop, so results are identical. Returns
 * false for other operators.
 */
function aggregateFloatsBySeries(op: string, ms: readonly StepSeries[], o: StepSeries): boolean {
  const n = o.vals.length;
  const cnt = new Float64Array(n);
  const acc = o.vals;
  switch (op) {
    case 'sum': {
      const comp = new Float64Array(n);
      for (const s of ms) {
        const has = s.has;
        const vs = s.vals;
        for (let i = 0; i < n; i++) {
          if (has[i] !== FLOAT) continue;
          // kahanInc, inlined.
          const inc = vs[i]!;
          const sum = acc[i]!;
          const t = sum + inc;
          if (!Number.isFinite(t) && t === t) comp[i] = 0;
          else if (Math.abs(sum) >= Math.abs(inc)) comp[i] += sum - t + inc;
          else comp[i] += inc - t + sum;
          acc[i] = t;
          cnt[i]++;
        }
      }
      for (let i = 0; i < n; i++) {
        if (cnt[i] === 0) {
          acc[i] = 0;
          continue;
        }
        const c = comp[i]!;
        if (Number.isFinite(c)) acc[i]! += c;
        o.has[i] = FLOAT;
      }
      return true;
    }
    case 'count':
    case 'group':
      for (const s of ms) {
        const has = s.has;
        for (let i = 0; i < n; i++) if (has[i] === FLOAT) cnt[i]++;
      }
      for (let i = 0; i < n; i++) {
        if (cnt[i] === 0) continue;
        acc[i] = op === 'count' ? cnt[i]! : 1;
        o.has[i] = FLOAT;
      }
      return true;
    case 'min':
    case 'max': {
      const max = op === 'max';
      for (const s of ms) {
        const has = s.has;
        const vs = s.vals;
        for (let i = 0; i < n; i++) {
          if (has[i] !== FLOAT) continue;
          const x = vs[i]!;
          const r = acc[i]!;
          if (cnt[i] === 0 || (max ? x > r || r !== r : x < r || r !== r)) acc[i] = x;
          cnt[i]++;
        }
      }
      for (let i = 0; i < n; i++) if (cnt[i] !== 0) o.has[i] = FLOAT;
      return true;
    }
  }
  return false;
}

/** topk/bottomk/limitk/limit_ratio: keep the input series, per step only the selected ones. */
function selectK(ev: Evaluator, e: AggregateExpr, v: VectorValue, groups: Group[], param: Float64Array, n: number): VectorValue {
  const op = e.op;
  const outMap = new Map<StepSeries, StepSeries>();
  const ordered: StepSeries[] = [];
  const get = (s: StepSeries) => {
    let o = outMap.get(s);
    if (!o) {
      o = newSeries(s.labels, n, s.dropName);
      outMap.set(s, o);
    }
    return o;
  };
  const ratios = new Map<StepSeries, number>();
  for (const g of groups) {
    for (let i = 0; i < n; i++) {
      const p = param[i]!;
      const present = g.members.filter((s) => s.has[i] !== ABSENT);
      if (present.length === 0) continue;
      let chosen: StepSeries[];
      if (op === 'limit_ratio') {
        const r = Math.max(-1, Math.min(1, p));
        chosen = present.filter((s) => {
          let x = ratios.get(s);
          if (x === undefined) ratios.set(s, (x = ratioSample(s.labels)));
          return r >= 0 ? x < r : x >= 1 + r;
        });
      } else {
        let k = Math.trunc(p);
        if (k > 9e15) k = 9e15;
        if (k < 1) continue;
        if (op === 'limitk') chosen = present.slice(0, k);
        else {
          const floats = present.filter((s) => s.has[i] === FLOAT);
          const desc = op === 'topk';
          floats.sort((a, b) => {
            const x = a.vals[i]!;
            const y = b.vals[i]!;
            // NaN sorts last for both topk and bottomk.
            if (x !== x) return y !== y ? 0 : 1;
            if (y !== y) return -1;
            // -1/0/1, not a difference: a double returned to the sort builtin is a heap number.
            const c = x < y ? -1 : x > y ? 1 : 0;
            return desc ? -c : c;
          });
          chosen = floats.slice(0, k);
          if (floats.length < present.length) {
            ev.info(`ignored histogram in ${op} aggregation`, e.pos);
          }
        }
      }
      for (const s of chosen) {
        const o = get(s);
        if (n === 1) ordered.push(o);
        o.has[i] = s.has[i]!;
        o.vals[i] = s.vals[i]!;
        if (s.has[i] === HIST) setHist(o, i, s.hists![i]!);
      }
    }
  }
  const series = n === 1 ? ordered : [...outMap.values()];
  void v;
  return { kind: 'vector', series };
}

const utf8 = new TextEncoder();

/**
 * Prometheus' sample-independent ratio for limit_ratio: Labels.Hash() (XXH64 over
 * `name\xffvalue\xff` for the labels in name order) divided by 2^64.
 */
function ratioSample(l: Labels): number {
  const names = Object.keys(l).sort();
  const parts: Uint8Array[] = [];
  let len = 0;
  for (const k of names) {
    const a = utf8.encode(k);
    const b = utf8.encode(l[k]!);
    parts.push(a, b);
    len += a.length + b.length + 2;
  }
  const buf = new Uint8Array(len);
  let o = 0;
  for (const p of parts) {
    buf.set(p, o);
    o += p.length;
    buf[o++] = 0xff;
  }
  return Number(xxhash64(buf)) / 18446744073709551616;
}
