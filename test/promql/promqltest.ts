/**
 * Runner for Prometheus' PromQL test-script format (promql/promqltest): `load`, `clear`,
 * `eval instant|range` with expected results and `expect ...` lines. Runs every case against a
 * fresh memory backend through the engine directly. Format described in
 * ../shared/conformance/promql/README.md.
 */
import { MemoryMetricStore } from '../../backends/memory/index.js';
import type { FloatHistogram, Labels, MetricSeriesInput, Sample } from '../../kernel/models.js';
import { STALE_NAN, normalizeLabels } from '../../kernel/models.js';
import { compileRegex } from '../../kernel/matchers.js';
import { PromQLEngine, type PromResult } from '../../plugins/query-promql/index.js';
import { parseDurationMs } from '../../plugins/query-promql/parser/lexer.js';
import { keyOf, labelsString } from '../../plugins/query-promql/engine/labels.js';
import { expand, histAddSub, histScale } from '../../plugins/query-promql/engine/histogram.js';
import { withTsdbHints } from './tsdb-hints.js';

export interface CaseResult {
  file: string;
  line: number;
  query: string;
  ok: boolean;
  error?: string;
}

type Val = { skip: true } | { skip?: false; v: number; h?: FloatHistogram };

interface Expectation {
  fail?: { msg?: string; regex?: string };
  warn: { any: boolean; msgs: string[]; regexes: string[]; none: boolean; present: boolean };
  info: { any: boolean; msgs: string[]; regexes: string[]; none: boolean; present: boolean };
  ordered: boolean;
  str?: string;
  scalar?: number;
  series: { labels: Labels; vals: Val[] }[];
  rangeVector?: { from: number; to: number; step: number };
}

export function parseTime(s: string): number {
  const d = parseDurationMs(s);
  if (d !== null) return d;
  const n = Number(s);
  if (Number.isFinite(n)) return Math.round(n * 1000);
  const neg = s.startsWith('-') ? parseDurationMs(s.slice(1)) : null;
  if (neg !== null) return -neg;
  throw new Error(`bad time ${s}`);
}

function parseNumber(s: string): number {
  const l = s.toLowerCase();
  if (l === 'inf' || l === '+inf') return Infinity;
  if (l === '-inf') return -Infinity;
  if (l === 'nan' || l === '+nan' || l === '-nan') return NaN;
  if (/^[-+]?0x[0-9a-f]+$/i.test(s)) return (s.startsWith('-') ? -1 : 1) * parseInt(s.replace(/^[-+]?0x/i, ''), 16);
  const n = Number(s);
  if (s.trim() === '' || Number.isNaN(n)) throw new Error(`bad number ${s}`);
  return n;
}

/** Parses `name{a="b", "c.d"="e"}` at the start of `s`; returns the labels and the rest. */
export function parseSeriesDesc(s: string): { labels: Labels; rest: string } {
  let i = 0;
  const out: Record<string, string> = {};
  const m = /^[a-zA-Z_:][a-zA-Z0-9_:.]*/.exec(s);
  if (m) {
    out.__name__ = m[0];
    i = m[0].length;
  }
  if (s[i] === '{') {
    i++;
    for (;;) {
      while (s[i] === ' ' || s[i] === ',') i++;
      if (s[i] === '}') {
        i++;
        break;
      }
      let name: string;
      if (s[i] === '"') {
        const r = readQuoted(s, i);
        name = r.value;
        i = r.next;
      } else {
        const nm = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(s.slice(i));
        if (!nm) throw new Error(`bad series ${s}`);
        name = nm[0];
        i += name.length;
      }
      while (s[i] === ' ') i++;
      if (s[i] !== '=') {
        // A quoted metric name alone.
        out.__name__ = name;
        continue;
      }
      i++;
      while (s[i] === ' ') i++;
      const r = readQuoted(s, i);
      out[name] = r.value;
      i = r.next;
    }
  }
  return { labels: normalizeLabels(out), rest: s.slice(i).trim() };
}

