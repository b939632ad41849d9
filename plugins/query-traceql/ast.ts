/**
 * The TraceQL abstract syntax tree, as the parser produces it and the planner consumes it.
 * Shapes follow Grafana Tempo's pkg/traceql AST: a pipeline of stages whose first stage is a
 * spanset expression; field expressions inside `{ }` are evaluated per span.
 */

/** Offset in the query text, with 1-based line and column for error messages. */
export interface Position {
  offset: number;
  line: number;
  col: number;
}

export type SpanStatus = 'ok' | 'error' | 'unset';
export type SpanKindName = 'unspecified' | 'internal' | 'server' | 'client' | 'producer' | 'consumer';

/** A literal. Durations are nanoseconds; int/float/duration compare numerically with each other. */
export type Static =
  | { kind: 'static'; type: 'string'; value: string }
  | { kind: 'static'; type: 'int' | 'float' | 'duration'; value: number }
  | { kind: 'static'; type: 'bool'; value: boolean }
  | { kind: 'static'; type: 'nil' }
  | { kind: 'static'; type: 'status'; value: SpanStatus }
  | { kind: 'static'; type: 'kind'; value: SpanKindName };

/** Where an attribute is looked up. `unscoped` (`.x`) reads the span's attribute, else the resource's. */
export type AttributeScope = 'span' | 'resource' | 'unscoped' | 'event' | 'link' | 'instrumentation';

export interface AttributeRef {
  kind: 'attribute';
  scope: AttributeScope;
  name: string;
  pos: Position;
}

/** Canonical names of the intrinsics (aliases like `span:name` map onto these). */
export type IntrinsicName =
  | 'name'
  | 'status'
  | 'statusMessage'
  | 'kind'
  | 'duration'
  | 'spanID'
  | 'parentID'
  | 'rootName'
  | 'rootServiceName'
  | 'traceDuration'
  | 'traceID'
  | 'eventName'
  | 'eventTimeSinceStart'
  | 'linkTraceID'
  | 'linkSpanID'
  | 'instrumentationName'
  | 'instrumentationVersion';

export interface IntrinsicRef {
  kind: 'intrinsic';
  name: IntrinsicName;
  /** As written, for output keys (`span:name`, `rootServiceName`, ...). */
  text: string;
  pos: Position;
}

export type ComparisonOp = '=' | '!=' | '>' | '>=' | '<' | '<=' | '=~' | '!~';
export type ArithmeticOp = '+' | '-' | '*' | '/' | '%' | '^';
export type LogicalOp = '&&' | '||';

export interface BinaryFieldExpr {
  kind: 'binary';
  op: ComparisonOp | ArithmeticOp | LogicalOp;
  lhs: FieldExpr;
  rhs: FieldExpr;
  pos: Position;
}

export interface UnaryFieldExpr {
  kind: 'unary';
  op: '!' | '-';
  expr: FieldExpr;
  pos: Position;
}

/** An expression evaluated against one span. */
export type FieldExpr = (Static & { pos?: Position }) | AttributeRef | IntrinsicRef | BinaryFieldExpr | UnaryFieldExpr;

export interface SpansetFilter {
  kind: 'filter';
  /** `{ }` (match every span) when null. */
  expr: FieldExpr | null;
  pos: Position;
}

/**
 * Operators between spansets. Structural ones keep spans of the right-hand side:
 * `>` child, `>>` descendant, `<` parent, `<<` ancestor, `~` sibling; `!`-forms keep those that
 * are not. `&&` needs both sides non-empty; `||` either.
 */
export type SpansetOp = '&&' | '||' | '>' | '>>' | '<' | '<<' | '~' | '!>' | '!>>' | '!<' | '!<<' | '!~';

export interface SpansetBinary {
  kind: 'spansetOp';
  op: SpansetOp;
  lhs: SpansetExpr;
  rhs: SpansetExpr;
  pos: Position;
}

export type SpansetExpr = SpansetFilter | SpansetBinary | Pipeline;

export type AggregateFn = 'count' | 'avg' | 'min' | 'max' | 'sum';

export interface Aggregate {
  kind: 'aggregate';
  fn: AggregateFn;
  /** Absent for count(). */
  field?: FieldExpr;
  pos: Position;
}

export type ScalarExpr =
  | Aggregate
  | (Static & { pos?: Position })
  | { kind: 'scalarBinary'; op: ArithmeticOp; lhs: ScalarExpr; rhs: ScalarExpr; pos: Position };

/** `| count() > 2`, `| avg(duration) > 1s`: keeps spansets whose aggregate comparison holds. */
export interface ScalarFilter {
  kind: 'scalarFilter';
  op: ComparisonOp;
  lhs: ScalarExpr;
  rhs: ScalarExpr;
  pos: Position;
}

/** `| select(span.a, resource.b)`: adds these fields to the spans returned. */
export interface SelectOp {
  kind: 'select';
  fields: FieldExpr[];
  pos: Position;
}

/** `| by(resource.service.name)`: splits each spanset by the field's value. */
export interface ByOp {
  kind: 'by';
  field: FieldExpr;
  /** The expression as written, used as the spanset attribute key `by(<text>)`. */
  text: string;
  pos: Position;
}

/** `| coalesce()`: merges all spansets of a trace into one. */
export interface CoalesceOp {
  kind: 'coalesce';
  pos: Position;
}

export type PipelineStage = SpansetExpr | ScalarFilter | SelectOp | ByOp | CoalesceOp;

export interface Pipeline {
  kind: 'pipeline';
  stages: PipelineStage[];
  pos: Position;
}

/** The root of a parsed query. */
export interface TraceQLQuery {
  text: string;
  pipeline: Pipeline;
}
