/** The parsed form of a SvcQL query: a search expression and a list of stages. */
import type { MatchOp } from '../../kernel/matchers.js';
import type { Pos } from './errors.js';

/** A field reference: `name` (made field, `_message`, `_timestamp` or a label) or `@name` (facet). */
export interface FieldRef {
  readonly name: string;
  readonly facet: boolean;
  /** Column name as shown in results: `name` or `@name`. */
  readonly column: string;
  readonly pos: Pos;
}

export type SearchNode =
  | { readonly kind: 'all'; readonly pos: Pos }
  | { readonly kind: 'text'; readonly text: string; readonly pos: Pos }
  | { readonly kind: 'match'; readonly key: FieldRef; readonly op: MatchOp; readonly value: string; readonly pos: Pos }
  | { readonly kind: 'not'; readonly arg: SearchNode; readonly pos: Pos }
  | { readonly kind: 'and' | 'or'; readonly args: readonly SearchNode[]; readonly pos: Pos };

export type Literal = string | number | boolean | null;

export type CmpOp = '=' | '!=' | '<' | '<=' | '>' | '>=';
export type ArithOp = '+' | '-' | '*' | '/' | '%';

export type Expr =
  | { readonly kind: 'lit'; readonly value: Literal }
  | { readonly kind: 'field'; readonly ref: FieldRef }
  | { readonly kind: 'neg'; readonly arg: Expr }
  | { readonly kind: 'arith'; readonly op: ArithOp; readonly left: Expr; readonly right: Expr }
  | { readonly kind: 'cmp'; readonly op: CmpOp; readonly left: Expr; readonly right: Expr }
  | { readonly kind: 'in'; readonly negate: boolean; readonly arg: Expr; readonly list: readonly Literal[] }
  | { readonly kind: 'matches'; readonly arg: Expr; readonly regex: string }
  | { readonly kind: 'contains'; readonly arg: Expr; readonly needle: string }
  | { readonly kind: 'not'; readonly arg: Expr }
  | { readonly kind: 'and' | 'or'; readonly left: Expr; readonly right: Expr };

export type AggFn = 'count' | 'count_distinct' | 'sum' | 'avg' | 'min' | 'max' | 'pct' | 'first' | 'last';

export interface AggSpec {
  readonly fn: AggFn;
  /** null only for bare `count`. */
  readonly arg: FieldRef | null;
  /** Percentile as an exact fraction num/den (pct only), and its literal text. */
  readonly pct?: { readonly num: bigint; readonly den: bigint; readonly text: string };
  /** Output column: `as x` or `_` + function (`_pct99_9`). */
  readonly name: string;
  readonly pos: Pos;
}

export type Stage =
  | { readonly kind: 'where'; readonly expr: Expr; readonly pos: Pos; readonly keyword: string }
  | {
      readonly kind: 'parse';
      readonly src: FieldRef | null;
      readonly pattern: string;
      readonly names: readonly string[];
      readonly nodrop: boolean;
      readonly pos: Pos;
      readonly keyword: string;
    }
  | {
      readonly kind: 'parseRegex';
      readonly src: FieldRef | null;
      readonly regex: string;
      readonly nodrop: boolean;
      readonly pos: Pos;
      readonly keyword: string;
    }
  | {
      readonly kind: 'json';
      readonly src: FieldRef | null;
      readonly paths: readonly string[] | null;
      readonly names: readonly string[] | null;
      readonly nodrop: boolean;
      readonly pos: Pos;
      readonly keyword: string;
    }
  | { readonly kind: 'logfmt'; readonly src: FieldRef | null; readonly nodrop: boolean; readonly pos: Pos; readonly keyword: string }
  | { readonly kind: 'fields'; readonly drop: boolean; readonly keys: readonly FieldRef[]; readonly pos: Pos; readonly keyword: string }
  | {
      readonly kind: 'timeslice';
      readonly durMs: number;
      readonly durText: string;
      readonly durPos: Pos;
      readonly name: string;
      readonly pos: Pos;
      readonly keyword: string;
    }
  | { readonly kind: 'aggregate'; readonly aggs: readonly AggSpec[]; readonly by: readonly FieldRef[]; readonly pos: Pos; readonly keyword: string }
  | {
      readonly kind: 'sort';
      readonly keys: readonly { readonly key: FieldRef; readonly desc: boolean }[];
      readonly pos: Pos;
      readonly keyword: string;
    }
  | { readonly kind: 'limit'; readonly n: number; readonly pos: Pos; readonly keyword: string }
  | {
      readonly kind: 'top';
      readonly n: number;
      readonly by: readonly FieldRef[];
      readonly agg: AggSpec;
      readonly pos: Pos;
      readonly keyword: string;
    }
  | { readonly kind: 'dedup'; readonly keys: readonly FieldRef[]; readonly pos: Pos; readonly keyword: string };

export interface SvcQueryAst {
  readonly text: string;
  readonly search: SearchNode;
  readonly stages: readonly Stage[];
}