function readQuoted(s: string, i: number): { value: string; next: number } {
  const q = s[i]!;
  let j = i + 1;
  let raw = '';
  while (j < s.length && s[j] !== q) {
    if (s[j] === '\\') {
      raw += s[j]! + s[j + 1]!;
      j += 2;
    } else raw += s[j++];
  }
  let value: string;
  if (q === '`') value = raw;
  else {
    try {
      value = JSON.parse('"' + raw.replace(/\\x([0-9a-fA-F]{2})/g, '\\u00$1').replace(/(?<!\\)'/g, "'") + '"');
    } catch {
      value = raw;
    }
  }
  return { value, next: j + 1 };
}

function splitValues(s: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < s.length) {
    while (s[i] === ' ' || s[i] === '\t') i++;
    if (i >= s.length) break;
    let j = i;
    let depth = 0;
    while (j < s.length) {
      if (s.startsWith('{{', j)) {
        depth++;
        j += 2;
        continue;
      }
      if (s.startsWith('}}', j)) {
        depth--;
        j += 2;
        continue;
      }
      if (depth === 0 && (s[j] === ' ' || s[j] === '\t')) break;
      j++;
    }
    out.push(s.slice(i, j));
    i = j;
  }
  return out;
}

function parseHistogram(body: string): FloatHistogram {
  const h: FloatHistogram = {
    counterResetHint: 'unknown',
    schema: 0,
    zeroThreshold: 0,
    zeroCount: 0,
    count: 0,
    sum: 0,
    positiveSpans: [],
    positiveBuckets: [],
    negativeSpans: [],
    negativeBuckets: [],
  };
  let offset = 0;
  let nOffset = 0;
  let buckets: number[] = [];
  let nBuckets: number[] = [];
  const re = /([a-z_]+):(\[[^\]]*\]|\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(body))) {
    const k = m[1]!;
    const v = m[2]!;
    const list = () => v.slice(1, -1).trim().split(/\s+/).filter(Boolean).map(parseNumber);
    switch (k) {
      case 'schema':
        h.schema = parseNumber(v);
        break;
      case 'sum':
        h.sum = parseNumber(v);
        break;
      case 'count':
        h.count = parseNumber(v);
        break;
      case 'z_bucket':
        h.zeroCount = parseNumber(v);
        break;
      case 'z_bucket_w':
        h.zeroThreshold = parseNumber(v);
        break;
      case 'buckets':
        buckets = list();
        break;
      case 'n_buckets':
        nBuckets = list();
        break;
      case 'offset':
        offset = parseNumber(v);
        break;
      case 'n_offset':
        nOffset = parseNumber(v);
        break;
      case 'counter_reset_hint':
        h.counterResetHint = v as FloatHistogram['counterResetHint'];
        break;
      case 'custom_values':
        h.customValues = list();
        break;
    }
  }
  if (buckets.length) {
    h.positiveSpans = [{ offset, length: buckets.length }];
    h.positiveBuckets = buckets;
  }
  if (nBuckets.length) {
    h.negativeSpans = [{ offset: nOffset, length: nBuckets.length }];
    h.negativeBuckets = nBuckets;
  }
  return h;
}

function addHist(a: FloatHistogram, b: FloatHistogram, k: number): FloatHistogram {
  if (a.schema !== b.schema) {
    // Different resolutions: the sum is at the lower one (as Prometheus' FloatHistogram.Add).
    const r = histAddSub(a, histScale(b, k), 1);
    if (r.h) return { ...r.h, counterResetHint: a.counterResetHint };
  }
  const pa = expand(a.positiveSpans, a.positiveBuckets);
  const pb = expand(b.positiveSpans, b.positiveBuckets);
  const na = expand(a.negativeSpans, a.negativeBuckets);
  const nb = expand(b.negativeSpans, b.negativeBuckets);
  const comb = (x: Map<number, number>, y: Map<number, number>) => {
    const keys = [...new Set([...x.keys(), ...y.keys()])].sort((p, q) => p - q);
    if (!keys.length) return { spans: [], buckets: [] as number[] };
    const lo = keys[0]!;
    const hi = keys[keys.length - 1]!;
    const buckets: number[] = [];
    for (let i = lo; i <= hi; i++) buckets.push((x.get(i) ?? 0) + k * (y.get(i) ?? 0));
    return { spans: [{ offset: lo, length: hi - lo + 1 }], buckets };
  };
  const p = comb(pa, pb);
  const n = comb(na, nb);
  return {
    ...a,
    count: a.count + k * b.count,
    sum: a.sum + k * b.sum,
    zeroCount: a.zeroCount + k * b.zeroCount,
    positiveSpans: p.spans,
    positiveBuckets: p.buckets,
    negativeSpans: n.spans,
    negativeBuckets: n.buckets,
  };
}

