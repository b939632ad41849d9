/**
 * Stage operators: each takes batches of rows and hands batches on, so a query streams with
 * bounded memory. Only aggregation (groups), sort (rows, bounded when a limit follows) and
 * dedup (keys) hold state.
 */
import type { AggSpec, FieldRef, Stage } from './ast.js';
import { accumulatorFactory, type Accumulator, type AccumulatorFactory } from './aggregates.js';
import { limitExceeded, type Pos } from './errors.js';
import { compileCond } from './expr.js';
import { compileExtractor, type Extractor } from './extractors.js';
import { RECORD_COLUMNS, Row } from './row.js';
import { compareNullsLast, compareValues, stringForm, valueKey, type Value } from './values.js';

export const MAX_GROUPS = 10_000;

export interface Operator {
  /** Takes a batch, returns what passes on now. */
  push(rows: Row[]): Row[];
  /** End of input: returns what was held back. */
  finish(): Row[];
  /** True once the operator accepts no more rows (a reached limit). */
  readonly done: boolean;
}

abstract class Streaming implements Operator {
  done = false;
  abstract push(rows: Row[]): Row[];
  finish(): Row[] {
    return [];
  }
}

export class WhereOp extends Streaming {
  private readonly cond;
  constructor(s: Extract<Stage, { kind: 'where' }>) {
    super();
    this.cond = compileCond(s.expr);
  }
  push(rows: Row[]): Row[] {
    const out: Row[] = [];
    for (const r of rows) if (this.cond(r) === true) out.push(r);
    return out;
  }
}

const MESSAGE: FieldRef = { name: '_message', facet: false, column: '_message', pos: { line: 1, column: 1, offset: 0 } };

export class ExtractOp extends Streaming {
  private readonly extract: Extractor;
  private readonly src: FieldRef;
  private readonly nodrop: boolean;
  constructor(s: Extract<Stage, { kind: 'parse' | 'parseRegex' | 'json' | 'logfmt' }>) {
    super();
    this.extract = compileExtractor(s);
    this.src = s.src ?? MESSAGE;
    this.nodrop = s.nodrop;
  }
  push(rows: Row[]): Row[] {
    const out: Row[] = [];
    for (const r of rows) {
      const v = r.get(this.src);
      const fields = v === null ? null : this.extract(stringForm(v));
      if (fields === null) {
        if (this.nodrop) out.push(r);
        continue;
      }
      for (const [k, val] of fields) r.set(k, val);
      out.push(r);
    }
    return out;
  }
}

export class FieldsOp extends Streaming {
  constructor(private readonly s: Extract<Stage, { kind: 'fields' }>) {
    super();
  }
  push(rows: Row[]): Row[] {
    const { keys, drop } = this.s;
    for (const r of rows) {
      if (drop) {
        for (const k of keys) (r.made ??= new Map()).set(k.column, null);
        const gone = new Set(keys.map((k) => k.column));
        r.cols = r.cols.filter((c) => !gone.has(c));
      } else {
        const made = new Map<string, Value>();
        for (const k of keys) made.set(k.column, r.get(k));
        r.made = made;
        r.closed = true;
        r.cols = r.rec ? [RECORD_COLUMNS[0]!, ...keys.map((k) => k.column).filter((c) => c !== '_timestamp')] : keys.map((k) => k.column);
      }
    }
    return rows;
  }
}

const TS: FieldRef = { name: '_timestamp', facet: false, column: '_timestamp', pos: { line: 1, column: 1, offset: 0 } };

/** floor(ts / d) · d in ms, exact for nanosecond bigints. */
export function bucketStartMs(tsNs: bigint, durMs: number): number {
  const dNs = durMs * 1e6;
  const approx = Number(tsNs) / dNs;
  const f = Math.floor(approx);
  const frac = approx - f;
  // Number(ts) is off by at most a few hundred ns: only near a boundary do we need bigints.
  if (frac > 1e-6 && frac < 1 - 1e-6) return f * durMs;
  const d = BigInt(durMs) * 1_000_000n;
  const q = tsNs >= 0n ? tsNs / d : -((-tsNs + d - 1n) / d);
  return Number(q) * durMs;
}

export class TimesliceOp extends Streaming {
  constructor(private readonly s: Extract<Stage, { kind: 'timeslice' }>) {
    super();
  }
  push(rows: Row[]): Row[] {
    const { durMs, name } = this.s;
    for (const r of rows) {
      const ts = r.get(TS);
      r.set(name, typeof ts === 'bigint' ? bucketStartMs(ts, durMs) : null);
    }
    return rows;
  }
}

interface Group {
  by: Value[];
  accs: Accumulator[];
}

export class AggregateOp implements Operator {
  readonly done = false;
  private readonly factories: AccumulatorFactory[];
  private readonly groups = new Map<string, Group>();
  private readonly keyCache = new Map<string, string>();
  /** Reused per row; copied only when a group is new. */
  private readonly scratch: Value[] = [];

  constructor(
    private readonly aggs: readonly AggSpec[],
    private readonly by: readonly FieldRef[],
    private readonly pos: Pos,
  ) {
    this.factories = aggs.map(accumulatorFactory);
    if (by.length === 0) this.groups.set('', this.newGroup([]));
  }

