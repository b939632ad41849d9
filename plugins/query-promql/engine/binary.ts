/** Binary operators: arithmetic, comparison (filter or `bool`), set operators, vector matching. */
import type { FloatHistogram, Labels } from '../../../kernel/models.js';
import type { BinaryExpr, VectorMatching } from '../parser/ast.js';
import type { Evaluator, Steps } from './engine.js';
import { PromQLExecutionError } from './errors.js';
import { histAddSub, histDiv, histEqual, histScale } from './histogram.js';
import { histTrim } from './trim.js';
import { dropMetricName, keyOf, labelsString, signature, sortLabels, METRIC_NAME } from './labels.js';
import { ABSENT, FLOAT, HIST, newSeries, setHist, type ScalarValue, type StepSeries, type Value, type VectorValue } from './values.js';

const ARITH = new Set(['+', '-', '*', '/', '%', '^', 'atan2']);
const CMP = new Set(['==', '!=', '>', '<', '>=', '<=']);

function arith(op: string, a: number, b: number): number {
  switch (op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    case '/':
      return a / b;
    case '%':
      return a % b;
    case '^':
      return Math.pow(a, b);
    case 'atan2':
      return Math.atan2(a, b);
  }
  return NaN;
}

function cmp(op: string, a: number, b: number): boolean {
  switch (op) {
    case '==':
      return a === b;
    case '!=':
      return a !== b;
    case '>':
      return a > b;
    case '<':
      return a < b;
    case '>=':
      return a >= b;
    case '<=':
      return a <= b;
  }
  return false;
}

/** Result of one element operation: float, histogram, or nothing. */
interface Elem {
  keep: boolean;
  v: number;
  h?: FloatHistogram;
}
const elem: Elem = { keep: false, v: 0 };

function elemOp(ev: Evaluator, e: BinaryExpr, a: number, ah: FloatHistogram | undefined, b: number, bh: FloatHistogram | undefined): Elem {
  const op = e.op;
  elem.h = undefined;
  if (op === '</' || op === '>/') {
    // Trim operators apply to a histogram on the left and a float cutoff on the right.
    elem.keep = !!ah && !bh;
    if (ah && !bh) elem.h = histTrim(ah, b, op === '</');
    return elem;
  }
  if (!ah && !bh) {
    if (CMP.has(op)) {
      elem.keep = cmp(op, a, b);
      elem.v = a;
    } else {
      elem.keep = true;
      elem.v = arith(op, a, b);
    }
    return elem;
  }
  elem.keep = false;
  if (ah && bh) {
    if (op === '+' || op === '-') {
      const r = histAddSub(ah, bh, op === '+' ? 1 : -1);
      if (r.incompatible) {
        ev.warn('incompatible histograms', e.pos);
        return elem;
      }
      const opName = op === '+' ? 'addition' : 'subtraction';
      if (r.reconciled) ev.info(`mismatched custom buckets were reconciled during ${opName}`, e.pos);
      if (r.collision) ev.warn(`conflicting counter resets during histogram ${opName}`, e.pos);
      elem.keep = true;
      // A difference is a gauge; a sum keeps the combined hint.
      elem.h = op === '-' ? { ...r.h!, counterResetHint: 'gauge' } : r.h!;
      return elem;
    }
    if (op === '==' || op === '!=') {
      const eq = histEqual(ah, bh);
      elem.keep = op === '==' ? eq : !eq;
      elem.h = ah;
      return elem;
    }
    ev.info(`incompatible sample types encountered for binary operator ${JSON.stringify(op)}: histogram ${op} histogram`, e.pos);
    return elem;
  }
  if (ah) {
    if (op === '*' || op === '/') {
      elem.keep = true;
      elem.h = op === '*' ? histScale(ah, b) : histDiv(ah, b);
      return elem;
    }
    ev.info(`incompatible sample types encountered for binary operator ${JSON.stringify(op)}: histogram ${op} float`, e.pos);
    return elem;
  }
  if (op === '*') {
    elem.keep = true;
    elem.h = histScale(bh!, a);
    return elem;
  }
  ev.info(`incompatible sample types encountered for binary operator ${JSON.stringify(op)}: float ${op} histogram`, e.pos);
  return elem;
}