/** Start-timestamp offsets: `_`, `_xN`, `<dur>`, `<dur>xN`, `<dur>±<dur>xN` (null = no ST). */
function parseStOffsets(s: string): (number | null)[] {
  const out: (number | null)[] = [];
  const dur = (x: string): number => {
    const neg = x.startsWith('-');
    const body = x.replace(/^[-+]/, '');
    const ms = body === '0' ? 0 : parseDurationMs(body);
    if (ms === null) throw new Error(`bad start timestamp offset ${x}`);
    return neg ? -ms : ms;
  };
  for (const tok of s.split(/\s+/).filter(Boolean)) {
    if (tok === '_') {
      out.push(null);
      continue;
    }
    let m = /^_x(\d+)$/.exec(tok);
    if (m) {
      for (let i = 0; i < Number(m[1]); i++) out.push(null);
      continue;
    }
    m = /^([-+]?[0-9a-z]+?)(?:([-+])([0-9a-z]+?))?(?:x(\d+))?$/.exec(tok);
    if (!m) throw new Error(`bad start timestamp offset ${tok}`);
    const a = dur(m[1]!);
    const b = m[2] ? dur(m[3]!) * (m[2] === '-' ? -1 : 1) : 0;
    const reps = m[4] === undefined ? 1 : Number(m[4]) + 1;
    for (let i = 0; i < reps; i++) out.push(a + i * b);
  }
  return out;
}

/** Expands a value list (`1+2x3 _ stale {{...}}x2`). */
export function parseValues(s: string): Val[] {
  const out: Val[] = [];
  for (const tok of splitValues(s)) {
    if (tok === '_') {
      out.push({ skip: true });
      continue;
    }
    let m = /^_x(\d+)$/.exec(tok);
    if (m) {
      for (let i = 0; i < Number(m[1]); i++) out.push({ skip: true });
      continue;
    }
    if (tok === 'stale') {
      out.push({ v: STALE_NAN });
      continue;
    }
    if (tok.startsWith('{{')) {
      m = /^\{\{(.*?)\}\}(?:([+-])\{\{(.*?)\}\})?(?:x(\d+))?$/.exec(tok);
      if (!m) throw new Error(`bad histogram ${tok}`);
      const a = parseHistogram(m[1]!);
      if (m[2]) {
        const b = parseHistogram(m[3]!);
        const k = m[2] === '+' ? 1 : -1;
        let cur = a;
        for (let i = 0; i <= Number(m[4] ?? 0); i++) {
          out.push({ v: 0, h: cur });
          cur = addHist(cur, b, k);
        }
      } else {
        const times = m[4] === undefined ? 1 : Number(m[4]) + 1;
        for (let i = 0; i < times; i++) out.push({ v: 0, h: a });
      }
      continue;
    }
    const num = '(?:[-+]?(?:\\d+\\.?\\d*(?:[eE][-+]?\\d+)?|\\.\\d+|[Ii]nf|NaN|nan))';
    m = new RegExp(`^(${num})(?:([-+])(${num.replace('[-+]?', '')}))?x(\\d+)$`).exec(tok);
    if (m) {
      const a = parseNumber(m[1]!);
      const b = m[2] ? parseNumber(m[3]!) * (m[2] === '-' ? -1 : 1) : 0;
      for (let i = 0; i <= Number(m[4]); i++) out.push({ v: a + i * b });
      continue;
    }
    out.push({ v: parseNumber(tok) });
  }
  return out;
}

// ---- comparison -------------------------------------------------------------------------------

export function floatEq(exp: number, got: number): boolean {
  if (exp !== exp) return got !== got;
  if (exp === got) return true;
  if (exp === 0 || got === 0 || !Number.isFinite(exp) || !Number.isFinite(got)) return false;
  return Math.abs(exp - got) / Math.max(Math.abs(exp), Math.abs(got)) <= 1e-6;
}

