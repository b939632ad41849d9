/**
 * The PromQL abstract syntax tree. Nodes carry their source span (`pos`, 0-based character
 * offsets) so that evaluation annotations can point at the sub-expression that caused them,
 * like Prometheus' `(line:col)` suffixes.
 */
import type { LabelMatcher } from '../../../kernel/matchers.js';

export type ValueType = 'scalar' | 'vector' | 'matrix' | 'string';

export interface PosRange {
  start: number;
  end: number;
}

/** `@ <ts>` / `@ start()` / `@ end()`; a number is Unix ms. */
export type AtModifier = number | 'start' | 'end';

/** A duration expression (Prometheus 3 `promql-duration-expr`), evaluated to ms before running. */
export type DurationExpr =
  | { kind: 'num'; ms: number; isDuration: boolean }
  | { kind: 'binary'; op: '+' | '-' | '*' | '/' | '%' | '^'; lhs: DurationExpr; rhs: DurationExpr }
  | { kind: 'neg'; expr: DurationExpr }
  | { kind: 'step' }
  | { kind: 'range' }
  | { kind: 'min' | 'max'; args: [DurationExpr, DurationExpr] };

export interface NumberLiteral {
  type: 'NumberLiteral';
  value: number;
  /** Set when the literal was written as a duration (e.g. `5m` as a number = seconds). */
  pos: PosRange;
}

export interface StringLiteral {
  type: 'StringLiteral';
  value: string;
  pos: PosRange;
}

export interface VectorSelector {
  type: 'VectorSelector';
  name: string;
  matchers: LabelMatcher[];
  /** Offset in ms (positive = into the past). */
  offset: number;
  offsetExpr?: DurationExpr;
  at?: AtModifier;
  /** Extended range selector modifiers (`anchored`, `smoothed`). */
  anchored?: boolean;
  smoothed?: boolean;
  /**
   * Set by the evaluator (Prometheus' detectHistogramStatsDecoding): only histogram_count/sum/avg
   * read this selector's histograms, so the hints are derived on the fly as Prometheus'
   * HistogramStatsIterator does.
   */
  statsOnly?: boolean;
  pos: PosRange;
}

export interface MatrixSelector {
  type: 'MatrixSelector';
  vector: VectorSelector;
  /** Range in ms. */
  range: number;
  rangeExpr?: DurationExpr;
  pos: PosRange;
}

export interface SubqueryExpr {
  type: 'SubqueryExpr';
  expr: Expr;
  range: number;
  rangeExpr?: DurationExpr;
  /** 0 = use the engine's default (no step given). */
  step: number;
  stepExpr?: DurationExpr;
  offset: number;
  offsetExpr?: DurationExpr;
  at?: AtModifier;
  pos: PosRange;
}

export interface Call {
  type: 'Call';
  func: string;
  args: Expr[];
  pos: PosRange;
}

export type AggregateOp =
  | 'sum'
  | 'avg'
  | 'min'
  | 'max'
  | 'count'
  | 'group'
  | 'stddev'
  | 'stdvar'
  | 'topk'
  | 'bottomk'
  | 'quantile'
  | 'count_values'
  | 'limitk'
  | 'limit_ratio';

export interface AggregateExpr {
  type: 'AggregateExpr';
  op: AggregateOp;
  expr: Expr;
  param?: Expr;
  grouping: string[];
  without: boolean;
  /** True when `by`/`without` was written (even with an empty list). */
  hasGrouping: boolean;
  pos: PosRange;
}

export type BinaryOp =
  | '+'
  | '-'
  | '*'
  | '/'
  | '%'
  | '^'
  | 'atan2'
  | '=='
  | '!='
  | '>'
  | '<'
  | '>='
  | '<='
  /** Native histogram trim operators: keep observations below / above the cutoff. */
  | '</'
  | '>/'
  | 'and'
  | 'or'
  | 'unless';

export interface VectorMatching {
  card: 'one-to-one' | 'many-to-one' | 'one-to-many' | 'many-to-many';
  /** `on(...)` when true, `ignoring(...)` otherwise. */
  on: boolean;
  labels: string[];
  /** `group_left(...)` / `group_right(...)` extra labels. */
  include: string[];
  /** fill modifiers: value used when the left/right side has no match. */
  fillLeft?: number;
  fillRight?: number;
}

export interface BinaryExpr {
  type: 'BinaryExpr';
  op: BinaryOp;
  lhs: Expr;
  rhs: Expr;
  returnBool: boolean;
  matching?: VectorMatching;
  pos: PosRange;
}

export interface UnaryExpr {
  type: 'UnaryExpr';
  op: '-' | '+';
  expr: Expr;
  pos: PosRange;
}

export interface ParenExpr {
  type: 'ParenExpr';
  expr: Expr;
  pos: PosRange;
}

/** `step()`, `range()`, `start()`, `end()` used as expressions (experimental). */
export interface TimeRefExpr {
  type: 'TimeRef';
  which: 'step' | 'range' | 'start' | 'end';
  pos: PosRange;
}

export type Expr =
  | NumberLiteral
  | StringLiteral
  | VectorSelector
  | MatrixSelector
  | SubqueryExpr
  | Call
  | AggregateExpr
  | BinaryExpr
  | UnaryExpr
  | ParenExpr
  | TimeRefExpr;
