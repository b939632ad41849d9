/**
 * A row flowing through the stages: the record it came from (labels, facets, message,
 * timestamp) plus made fields, which shadow same-named ones downstream.
 */
import type { LogRecord } from '../../kernel/models.js';
import type { FieldRef } from './ast.js';
import type { Value } from './values.js';

export const RECORD_COLUMNS: readonly string[] = Object.freeze(['_timestamp', '_message']);

const withColumn = new WeakMap<readonly string[], Map<string, readonly string[]>>();

/** `cols` plus `name` at the end (memoized: rows share their column lists). */
let lastIn: readonly string[] | null = null;
let lastName = '';
let lastOut: readonly string[] = [];

export function addColumn(cols: readonly string[], name: string): readonly string[] {
  // rows of one stage share their columns: a one-entry cache answers almost every call
  if (cols === lastIn && name === lastName) return lastOut;
  const out = addColumnSlow(cols, name);
  lastIn = cols;
  lastName = name;
  lastOut = out;
  return out;
}

function addColumnSlow(cols: readonly string[], name: string): readonly string[] {
  if (cols.includes(name)) return cols;
  let m = withColumn.get(cols);
  if (!m) withColumn.set(cols, (m = new Map()));
  let out = m.get(name);
  if (!out) m.set(name, (out = Object.freeze([...cols, name])));
  return out;
}

export class Row {
  /** Made fields by column name (`x` or `@x`); a null value hides the underlying field. */
  made: Map<string, Value> | null = null;
  /** After `fields a, b` only made fields (and `_timestamp`) remain visible. */
  closed = false;
  /** Columns this row shows, in order of first appearance. */
  cols: readonly string[];
  /** Arrival position within its scan batch (record paging). */
  ord = 0;

  constructor(
    /** null for rows an aggregation made. */
    readonly rec: LogRecord | null,
    /** Exact timestamp (0n for aggregated rows). */
    readonly ts: bigint,
    /** Ingestion sequence (tie-breaker for first/last). */
    readonly seq: number,
  ) {
    this.cols = rec ? RECORD_COLUMNS : [];
  }

  get(ref: FieldRef): Value {
    const m = this.made;
    if (m !== null) {
      const v = m.get(ref.column);
      if (v !== undefined) return v;
    }
    const rec = this.rec;
    if (rec === null) return null;
    if (ref.facet) {
      if (this.closed) return null;
      const f = rec.facets[ref.name];
      return f === undefined ? null : f;
    }
    if (ref.name === '_timestamp') return this.ts;
    if (this.closed) return null;
    if (ref.name === '_message') return rec.message;
    const l = rec.labels[ref.name];
    return l === undefined ? null : l;
  }

  set(name: string, v: Value): void {
    (this.made ??= new Map()).set(name, v);
    this.cols = addColumn(this.cols, name);
  }
}