function histEq(exp: FloatHistogram, got: FloatHistogram): boolean {
  if (exp.schema !== got.schema) return false;
  if ((exp.zeroThreshold ?? 0) !== (got.zeroThreshold ?? 0)) return false;
  if (!floatEq(exp.count, got.count) || !floatEq(exp.sum, got.sum) || !floatEq(exp.zeroCount, got.zeroCount)) return false;
  if (exp.schema === -53) {
    const a = exp.customValues ?? [];
    const b = got.customValues ?? [];
    if (a.length !== b.length || a.some((x, i) => x !== b[i])) return false;
  }
  if (exp.counterResetHint !== 'unknown' && exp.counterResetHint !== got.counterResetHint) return false;
  const cmp = (x: Map<number, number>, y: Map<number, number>) => {
    for (const [k, v] of x) if (!floatEq(v, y.get(k) ?? 0)) return false;
    for (const [k, v] of y) if (!floatEq(x.get(k) ?? 0, v)) return false;
    return true;
  };
  return (
    cmp(expand(exp.positiveSpans, exp.positiveBuckets), expand(got.positiveSpans, got.positiveBuckets)) &&
    cmp(expand(exp.negativeSpans, exp.negativeBuckets), expand(got.negativeSpans, got.negativeBuckets))
  );
}

function valEq(exp: Val, got: { v: number; h?: FloatHistogram }): boolean {
  if (exp.skip) return false;
  if (exp.h || got.h) return !!exp.h && !!got.h && histEq(exp.h, got.h);
  return floatEq(exp.v, got.v);
}

function fmtVal(v: { v: number; h?: FloatHistogram }): string {
  return v.h ? JSON.stringify(v.h) : String(v.v);
}

// ---- the runner ---------------------------------------------------------------------------------

export interface RunOptions {
  engine?: PromQLEngine;
}

export async function runTestFile(file: string, text: string, opts: RunOptions = {}): Promise<CaseResult[]> {
  const engine =
    opts.engine ?? new PromQLEngine({ lookbackDeltaMs: 300_000, noStepSubqueryIntervalMs: 60_000, delayedNameRemoval: true });
  const lines = text.split('\n');
  let store = new MemoryMetricStore();
  const results: CaseResult[] = [];
  let i = 0;
  const blockEnd = (from: number) => {
    let j = from;
    while (j < lines.length) {
      const t = lines[j]!.trim();
      if (t === '' || t.startsWith('#')) break;
      j++;
    }
    return j;
  };
  while (i < lines.length) {
    const raw = lines[i]!.trim();
    if (raw === '' || raw.startsWith('#')) {
      i++;
      continue;
    }
    const cmd = raw.split(/\s+/)[0]!.toLowerCase();
    if (cmd === 'clear') {
      store = new MemoryMetricStore();
      i++;
      continue;
    }
    if (cmd === 'load' || cmd === 'load_with_nhcb') {
      const interval = parseTime(raw.split(/\s+/)[1]!);
      const end = blockEnd(i + 1);
      const input: MetricSeriesInput[] = [];
      let sts: (number | null)[] | null = null;
      for (let j = i + 1; j < end; j++) {
        const line = lines[j]!.trim();
        // `metric{...}@st <offsets>`: start timestamps (ST - T) for the series on the next line.
        const stm = /^(\S*?\}?)@st\s+(.*)$/.exec(line);
        if (stm) {
          sts = parseStOffsets(stm[2]!);
          continue;
        }
        const { labels, rest } = parseSeriesDesc(line);
        const vals = parseValues(rest);
        const samples: Sample[] = [];
        vals.forEach((v, k) => {
          if (v.skip) return;
          const smp: Sample = v.h ? { t: k * interval, v: 0, h: v.h } : { t: k * interval, v: v.v };
          const off = sts?.[k];
          if (off !== undefined && off !== null) smp.st = k * interval + off;
          samples.push(smp);
        });
        sts = null;
        input.push({ labels, samples });
      }
      if (cmd === 'load_with_nhcb') input.push(...nhcbFrom(input));
      for (const s of input) s.samples = withTsdbHints(s.samples);
      await store.append(input);
      i = end;
      continue;
    }
    if (cmd.startsWith('eval')) {
      const end = blockEnd(i + 1);
      const lineNo = i + 1;
      let query = '';
      try {
        const r = await runEval(engine, store, raw, lines.slice(i + 1, end));
        query = r.query;
        results.push({ file, line: lineNo, query, ok: r.error === undefined, error: r.error });
      } catch (e) {
        results.push({ file, line: lineNo, query: raw, ok: false, error: `runner: ${(e as Error).message}` });
      }
      i = end;
      continue;
    }
    // Unknown command: skip its block.
    i = blockEnd(i + 1);
  }
  return results;
}

