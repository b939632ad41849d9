/**
 * `where` expressions compiled to closures. SQL three-valued logic: comparisons, `in`,
 * `matches`, `contains` and arithmetic with a null operand give null; `x = null` / `x != null`
 * test presence; `where` keeps rows whose condition is true.
 */
import { compileAnchoredRegex } from '../../kernel/matchers.js';
import type { Expr } from './ast.js';
import type { Row } from './row.js';
import { compareValues, stringForm, toNumber, type Value } from './values.js';

export type Tri = boolean | null;
type ValueFn = (r: Row) => Value;
type CondFn = (r: Row) => Tri;

const isCondition = (e: Expr) =>
  e.kind === 'cmp' || e.kind === 'in' || e.kind === 'matches' || e.kind === 'contains' || e.kind === 'not' || e.kind === 'and' || e.kind === 'or';

export function compileValue(e: Expr): ValueFn {
  if (isCondition(e)) return compileCond(e);
  switch (e.kind) {
    case 'lit': {
      const v = e.value;
      return () => v;
    }
    case 'field': {
      const ref = e.ref;
      return (r) => r.get(ref);
    }
    case 'neg': {
      const a = compileValue(e.arg);
      return (r) => {
        const n = toNumber(a(r));
        return n === undefined ? null : -n;
      };
    }
    case 'arith': {
      const l = compileValue(e.left);
      const rt = compileValue(e.right);
      const op = e.op;
      return (r) => {
        const x = toNumber(l(r));
        if (x === undefined) return null;
        const y = toNumber(rt(r));
        if (y === undefined) return null;
        let z: number;
        switch (op) {
          case '+':
            z = x + y;
            break;
          case '-':
            z = x - y;
            break;
          case '*':
            z = x * y;
            break;
          case '/':
            if (y === 0) return null;
            z = x / y;
            break;
          case '%':
            if (y === 0) return null;
            z = x % y;
            break;
        }
        return Number.isFinite(z) ? z : null;
      };
    }
    default:
      throw new Error(`unreachable expression kind ${e.kind}`);
  }
}

const isNullLit = (e: Expr) => e.kind === 'lit' && e.value === null;

/** A condition; a bare operand means `operand = true`. */
export function compileCond(e: Expr): CondFn {
  switch (e.kind) {
    case 'cmp': {
      const op = e.op;
      if ((op === '=' || op === '!=') && (isNullLit(e.left) || isNullLit(e.right))) {
        // `x = null` / `x != null`: presence tests, never null themselves.
        const other = compileValue(isNullLit(e.left) ? e.right : e.left);
        return op === '=' ? (r) => other(r) === null : (r) => other(r) !== null;
      }
      const l = compileValue(e.left);
      const rt = compileValue(e.right);
      return (r) => {
        const a = l(r);
        if (a === null) return null;
        const b = rt(r);
        if (b === null) return null;
        const c = compareValues(a, b);
        switch (op) {
          case '=':
            return c === 0;
          case '!=':
            return c !== 0;
          case '<':
            return c < 0;
          case '<=':
            return c <= 0;
          case '>':
            return c > 0;
          case '>=':
            return c >= 0;
        }
      };
    }
    case 'in': {
      const a = compileValue(e.arg);
      const lits = e.list.filter((v) => v !== null) as Exclude<Value, null>[];
      const hasNull = lits.length !== e.list.length;
      const negate = e.negate;
      return (r) => {
        const v = a(r);
        if (v === null) return null;
        let res: Tri = hasNull ? null : false;
        for (const l of lits)
          if (compareValues(v, l) === 0) {
            res = true;
            break;
          }
        return negate && res !== null ? !res : res;
      };
    }
    case 'matches': {
      const a = compileValue(e.arg);
      const re = compileAnchoredRegex(e.regex);
      return (r) => {
        const v = a(r);
        return v === null ? null : re.matches(stringForm(v));
      };
    }
    case 'contains': {
      const a = compileValue(e.arg);
      const needle = e.needle;
      return (r) => {
        const v = a(r);
        return v === null ? null : stringForm(v).includes(needle);
      };
    }
    case 'not': {
      const a = compileCond(e.arg);
      return (r) => {
        const v = a(r);
        return v === null ? null : !v;
      };
    }
    case 'and': {
      const l = compileCond(e.left);
      const rt = compileCond(e.right);
      return (r) => {
        const a = l(r);
        if (a === false) return false;
        const b = rt(r);
        if (b === false) return false;
        return a === null || b === null ? null : true;
      };
    }
    case 'or': {
      const l = compileCond(e.left);
      const rt = compileCond(e.right);
      return (r) => {
        const a = l(r);
        if (a === true) return true;
        const b = rt(r);
        if (b === true) return true;
        return a === null || b === null ? null : false;
      };
    }
    default: {
      const v = compileValue(e);
      return (r) => {
        const x = v(r);
        return x === null ? null : compareValues(x, true) === 0;
      };
    }
  }
}