  private newGroup(by: Value[]): Group {
    return { by, accs: this.factories.map((f) => f()) };
  }

  private key(v: Value): string {
    if (typeof v !== 'string') return valueKey(v);
    let k = this.keyCache.get(v);
    if (k === undefined) {
      k = valueKey(v);
      if (this.keyCache.size < 100_000) this.keyCache.set(v, k);
    }
    return k;
  }

  push(rows: Row[]): Row[] {
    const by = this.by;
    const nb = by.length;
    for (const r of rows) {
      let g: Group | undefined;
      if (nb === 0) g = this.groups.get('')!;
      else {
        let key = '';
        const vals = this.scratch;
        for (let i = 0; i < nb; i++) {
          const v = r.get(by[i]!);
          vals[i] = v;
          key += (i ? '\u0001' : '') + this.key(v);
        }
        g = this.groups.get(key);
        if (g === undefined) {
          if (this.groups.size >= MAX_GROUPS) throw limitExceeded(`more than ${MAX_GROUPS} groups`, this.pos);
          g = this.newGroup(vals.slice(0, nb));
          this.groups.set(key, g);
        }
      }
      for (const a of g.accs) a.add(r);
    }
    return [];
  }

  finish(): Row[] {
    const groups = [...this.groups.values()];
    // Aggregated rows come sorted by their `by` values, ascending, left to right, missing last.
    groups.sort((a, b) => {
      for (let i = 0; i < a.by.length; i++) {
        const c = compareNullsLast(a.by[i]!, b.by[i]!);
        if (c !== 0) return c;
      }
      return 0;
    });
    const cols = [...this.by.map((k) => k.column), ...this.aggs.map((a) => a.name)];
    return groups.map((g, i) => {
      const r = new Row(null, 0n, i);
      const made = new Map<string, Value>();
      this.by.forEach((k, j) => made.set(k.column, g.by[j]!));
      this.aggs.forEach((a, j) => made.set(a.name, g.accs[j]!.result()));
      r.made = made;
      r.closed = true;
      r.cols = cols;
      return r;
    });
  }

  /**
   * Adds `n` rows to the group of `by` values at once (the columnar fast path, where every
   * aggregate is a bare `count`).
   */
  addCount(vals: Value[], n: number): void {
    let key = '';
    for (let i = 0; i < vals.length; i++) key += (i ? '\u0001' : '') + this.key(vals[i]!);
    let g = this.groups.get(key);
    if (g === undefined) {
      if (this.groups.size >= MAX_GROUPS) throw limitExceeded(`more than ${MAX_GROUPS} groups`, this.pos);
      g = this.newGroup(vals);
      this.groups.set(key, g);
    }
    for (const a of g.accs) a.addN!(n);
  }
}

interface Keyed {
  row: Row;
  idx: number;
  keys: Value[];
}

export class SortOp implements Operator {
  readonly done = false;
  private buf: Keyed[] = [];
  private n = 0;
  private readonly cmp: (a: Keyed, b: Keyed) => number;

  /** `bound`: only the first `bound` rows are ever wanted (a limit follows). */
  constructor(
    private readonly keys: readonly { key: FieldRef; desc: boolean }[],
    private readonly bound: number | null,
  ) {
    this.cmp = (a, b) => {
      for (let i = 0; i < keys.length; i++) {
        const x = a.keys[i]!;
        const y = b.keys[i]!;
        // missing last, whatever the direction
        if (x === null || y === null) {
          if (x === y) continue;
          return x === null ? 1 : -1;
        }
        const c = compareValues(x, y);
        if (c !== 0) return keys[i]!.desc ? -c : c;
      }
      return a.idx - b.idx; // stable
    };
  }

  push(rows: Row[]): Row[] {
    for (const row of rows) this.buf.push({ row, idx: this.n++, keys: this.keys.map((k) => row.get(k.key)) });
    if (this.bound !== null && this.buf.length >= Math.max(2 * this.bound, 4096)) {
      this.buf.sort(this.cmp);
      this.buf.length = this.bound;
    }
    return [];
  }

  finish(): Row[] {
    this.buf.sort(this.cmp);
    if (this.bound !== null && this.buf.length > this.bound) this.buf.length = this.bound;
    const out = this.buf.map((k) => k.row);
    this.buf = [];
    return out;
  }
}

export class LimitOp extends Streaming {
  private left: number;
  constructor(n: number) {
    super();
    this.left = n;
  }
  push(rows: Row[]): Row[] {
    if (this.left <= 0) return [];
    const out = rows.length <= this.left ? rows : rows.slice(0, this.left);
    this.left -= out.length;
    if (this.left <= 0) this.done = true;
    return out;
  }
}

export class DedupOp extends Streaming {
  private readonly seen = new Set<string>();
  private readonly keys: readonly FieldRef[];
  constructor(keys: readonly FieldRef[]) {
    super();
    this.keys = keys.length ? keys : [MESSAGE];
  }
  push(rows: Row[]): Row[] {
    const out: Row[] = [];
    for (const r of rows) {
      let k = '';
      for (const f of this.keys) k += valueKey(r.get(f)) + '\u0001';
      if (this.seen.has(k)) continue;
      this.seen.add(k);
      out.push(r);
    }
    return out;
  }
}