function nhcbFrom(input: MetricSeriesInput[]): MetricSeriesInput[] {
  type G = { base: Labels; name: string; buckets: Map<number, Map<number, number>>; count: Map<number, number>; sum: Map<number, number> };
  const groups = new Map<string, G>();
  const get = (name: string, l: Labels) => {
    const base: Record<string, string> = {};
    for (const k in l) if (k !== 'le' && k !== '__name__') base[k] = l[k]!;
    const key = name + '\xff' + keyOf(base);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { base: normalizeLabels({ ...base, __name__: name }), name, buckets: new Map(), count: new Map(), sum: new Map() }));
    return g;
  };
  for (const s of input) {
    const n = s.labels.__name__ ?? '';
    if (n.endsWith('_bucket') && s.labels.le !== undefined) {
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      if (Number.isNaN(le)) continue;
      const g = get(n.slice(0, -7), s.labels);
      for (const smp of s.samples) {
        let m = g.buckets.get(smp.t);
        if (!m) g.buckets.set(smp.t, (m = new Map()));
        m.set(le, smp.v);
      }
    } else if (n.endsWith('_count')) {
      const g = get(n.slice(0, -6), s.labels);
      for (const smp of s.samples) g.count.set(smp.t, smp.v);
    } else if (n.endsWith('_sum')) {
      const g = get(n.slice(0, -4), s.labels);
      for (const smp of s.samples) g.sum.set(smp.t, smp.v);
    }
  }
  const out: MetricSeriesInput[] = [];
  for (const g of groups.values()) {
    if (g.buckets.size === 0) continue;
    const samples: Sample[] = [];
    for (const t of [...g.buckets.keys()].sort((a, b) => a - b)) {
      const m = g.buckets.get(t)!;
      const les = [...m.keys()].sort((a, b) => a - b);
      const custom = les.filter((x) => x !== Infinity);
      const buckets: number[] = [];
      let prev = 0;
      for (const le of les) {
        const c = m.get(le)!;
        buckets.push(c - prev);
        prev = c;
      }
      const count = g.count.get(t) ?? prev;
      samples.push({
        t,
        v: 0,
        h: {
          counterResetHint: 'unknown',
          schema: -53,
          zeroThreshold: 0,
          zeroCount: 0,
          count,
          sum: g.sum.get(t) ?? 0,
          positiveSpans: buckets.length ? [{ offset: 0, length: buckets.length }] : [],
          positiveBuckets: buckets,
          negativeSpans: [],
          negativeBuckets: [],
          customValues: custom,
        },
      });
    }
    out.push({ labels: g.base, samples });
  }
  return out;
}