export async function evalBinary(ev: Evaluator, e: BinaryExpr, steps: Steps): Promise<Value> {
  const lhs = await ev.eval(e.lhs, steps);
  const rhs = await ev.eval(e.rhs, steps);
  const n = steps.ts.length;
  if (lhs.kind === 'scalar' && rhs.kind === 'scalar') {
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const a = lhs.vals[i]!;
      const b = rhs.vals[i]!;
      out[i] = CMP.has(e.op) ? (cmp(e.op, a, b) ? 1 : 0) : arith(e.op, a, b);
    }
    return { kind: 'scalar', vals: out };
  }
  if (lhs.kind === 'vector' && rhs.kind === 'scalar') return vectorScalar(ev, e, lhs, rhs, false, n);
  if (lhs.kind === 'scalar' && rhs.kind === 'vector') return vectorScalar(ev, e, rhs, lhs, true, n);
  if (lhs.kind !== 'vector' || rhs.kind !== 'vector') throw new PromQLExecutionError('invalid binary expression operands');
  switch (e.op) {
    case 'and':
    case 'unless':
      return andUnless(e, lhs, rhs, n);
    case 'or':
      return or(e, lhs, rhs, n);
  }
  return vectorVector(ev, e, lhs, rhs, n);
}

function vectorScalar(ev: Evaluator, e: BinaryExpr, v: VectorValue, s: ScalarValue, swap: boolean, n: number): VectorValue {
  const isCmp = CMP.has(e.op);
  // Comparisons (as filters) and trim operators keep the metric name.
  const drop = !(isCmp || e.op === '</' || e.op === '>/') || e.returnBool;
  for (const x of v.series) {
    for (let i = 0; i < n; i++) {
      const st = x.has[i];
      if (st === ABSENT) continue;
      const h = st === HIST ? x.hists![i] : undefined;
      const a = x.vals[i]!;
      const b = s.vals[i]!;
      const r = swap ? elemOp(ev, e, b, undefined, a, h) : elemOp(ev, e, a, h, b, undefined);
      if (e.returnBool) {
        if (h) {
          x.has[i] = ABSENT;
          continue;
        }
        x.vals[i] = r.keep ? 1 : 0;
        x.has[i] = FLOAT;
        continue;
      }
      if (!r.keep) {
        x.has[i] = ABSENT;
        continue;
      }
      if (r.h) {
        setHist(x, i, r.h);
      } else if (h && isCmp) {
        x.has[i] = ABSENT;
      } else {
        x.vals[i] = isCmp ? a : r.v;
        x.has[i] = FLOAT;
      }
    }
    if (drop) ev.dropName(x);
  }
  v.series = v.series.filter((x) => x.has.some((h) => h !== ABSENT));
  if (drop && !ev.delayed) ev.checkDuplicates(v);
  return v;
}

function sigOf(l: Labels, m: VectorMatching | undefined): string {
  if (!m) return signature(l, [], false);
  return signature(l, m.labels, m.on);
}

function andUnless(e: BinaryExpr, lhs: VectorValue, rhs: VectorValue, n: number): VectorValue {
  const present = new Map<string, Uint8Array>();
  for (const s of rhs.series) {
    const k = sigOf(s.labels, e.matching);
    let p = present.get(k);
    if (!p) present.set(k, (p = new Uint8Array(n)));
    for (let i = 0; i < n; i++) if (s.has[i] !== ABSENT) p[i] = 1;
  }
  const isAnd = e.op === 'and';
  const out: StepSeries[] = [];
  for (const s of lhs.series) {
    const p = present.get(sigOf(s.labels, e.matching));
    for (let i = 0; i < n; i++) {
      const hit = p ? p[i] === 1 : false;
      if (hit !== isAnd) s.has[i] = ABSENT;
    }
    if (s.has.some((x) => x !== ABSENT)) out.push(s);
  }
  return { kind: 'vector', series: out };
}

function or(e: BinaryExpr, lhs: VectorValue, rhs: VectorValue, n: number): VectorValue {
  const present = new Map<string, Uint8Array>();
  for (const s of lhs.series) {
    const k = sigOf(s.labels, e.matching);
    let p = present.get(k);
    if (!p) present.set(k, (p = new Uint8Array(n)));
    for (let i = 0; i < n; i++) if (s.has[i] !== ABSENT) p[i] = 1;
  }
  const out: StepSeries[] = [...lhs.series];
  for (const s of rhs.series) {
    const p = present.get(sigOf(s.labels, e.matching));
    if (p) for (let i = 0; i < n; i++) if (p[i]) s.has[i] = ABSENT;
    if (s.has.some((x) => x !== ABSENT)) out.push(s);
  }
  return { kind: 'vector', series: out };
}

function matchGroupString(l: Labels, m: VectorMatching | undefined): string {
  const out: Record<string, string> = {};
  if (m && m.on) {
    for (const k of m.labels) if (l[k] !== undefined) out[k] = l[k]!;
  } else {
    for (const k in l) if (k !== METRIC_NAME && !(m?.labels ?? []).includes(k)) out[k] = l[k]!;
  }
  return labelsString(sortLabels(out));
}

function vectorVector(ev: Evaluator, e: BinaryExpr, lhs: VectorValue, rhs: VectorValue, n: number): VectorValue {
  const m: VectorMatching = e.matching ?? { card: 'one-to-one', on: false, labels: [], include: [] };
  const isCmp = CMP.has(e.op);
  const dropsName = ARITH.has(e.op) || e.returnBool;
  const oneToMany = m.card === 'one-to-many';
  const many = oneToMany ? rhs : lhs;
  const one = oneToMany ? lhs : rhs;
  // Index the "one" side by signature.
  const oneBySig = new Map<string, StepSeries[]>();
  for (const s of one.series) {
    const k = sigOf(s.labels, m);
    const l = oneBySig.get(k);
    if (l) l.push(s);
    else oneBySig.set(k, [s]);
  }
  // Duplicates on the "one" side at the same step are an error.
  for (const list of oneBySig.values()) {
    if (list.length < 2) continue;
    for (let i = 0; i < n; i++) {
      const at = list.filter((s) => s.has[i] !== ABSENT);
      if (at.length > 1) {
        const side = oneToMany ? 'left' : 'right';
        const names = at
          .slice(0, 2)
          .map((s) => labelsString(s.labels))
          .sort();
        throw new PromQLExecutionError(
          `found duplicate series for the match group ${matchGroupString(at[0]!.labels, m)} on the ${side} hand-side of the operation: [${names.join(', ')}];many-to-many matching not allowed: matching labels must be unique on one side`,
        );
      }
    }
  }
  const outByKey = new Map<string, StepSeries>();
  const out: StepSeries[] = [];
  // For one-to-one: a signature matched twice at one step (from the many side) is an error.
  const matchedAt = new Map<string, Uint8Array>();
  const oneMatched = m.fillLeft !== undefined ? new Map<StepSeries, Uint8Array>() : null;
  for (const ms of many.series) {
    ev.check();
    const sig = sigOf(ms.labels, m);
    const cands = oneBySig.get(sig);
    // fill_right: the "one" side is missing (Prometheus applies it after the group_right swap,
    // so with group_right it stands in for the left operand).
    if (m.fillRight !== undefined) {
      const hit = cands ? new Uint8Array(n) : null;
      if (hit) for (const c of cands!) for (let i = 0; i < n; i++) if (c.has[i] !== ABSENT) hit[i] = 1;
      fillSide(ev, e, ms, hit, m, n, outByKey, out, dropsName, true, m.fillRight);
    }
    if (!cands) continue;
    let seen = matchedAt.get(sig);
    if (!seen) matchedAt.set(sig, (seen = new Uint8Array(n)));
    for (const os of cands) {
      const lab = resultLabels(ms.labels, os.labels, m, dropsName && !ev.delayed);
      const key = keyOf(lab);
      let o = outByKey.get(key);
      let fresh = false;
      if (!o) {
        o = newSeries(lab, n, dropsName || ms.dropName);
        fresh = true;
      }
      let any = false;
      for (let i = 0; i < n; i++) {
        if (ms.has[i] === ABSENT || os.has[i] === ABSENT) continue;
        if (oneMatched) {
          let om = oneMatched.get(os);
          if (!om) oneMatched.set(os, (om = new Uint8Array(n)));
          om[i] = 1;
        }
        if (m.card === 'one-to-one') {
          if (seen[i]) throw new PromQLExecutionError('multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)');
          seen[i] = 1;
        }
        const mh = ms.has[i] === HIST ? ms.hists![i] : undefined;
        const oh = os.has[i] === HIST ? os.hists![i] : undefined;
        const r = oneToMany
          ? elemOp(ev, e, os.vals[i]!, oh, ms.vals[i]!, mh)
          : elemOp(ev, e, ms.vals[i]!, mh, os.vals[i]!, oh);
        let val: number;
        let h: FloatHistogram | undefined;
        if (e.returnBool) {
          // Histograms compare only for (in)equality with each other.
          if ((mh || oh) && !(mh && oh && (e.op === '==' || e.op === '!='))) continue;
          val = r.keep ? 1 : 0;
        } else {
          if (!r.keep) continue;
          if (isCmp) {
            if (r.h) h = oneToMany ? oh : mh;
            else val = oneToMany ? os.vals[i]! : ms.vals[i]!;
          } else if (r.h) h = r.h;
          val = r.h ? 0 : isCmp ? (oneToMany ? os.vals[i]! : ms.vals[i]!) : r.v;
        }
        if (o.has[i] !== ABSENT) {
          throw new PromQLExecutionError(
            m.card === 'one-to-one'
              ? 'multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)'
              : 'multiple matches for labels: grouping labels must ensure unique matches',
          );
        }
        if (h) setHist(o, i, h);
        else {
          o.vals[i] = val!;
          o.has[i] = FLOAT;
        }
        any = true;
      }
      if (fresh && any) {
        outByKey.set(key, o);
        out.push(o);
      }
    }
  }
  // fill_left: the "many" side is missing for a "one"-side series.
  if (m.fillLeft !== undefined) {
    for (const os of one.series) {
      const om = oneMatched!.get(os);
      fillSide(ev, e, os, om ?? null, m, n, outByKey, out, dropsName, false, m.fillLeft);
    }
  }
  const v: VectorValue = { kind: 'vector', series: out };
  return v;
}