function parseExpectations(block: string[]): Expectation {
  const mk = () => ({ any: false, msgs: [] as string[], regexes: [] as string[], none: false, present: false });
  const ex: Expectation = { warn: mk(), info: mk(), ordered: false, series: [] };
  for (const rawLine of block) {
    const l = rawLine.trim();
    let m: RegExpExecArray | null;
    if ((m = /^expect\s+fail(?:\s+(msg|regex):\s?(.*))?$/.exec(l))) {
      ex.fail = m[1] === 'msg' ? { msg: m[2]!.trim() } : m[1] === 'regex' ? { regex: m[2]!.trim() } : {};
      continue;
    }
    if ((m = /^expect\s+(warn|info)(?:\s+(msg|regex):\s?(.*))?$/.exec(l))) {
      const k = ex[m[1] as 'warn' | 'info'];
      k.present = true;
      if (m[2] === 'msg') k.msgs.push(m[3]!.trim());
      else if (m[2] === 'regex') k.regexes.push(m[3]!.trim());
      else k.any = true;
      continue;
    }
    if ((m = /^expect\s+no_(warn|info)$/.exec(l))) {
      ex[m[1] as 'warn' | 'info'].none = true;
      continue;
    }
    if (/^expect\s+ordered$/.test(l)) {
      ex.ordered = true;
      continue;
    }
    if ((m = /^expect\s+string\s+(["`])(.*)\1$/.exec(l))) {
      ex.str = m[1] === '`' ? m[2]! : JSON.parse('"' + m[2]! + '"');
      continue;
    }
    if ((m = /^expect\s+range\s+vector\s+from\s+(\S+)\s+to\s+(\S+)\s+step\s+(\S+)$/.exec(l))) {
      ex.rangeVector = { from: parseTime(m[1]!), to: parseTime(m[2]!), step: parseTime(m[3]!) };
      continue;
    }
    if (/^[-+]?(\d|\.\d|0x|inf|nan)/i.test(l) && !/\s/.test(l)) {
      ex.scalar = parseNumber(l);
      continue;
    }
    const { labels, rest } = parseSeriesDesc(l);
    ex.series.push({ labels, vals: parseValues(rest) });
  }
  return ex;
}

interface EvalOutcome {
  query: string;
  error?: string;
}

async function runEval(engine: PromQLEngine, store: MemoryMetricStore, head: string, block: string[]): Promise<EvalOutcome> {
  let m = /^(eval(?:_fail|_warn|_info|_ordered)?)\s+instant\s+at\s+(\S+)\s+(.*)$/.exec(head);
  let range: { start: number; end: number; step: number } | null = null;
  let at = 0;
  let query: string;
  let kind: string;
  if (m) {
    kind = m[1]!;
    at = parseTime(m[2]!);
    query = m[3]!;
  } else {
    m = /^(eval(?:_fail|_warn|_info|_ordered)?)\s+range\s+from\s+(\S+)\s+to\s+(\S+)\s+step\s+(\S+)\s+(.*)$/.exec(head);
    if (!m) return { query: head, error: 'runner: cannot parse eval line' };
    kind = m[1]!;
    range = { start: parseTime(m[2]!), end: parseTime(m[3]!), step: parseTime(m[4]!) };
    query = m[5]!;
  }
  const ex = parseExpectations(block);
  if (kind === 'eval_fail' && !ex.fail) ex.fail = {};
  if (kind === 'eval_ordered') ex.ordered = true;
  if (kind === 'eval_warn') ex.warn.any = ex.warn.present = true;
  if (kind === 'eval_info') ex.info.any = ex.info.present = true;
  let out;
  try {
    const ctx = { metrics: store };
    if (ex.rangeVector) at = ex.rangeVector.to;
    out = range ? await engine.rangeQuery(query, range.start, range.end, range.step, ctx) : await engine.instantQuery(query, at, ctx);
  } catch (e) {
    const msg = (e as Error).message;
    if (!ex.fail) return { query, error: `unexpected error: ${msg}` };
    if (ex.fail.msg !== undefined && msg !== ex.fail.msg) return { query, error: `expected error "${ex.fail.msg}", got "${msg}"` };
    if (ex.fail.regex !== undefined && !compileRegex(ex.fail.regex).matcher(msg).find()) {
      return { query, error: `expected error matching ${ex.fail.regex}, got "${msg}"` };
    }
    return { query };
  }
  if (ex.fail) return { query, error: 'expected an error, query succeeded' };
  // Annotations.
  for (const [kindName, list, spec] of [
    ['warn', out.warnings, ex.warn],
    ['info', out.infos, ex.info],
  ] as const) {
    if (spec.none && list.length > 0) return { query, error: `unexpected ${kindName}: ${list.join('; ')}` };
    if (!spec.present) continue;
    const matches = (a: string) =>
      spec.any || spec.msgs.includes(a) || spec.regexes.some((r) => compileRegex(r).matcher(a).find());
    for (const msg of spec.msgs) if (!list.includes(msg)) return { query, error: `missing ${kindName} "${msg}" (got ${JSON.stringify(list)})` };
    for (const r of spec.regexes) if (!list.some((a) => compileRegex(r).matcher(a).find())) return { query, error: `missing ${kindName} matching ${r}` };
    if (spec.any && list.length === 0) return { query, error: `expected a ${kindName} annotation, got none` };
    for (const a of list) if (!matches(a)) return { query, error: `unexpected ${kindName}: ${a}` };
  }
  const err = range ? compareRange(ex, out.result, range) : compareInstant(ex, out.result, at);
  return { query, error: err ?? undefined };
}

function compareInstant(ex: Expectation, r: PromResult, at: number): string | null {
  if (ex.str !== undefined) {
    if (r.type !== 'string') return `expected string, got ${r.type}`;
    return r.v === ex.str ? null : `expected string "${ex.str}", got "${r.v}"`;
  }
  if (ex.scalar !== undefined) {
    if (r.type !== 'scalar') return `expected scalar, got ${r.type}`;
    return floatEq(ex.scalar, r.v) ? null : `expected scalar ${ex.scalar}, got ${r.v}`;
  }
  if (ex.rangeVector) {
    if (r.type !== 'matrix') return `expected range vector, got ${r.type}`;
    return compareMatrix(ex, r.series, ex.rangeVector.from, ex.rangeVector.step);
  }
  if (r.type === 'scalar') {
    if (ex.series.length === 0) return `expected empty vector, got scalar ${r.v}`;
    return `expected vector, got scalar ${r.v}`;
  }
  if (r.type === 'matrix') {
    return compareMatrix(ex, r.series, at, 0);
  }
  if (r.type !== 'vector') return `unexpected result type ${r.type}`;
  if (r.samples.length !== ex.series.length) {
    return `expected ${ex.series.length} samples, got ${r.samples.length}: ${r.samples.map((s) => labelsString(s.metric) + ' ' + fmtVal(s)).join(', ')}`;
  }
  const byKey = new Map<string, number>();
  r.samples.forEach((s, i) => byKey.set(keyOf(s.metric), i));
  for (let k = 0; k < ex.series.length; k++) {
    const e = ex.series[k]!;
    const idx = byKey.get(keyOf(e.labels));
    if (idx === undefined) return `missing series ${labelsString(e.labels)}; got ${r.samples.map((s) => labelsString(s.metric)).join(', ')}`;
    if (ex.ordered && idx !== k) return `series ${labelsString(e.labels)} at position ${idx}, expected ${k}`;
    const got = r.samples[idx]!;
    if (e.vals.length !== 1 || !valEq(e.vals[0]!, got)) {
      return `series ${labelsString(e.labels)}: expected ${e.vals.map((v) => (v.skip ? '_' : fmtVal(v))).join(' ')}, got ${fmtVal(got)}`;
    }
  }
  return null;
}

function compareMatrix(ex: Expectation, series: { metric: Labels; points: { t: number; v: number; h?: FloatHistogram }[] }[], start: number, step: number): string | null {
  const byKey = new Map<string, (typeof series)[number]>();
  for (const s of series) byKey.set(keyOf(s.metric), s);
  if (series.length !== ex.series.length) {
    return `expected ${ex.series.length} series, got ${series.length}: ${series.map((s) => labelsString(s.metric)).join(', ')}`;
  }
  for (const e of ex.series) {
    const got = byKey.get(keyOf(e.labels));
    if (!got) return `missing series ${labelsString(e.labels)}; got ${series.map((s) => labelsString(s.metric)).join(', ')}`;
    const expPts: { t: number; v: Val }[] = [];
    e.vals.forEach((v, i) => {
      if (!v.skip) expPts.push({ t: start + i * step, v });
    });
    if (expPts.length !== got.points.length) {
      return `series ${labelsString(e.labels)}: expected ${expPts.length} points, got ${got.points.length}: ${got.points.map((p) => `${p.t}:${fmtVal(p)}`).join(' ')}`;
    }
    for (let i = 0; i < expPts.length; i++) {
      const ep = expPts[i]!;
      const gp = got.points[i]!;
      if (step !== 0 && ep.t !== gp.t) return `series ${labelsString(e.labels)}: expected point at ${ep.t}, got ${gp.t}`;
      if (!valEq(ep.v, gp)) return `series ${labelsString(e.labels)} at ${gp.t}: expected ${ep.v.skip ? '_' : fmtVal(ep.v)}, got ${fmtVal(gp)}`;
    }
  }
  return null;
}

function compareRange(ex: Expectation, r: PromResult, range: { start: number; end: number; step: number }): string | null {
  if (r.type !== 'matrix') return `expected matrix, got ${r.type}`;
  if (ex.scalar !== undefined) return `scalar expectation for range query`;
  return compareMatrix(ex, r.series, range.start, range.step);
}