/**
 * fill()/fill_left()/fill_right(): a missing side is replaced by a sample with the fill value
 * whose labels are only the match labels of the present series (as Prometheus synthesizes it).
 * `realIsMany` says which side `s` is on; values go to the operator in written order.
 */
function fillSide(
  ev: Evaluator,
  e: BinaryExpr,
  s: StepSeries,
  matched: Uint8Array | null,
  m: VectorMatching,
  n: number,
  outByKey: Map<string, StepSeries>,
  out: StepSeries[],
  dropsName: boolean,
  realIsMany: boolean,
  fill: number,
): void {
  const isCmp = CMP.has(e.op);
  const synth = matchLabels(s.labels, m);
  const lab = realIsMany
    ? resultLabels(s.labels, synth, m, dropsName && !ev.delayed)
    : resultLabels(synth, s.labels, m, dropsName && !ev.delayed);
  const key = keyOf(lab);
  let o = outByKey.get(key);
  const fresh = !o;
  if (!o) o = newSeries(lab, n, dropsName || (realIsMany && s.dropName));
  const swap = m.card === 'one-to-many';
  let any = false;
  for (let i = 0; i < n; i++) {
    if (s.has[i] !== FLOAT || (matched && matched[i])) continue;
    const manyV = realIsMany ? s.vals[i]! : fill;
    const oneV = realIsMany ? fill : s.vals[i]!;
    const a = swap ? oneV : manyV;
    const b = swap ? manyV : oneV;
    const r = elemOp(ev, e, a, undefined, b, undefined);
    if (o.has[i] !== ABSENT) continue;
    if (e.returnBool) {
      o.vals[i] = r.keep ? 1 : 0;
    } else {
      if (!r.keep) continue;
      o.vals[i] = isCmp ? a : r.v;
    }
    o.has[i] = FLOAT;
    any = true;
  }
  if (fresh && any) {
    outByKey.set(key, o);
    out.push(o);
  }
}

/** Prometheus' Labels.MatchLabels: the `on` labels, or all but the `ignoring` ones and the name. */
function matchLabels(l: Labels, m: VectorMatching): Labels {
  const out: Record<string, string> = {};
  if (m.on) {
    for (const k of m.labels) if (l[k] !== undefined) out[k] = l[k]!;
  } else {
    for (const k in l) if (k !== METRIC_NAME && !m.labels.includes(k)) out[k] = l[k]!;
  }
  return sortLabels(out);
}

function resultLabels(manyL: Labels, oneL: Labels, m: VectorMatching, dropName: boolean): Labels {
  let l: Record<string, string> = { ...(dropName ? dropMetricName(manyL) : manyL) };
  if (m.card === 'one-to-one') {
    if (m.on) {
      const kept: Record<string, string> = {};
      for (const k of m.labels) if (l[k] !== undefined) kept[k] = l[k]!;
      l = kept;
    } else {
      for (const k of m.labels) delete l[k];
    }
  }
  for (const k of m.include) {
    const v = oneL[k];
    if (v !== undefined && v !== '') l[k] = v;
    else delete l[k];
  }
  return sortLabels(l);
}
