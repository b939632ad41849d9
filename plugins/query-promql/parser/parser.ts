/**
 * PromQL parser: recursive descent with precedence climbing over the lexer's tokens, followed
 * by Prometheus' type checks. Produces the AST in ast.ts; knows nothing about evaluation.
 */
import type { LabelMatcher, MatchOp } from '../../../kernel/matchers.js';
import { compileAnchoredRegex, InvalidRegexError } from '../../../kernel/matchers.js';
import type {
  AggregateExpr,
  AggregateOp,
  AtModifier,
  BinaryOp,
  DurationExpr,
  Expr,
  MatrixSelector,
  PosRange,
  SubqueryExpr,
  ValueType,
  VectorMatching,
  VectorSelector,
} from './ast.js';
import { PromQLParseError, positionOf } from './errors.js';
import { lex, type Token } from './lexer.js';
import { AGGREGATORS, FUNCTIONS, PARAM_AGGREGATORS } from './signatures.js';

export { PromQLParseError } from './errors.js';

const BIN_PREC: Record<string, number> = {
  or: 1,
  and: 2,
  unless: 2,
  '==': 3,
  '!=': 3,
  '<=': 3,
  '<': 3,
  '>=': 3,
  '>': 3,
  '+': 4,
  '-': 4,
  '*': 5,
  '/': 5,
  '%': 5,
  atan2: 5,
  '</': 5,
  '>/': 5,
  '^': 6,
};

const COMPARISON = new Set(['==', '!=', '<=', '<', '>=', '>']);
const SET_OPS = new Set(['and', 'or', 'unless']);

export function isComparisonOp(op: string): boolean {
  return COMPARISON.has(op);
}
export function isSetOp(op: string): boolean {
  return SET_OPS.has(op);
}

/** Parses a PromQL expression. Throws PromQLParseError with a Prometheus-style position. */
export function parsePromQL(input: string): Expr {
  const p = new Parser(input);
  const e = p.parseTop();
  checkTypes(e, input);
  sources.set(e, input);
  return e;
}

const sources = new WeakMap<Expr, string>();

/** The text an expression was parsed from (for annotation positions), when known. */
export function sourceOf(e: Expr): string | undefined {
  return sources.get(e);
}

/** Result type of an expression (Prometheus' Expr.Type()). */
export function exprType(e: Expr): ValueType {
  switch (e.type) {
    case 'NumberLiteral':
      return 'scalar';
    case 'StringLiteral':
      return 'string';
    case 'VectorSelector':
      return 'vector';
    case 'MatrixSelector':
    case 'SubqueryExpr':
      return 'matrix';
    case 'Call':
      return FUNCTIONS[e.func]?.ret ?? 'vector';
    case 'AggregateExpr':
      return 'vector';
    case 'BinaryExpr': {
      const l = exprType(e.lhs);
      const r = exprType(e.rhs);
      return l === 'scalar' && r === 'scalar' ? 'scalar' : 'vector';
    }
    case 'UnaryExpr':
    case 'ParenExpr':
      return exprType(e.expr);
    case 'TimeRef':
      return 'scalar';
  }
}

const TYPE_NAME: Record<ValueType, string> = {
  scalar: 'scalar',
  vector: 'instant vector',
  matrix: 'range vector',
  string: 'string',
};

class Parser {
  private toks: Token[];
  private i = 0;
  /** info()'s data-label selector may consist of matchers that all match the empty string. */
  private allowEmptySelector = false;
  constructor(private readonly input: string) {
    this.toks = lex(input);
  }

  private peek(k = 0): Token {
    return this.toks[Math.min(this.i + k, this.toks.length - 1)]!;
  }
  private next(): Token {
    return this.toks[this.i++]!;
  }
  private fail(tok: Token | number, msg: string): never {
    const off = typeof tok === 'number' ? tok : tok.start;
    throw new PromQLParseError(msg, positionOf(this.input, off), off);
  }
  private describe(t: Token): string {
    switch (t.kind) {
      case 'eof':
        return 'end of input';
      case 'ident':
        return isKeyword(t.text) ? t.text : `identifier "${t.text}"`;
      case 'number':
        return `number "${t.text}"`;
      case 'duration':
        return `duration "${t.text}"`;
      case 'string':
        return `string ${JSON.stringify(t.text)}`;
      case '(':
        return '"("';
      case ')':
        return '")"';
      case '{':
        return '"{"';
      case '}':
        return '"}"';
      case '[':
        return '"["';
      case ']':
        return '"]"';
      case ',':
        return '","';
      case ':':
        return '":"';
      case '@':
        return '"@"';
      default:
        return t.text;
    }
  }
  private unexpected(t: Token, ctx?: string, expected?: string): never {
    let msg = `unexpected ${this.describe(t)}`;
    if (ctx) msg += ` in ${ctx}`;
    if (expected) msg += `, expected ${expected}`;
    this.fail(t, msg);
  }
  private expect(kind: Token['kind'], ctx: string, expected?: string): Token {
    const t = this.peek();
    if (t.kind !== kind) this.unexpected(t, ctx, expected ?? `"${kind}"`);
    return this.next();
  }
  private isIdent(text: string, k = 0): boolean {
    const t = this.peek(k);
    return t.kind === 'ident' && t.text.toLowerCase() === text;
  }

  parseTop(): Expr {
    if (this.peek().kind === 'eof') this.fail(this.peek(), 'no expression found in input');
    const e = this.parseExpr(0);
    const t = this.peek();
    if (t.kind !== 'eof') this.unexpected(t);
    return e;
  }

  private binOpAt(): string | null {
    const t = this.peek();
    if (t.kind === 'op' && t.text in BIN_PREC) return t.text;
    if (t.kind === 'ident') {
      const l = t.text.toLowerCase();
      if (l === 'and' || l === 'or' || l === 'unless' || l === 'atan2') return l;
    }
    return null;
  }

  private parseExpr(minPrec: number): Expr {
    let lhs = this.parseUnary();
    for (;;) {
      const op = this.binOpAt();
      if (!op) break;
      const prec = BIN_PREC[op]!;
      if (prec < minPrec) break;
      const opTok = this.next();
      let returnBool = false;
      if (this.isIdent('bool')) {
        this.next();
        returnBool = true;
      }
      const matching = this.parseMatching(op);
      // `^` is right-associative.
      const rhs = this.parseExpr(op === '^' ? prec : prec + 1);
      void opTok;
      lhs = {
        type: 'BinaryExpr',
        op: op as BinaryOp,
        lhs,
        rhs,
        returnBool,
        matching,
        pos: { start: lhs.pos.start, end: rhs.pos.end },
      };
    }
    return lhs;
  }

  private parseMatching(op: string): VectorMatching | undefined {
    let m: VectorMatching | undefined;
    if (this.isIdent('on') || this.isIdent('ignoring')) {
      const on = this.next().text.toLowerCase() === 'on';
      const labels = this.parseLabelList('grouping opts');
      m = { card: 'one-to-one', on, labels, include: [] };
    }
    if (this.isIdent('group_left') || this.isIdent('group_right')) {
      const t = this.next();
      if (!m) m = { card: 'one-to-one', on: false, labels: [], include: [] };
      m.card = t.text.toLowerCase() === 'group_left' ? 'many-to-one' : 'one-to-many';
      if (this.peek().kind === '(') m.include = this.parseLabelList('grouping opts');
    }
    // Fill modifiers (Prometheus 3 `promql-binop-fill-modifiers`).
    for (;;) {
      const fk = ['fill', 'fill_left', 'fill_right'].find((f) => this.isIdent(f) && this.peek(1).kind === '(');
      if (!fk) break;
      this.next();
      this.next();
      let neg = false;
      if (this.peek().kind === 'op' && (this.peek().text === '-' || this.peek().text === '+')) {
        neg = this.next().text === '-';
      }
      const nt = this.peek();
      if (nt.kind !== 'number') this.unexpected(nt, 'fill modifier', 'number literal');
      this.next();
      const val = neg ? -nt.num! : nt.num!;
      this.expect(')', 'fill modifier', '")"');
      if (!m) m = { card: 'one-to-one', on: false, labels: [], include: [] };
      if (fk === 'fill' || fk === 'fill_left') m.fillLeft = val;
      if (fk === 'fill' || fk === 'fill_right') m.fillRight = val;
    }
    if (SET_OPS.has(op) && m === undefined) {
      m = { card: 'many-to-many', on: false, labels: [], include: [] };
    } else if (SET_OPS.has(op) && m) {
      if (m.card === 'many-to-one' || m.card === 'one-to-many') {
        this.fail(this.peek(), `no grouping allowed for "${op}" operation`);
      }
      m.card = 'many-to-many';
    }
    return m;
  }

  private parseLabelList(ctx: string): string[] {
    this.expect('(', ctx, '"("');
    const out: string[] = [];
    for (;;) {
      const t = this.peek();
      if (t.kind === ')') {
        this.next();
        break;
      }
      if (t.kind === 'ident' || t.kind === 'string') {
        if (t.kind === 'ident' && !/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(t.text)) this.unexpected(t, ctx, 'label');
        out.push(t.text);
        this.next();
      } else this.unexpected(t, ctx, 'label');
      const s = this.peek();
      if (s.kind === ',') this.next();
      else if (s.kind !== ')') this.unexpected(s, ctx, '"," or ")"');
    }
    return out;
  }

  private parseUnary(): Expr {
    const t = this.peek();
    if (t.kind === 'op' && (t.text === '-' || t.text === '+')) {
      this.next();
      // Unary operators bind like `*`: `-a ^ b` is `-(a ^ b)`.
      const e = this.parseExpr(BIN_PREC['^']!);
      if (t.text === '+') {
        return e.type === 'NumberLiteral' ? { ...e, pos: { start: t.start, end: e.pos.end } } : e;
      }
      if (e.type === 'NumberLiteral') return { type: 'NumberLiteral', value: -e.value, pos: { start: t.start, end: e.pos.end } };
      return { type: 'UnaryExpr', op: '-', expr: e, pos: { start: t.start, end: e.pos.end } };
    }
    return this.parsePostfix(this.parsePrimary());
  }

  private parsePostfix(e: Expr): Expr {
    for (;;) {
      const t = this.peek();
      if (t.kind === '[') {
        e = this.parseRangeOrSubquery(e);
      } else if (this.isIdent('offset')) {
        this.next();
        e = this.applyOffset(e, t);
      } else if (t.kind === '@') {
        this.next();
        e = this.applyAt(e, t);
      } else if ((this.isIdent('anchored') || this.isIdent('smoothed')) && e.type === 'MatrixSelector') {
        const w = this.next();
        if (w.text === 'anchored') e.vector.anchored = true;
        else e.vector.smoothed = true;
        e.pos = { start: e.pos.start, end: w.end };
      } else if (this.isIdent('smoothed') && e.type === 'VectorSelector') {
        // `metric smoothed`: an instant selector that interpolates between the samples around T.
        const w = this.next();
        e.smoothed = true;
        e.pos = { start: e.pos.start, end: w.end };
      } else return e;
    }
  }

  private parseRangeOrSubquery(e: Expr): Expr {
    const open = this.next();
    const range = this.parseDuration('subquery or range');
    if (this.peek().kind === ':') {
      this.next();
      let step: { ms: number; expr?: DurationExpr } = { ms: 0 };
      if (this.peek().kind !== ']') step = this.parseDuration('subquery or range');
      const close = this.expect(']', 'subquery or range', '"]"');
      const sq: SubqueryExpr = {
        type: 'SubqueryExpr',
        expr: e,
        range: range.ms,
        rangeExpr: range.expr,
        step: step.ms,
        stepExpr: step.expr,
        offset: 0,
        pos: { start: e.pos.start, end: close.end },
      };
      return sq;
    }
    const close = this.expect(']', 'subquery or range', '"]" or ":"');
    if (e.type !== 'VectorSelector') {
      this.fail(open, 'ranges only allowed for vector selectors');
    }
    if (e.offset !== 0 || e.offsetExpr || e.at !== undefined) {
      this.fail(open, 'no offset modifiers allowed before range');
    }
    const ms: MatrixSelector = {
      type: 'MatrixSelector',
      vector: e,
      range: range.ms,
      rangeExpr: range.expr,
      pos: { start: e.pos.start, end: close.end },
    };
    return ms;
  }

  /** A duration, a number of seconds, or (Prometheus 3) a duration expression. */
  private parseDuration(ctx: string): { ms: number; expr?: DurationExpr } {
    const start = this.peek();
    const d = this.parseDurExpr(0, ctx);
    if (d.kind === 'num') {
      if (d.ms < 0 && ctx !== 'offset') this.fail(start, `duration must be greater than 0`);
      return { ms: d.ms };
    }
    const folded = foldDuration(d);
    if (folded !== null) return { ms: folded };
    return { ms: 0, expr: d };
  }

  private parseDurExpr(minPrec: number, ctx: string): DurationExpr {
    let lhs = this.parseDurUnary(ctx);
    for (;;) {
      const t = this.peek();
      if (t.kind !== 'op' || !['+', '-', '*', '/', '%', '^'].includes(t.text)) break;
      const prec = BIN_PREC[t.text]!;
      if (prec < minPrec) break;
      this.next();
      const rhs = this.parseDurExpr(t.text === '^' ? prec : prec + 1, ctx);
      lhs = { kind: 'binary', op: t.text as '+', lhs, rhs };
    }
    return lhs;
  }

  private parseDurUnary(ctx: string): DurationExpr {
    const t = this.peek();
    if (t.kind === 'op' && (t.text === '-' || t.text === '+')) {
      this.next();
      const e = this.parseDurExpr(BIN_PREC['^']!, ctx);
      if (t.text === '+') return e;
      return e.kind === 'num' ? { ...e, ms: -e.ms } : { kind: 'neg', expr: e };
    }
    if (t.kind === 'duration') {
      this.next();
      return { kind: 'num', ms: t.num!, isDuration: true };
    }
    if (t.kind === 'number') {
      this.next();
      return { kind: 'num', ms: t.num! * 1000, isDuration: false };
    }
    if (t.kind === '(') {
      this.next();
      const e = this.parseDurExpr(0, ctx);
      this.expect(')', ctx, '")"');
      return e;
    }
    if (t.kind === 'ident' && this.peek(1).kind === '(') {
      const name = t.text.toLowerCase();
      if (name === 'step' || name === 'range') {
        this.next();
        this.next();
        this.expect(')', ctx, '")"');
        return { kind: name };
      }
      if (name === 'min' || name === 'max') {
        this.next();
        this.next();
        const a = this.parseDurExpr(0, ctx);
        this.expect(',', ctx, '","');
        const b = this.parseDurExpr(0, ctx);
        this.expect(')', ctx, '")"');
        return { kind: name, args: [a, b] };
      }
    }
    this.unexpected(t, ctx, 'duration');
  }

  private applyOffset(e: Expr, tok: Token): Expr {
    const d = this.parseDuration('offset');
    const target = offsetTarget(e);
    if (!target) this.fail(tok, 'offset modifier must be preceded by an instant vector selector or range vector selector or a subquery');
    if (target.offset !== 0 || target.offsetExpr) this.fail(tok, 'offset may not be set multiple times');
    target.offset = d.ms;
    target.offsetExpr = d.expr;
    const end = this.toks[this.i - 1]!.end;
    return widen(e, end);
  }

  private applyAt(e: Expr, tok: Token): Expr {
    const target = offsetTarget(e);
    if (!target) this.fail(tok, '@ modifier must be preceded by an instant vector selector or range vector selector or a subquery');
    if (target.at !== undefined) this.fail(tok, '@ <timestamp> may not be set multiple times');
    let at: AtModifier;
    const t = this.peek();
    if (t.kind === 'ident' && (t.text === 'start' || t.text === 'end') && this.peek(1).kind === '(') {
      this.next();
      this.next();
      this.expect(')', '@ modifier', '")"');
      at = t.text;
    } else {
      let neg = false;
      if (t.kind === 'op' && (t.text === '-' || t.text === '+')) {
        neg = this.next().text === '-';
      }
      const nt = this.peek();
      if (nt.kind !== 'number') this.unexpected(nt, '@ modifier', 'timestamp');
      this.next();
      const secs = neg ? -nt.num! : nt.num!;
      if (!Number.isFinite(secs)) this.fail(nt, `timestamp out of bounds for @ modifier: ${secs}`);
      at = Math.round(secs * 1000);
    }
    target.at = at;
    return widen(e, this.toks[this.i - 1]!.end);
  }

  private parsePrimary(): Expr {
    const t = this.peek();
    switch (t.kind) {
      case 'number':
        this.next();
        return { type: 'NumberLiteral', value: t.num!, pos: { start: t.start, end: t.end } };
      case 'duration':
        this.next();
        return { type: 'NumberLiteral', value: t.num! / 1000, pos: { start: t.start, end: t.end } };
      case 'string':
        this.next();
        return { type: 'StringLiteral', value: t.text, pos: { start: t.start, end: t.end } };
      case '(': {
        this.next();
        const e = this.parseExpr(0);
        const close = this.expect(')', 'paren expression', '")"');
        return { type: 'ParenExpr', expr: e, pos: { start: t.start, end: close.end } };
      }
      case '{':
        return this.parseSelector(null, t.start);
      case 'ident':
        return this.parseIdentExpr();
      case 'eof':
        this.fail(t, 'unexpected end of input');
      default:
        this.unexpected(t);
    }
  }

  private parseIdentExpr(): Expr {
    const t = this.next();
    const name = t.text;
    const lower = name.toLowerCase();
    const nt = this.peek();
    if (AGGREGATORS.has(lower) && (nt.kind === '(' || (nt.kind === 'ident' && ['by', 'without'].includes(nt.text.toLowerCase())))) {
      return this.parseAggregation(lower as AggregateOp, t);
    }
    if (nt.kind === '(' ) {
      if (['step', 'range', 'start', 'end'].includes(name) && this.peek(1).kind === ')') {
        this.next();
        const close = this.next();
        return { type: 'TimeRef', which: name as 'step', pos: { start: t.start, end: close.end } };
      }
      if (!(name in FUNCTIONS)) this.fail(t, `unknown function with name ${JSON.stringify(name)}`);
      return this.parseCall(name, t);
    }
    if (isKeyword(lower) && !['start', 'end', 'step', 'range', 'anchored', 'smoothed', 'fill', 'fill_left', 'fill_right'].includes(lower)) {
      this.unexpected(t);
    }
    return this.parseSelector(name, t.start);
  }

  private parseCall(name: string, t: Token): Expr {
    this.next(); // (
    const args: Expr[] = [];
    if (this.peek().kind !== ')') {
      for (;;) {
        this.allowEmptySelector = name === 'info' && args.length === 1;
        try {
          args.push(this.parseExpr(0));
        } finally {
          this.allowEmptySelector = false;
        }
        const s = this.peek();
        if (s.kind === ',') {
          this.next();
          if (this.peek().kind === ')') break; // trailing comma allowed
          continue;
        }
        if (s.kind === ')') break;
        this.unexpected(s, 'function call', '"," or ")"');
      }
    }
    const close = this.expect(')', 'function call', '")"');
    return { type: 'Call', func: name, args, pos: { start: t.start, end: close.end } };
  }

  private parseAggregation(op: AggregateOp, t: Token): AggregateExpr {
    let grouping: string[] = [];
    let without = false;
    let hasGrouping = false;
    const mod = () => {
      if (this.isIdent('by') || this.isIdent('without')) {
        without = this.next().text.toLowerCase() === 'without';
        grouping = this.parseLabelList('grouping opts');
        hasGrouping = true;
        return true;
      }
      return false;
    };
    const before = mod();
    this.expect('(', 'aggregation', '"("');
    const args: Expr[] = [];
    if (this.peek().kind !== ')') {
      for (;;) {
        args.push(this.parseExpr(0));
        const s = this.peek();
        if (s.kind === ',') {
          this.next();
          if (this.peek().kind === ')') break;
          continue;
        }
        if (s.kind === ')') break;
        this.unexpected(s, 'aggregation', '"," or ")"');
      }
    }
    const close = this.expect(')', 'aggregation', '")"');
    let end = close.end;
    if (!before && mod()) end = this.toks[this.i - 1]!.end;
    else if (before && (this.isIdent('by') || this.isIdent('without'))) this.unexpected(this.peek());
    const wantParam = PARAM_AGGREGATORS.has(op);
    const want = wantParam ? 2 : 1;
    if (args.length !== want) {
      this.fail(close, `wrong number of arguments for aggregate expression provided, expected ${want}, got ${args.length}`);
    }
    return {
      type: 'AggregateExpr',
      op,
      expr: wantParam ? args[1]! : args[0]!,
      param: wantParam ? args[0] : undefined,
      grouping,
      without,
      hasGrouping,
      pos: { start: t.start, end },
    };
  }

  private parseSelector(name: string | null, start: number): Expr {
    const matchers: LabelMatcher[] = [];
    let end = this.toks[this.i - 1]?.end ?? start;
    if (name === null || this.peek().kind === '{') {
      this.expect('{', 'vector selector', '"{"');
      for (;;) {
        const lt = this.peek();
        if (lt.kind === '}') break;
        if (lt.kind !== 'ident' && lt.kind !== 'string') this.unexpected(lt, 'label matching', 'label matching');
        this.next();
        const opTok = this.peek();
        if (lt.kind === 'string' && (opTok.kind === ',' || opTok.kind === '}')) {
          // A quoted metric name: {"metric.name"}.
          if (name !== null) this.fail(lt, `metric name must not be set twice: ${JSON.stringify(name)} or ${JSON.stringify(lt.text)}`);
          name = lt.text;
        } else {
          if (lt.kind === 'ident' && !/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(lt.text)) this.unexpected(lt, 'label matching', 'label matching');
          if (opTok.kind !== 'op' || !['=', '!=', '=~', '!~'].includes(opTok.text)) {
            this.unexpected(opTok, 'label matching', 'label matching operator');
          }
          this.next();
          const vt = this.peek();
          if (vt.kind !== 'string') this.unexpected(vt, 'label matching', 'string');
          this.next();
          const op = opTok.text as MatchOp;
          if (op === '=~' || op === '!~') {
            try {
              compileAnchoredRegex(vt.text);
            } catch (e) {
              if (e instanceof InvalidRegexError) this.fail(vt, `invalid regular expression: ${e.reason}`);
              throw e;
            }
          }
          matchers.push({ name: lt.text, op, value: vt.text });
        }
        const s = this.peek();
        if (s.kind === ',') this.next();
        else if (s.kind !== '}') this.unexpected(s, 'label matching', '"," or "}"');
      }
      end = this.next().end;
    }
    if (name !== null) {
      if (matchers.some((m) => m.name === '__name__')) {
        this.fail(start, `metric name must not be set twice: ${JSON.stringify(name)} or ${JSON.stringify(matchers.find((m) => m.name === '__name__')!.value)}`);
      }
      matchers.unshift({ name: '__name__', op: '=', value: name });
    } else {
      const nm = matchers.find((m) => m.name === '__name__' && m.op === '=');
      if (nm) name = nm.value;
    }
    // At least one matcher must not match the empty string.
    const nonEmpty = matchers.some((m) => {
      if (m.op === '=') return m.value !== '';
      if (m.op === '!=') return m.value === '';
      const re = compileAnchoredRegex(m.value);
      return m.op === '=~' ? !re.matches('') : re.matches('');
    });
    if (!nonEmpty && !this.allowEmptySelector) this.fail(start, 'vector selector must contain at least one non-empty matcher');
    const vs: VectorSelector = { type: 'VectorSelector', name: name ?? '', matchers, offset: 0, pos: { start, end } };
    return vs;
  }
}

function foldDuration(d: DurationExpr): number | null {
  switch (d.kind) {
    case 'num':
      return d.ms;
    case 'neg': {
      const x = foldDuration(d.expr);
      return x === null ? null : -x;
    }
    case 'binary': {
      const a = foldDuration(d.lhs);
      const b = foldDuration(d.rhs);
      if (a === null || b === null) return null;
      return applyDurOp(d.op, a, b, d);
    }
    case 'min':
    case 'max': {
      const a = foldDuration(d.args[0]);
      const b = foldDuration(d.args[1]);
      if (a === null || b === null) return null;
      return d.kind === 'min' ? Math.min(a, b) : Math.max(a, b);
    }
    default:
      return null;
  }
}

/** Duration arithmetic is done in seconds, as Prometheus does. */
export function applyDurOp(op: string, a: number, b: number, _d?: DurationExpr): number {
  const x = a / 1000;
  const y = b / 1000;
  let r: number;
  switch (op) {
    case '+':
      r = x + y;
      break;
    case '-':
      r = x - y;
      break;
    case '*':
      r = x * y;
      break;
    case '/':
      r = x / y;
      break;
    case '%':
      r = x % y;
      break;
    case '^':
      r = Math.pow(x, y);
      break;
    default:
      r = NaN;
  }
  return Math.round(r * 1000);
}

function offsetTarget(e: Expr): VectorSelector | SubqueryExpr | null {
  if (e.type === 'VectorSelector') return e;
  if (e.type === 'MatrixSelector') return e.vector;
  if (e.type === 'SubqueryExpr') return e;
  return null;
}

function widen(e: Expr, end: number): Expr {
  e.pos = { start: e.pos.start, end };
  return e;
}

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'atan2',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'start',
  'end',
  'step',
  'range',
  'anchored',
  'smoothed',
  'fill',
  'fill_left',
  'fill_right',
  ...AGGREGATORS,
]);

function isKeyword(s: string): boolean {
  return KEYWORDS.has(s.toLowerCase());
}

function checkTypes(e: Expr, input: string): void {
  const fail = (pos: PosRange, msg: string): never => {
    throw new PromQLParseError(msg, positionOf(input, pos.start), pos.start);
  };
  const walk = (e: Expr): void => {
    switch (e.type) {
      case 'ParenExpr':
        walk(e.expr);
        return;
      case 'UnaryExpr': {
        walk(e.expr);
        const t = exprType(e.expr);
        if (t !== 'scalar' && t !== 'vector') fail(e.pos, `unary expression only allowed on expressions of type scalar or instant vector, got ${JSON.stringify(TYPE_NAME[t])}`);
        return;
      }
      case 'SubqueryExpr': {
        walk(e.expr);
        const t = exprType(e.expr);
        if (t !== 'vector') fail(e.pos, `subquery is only allowed on instant vector, got ${TYPE_NAME[t]} instead`);
        return;
      }
      case 'MatrixSelector':
        return;
      case 'AggregateExpr': {
        walk(e.expr);
        if (e.param) walk(e.param);
        const t = exprType(e.expr);
        if (t !== 'vector') fail(e.expr.pos, `expected type instant vector in aggregation expression, got ${TYPE_NAME[t]}`);
        if (e.param) {
          const pt = exprType(e.param);
          const want: ValueType = e.op === 'count_values' ? 'string' : 'scalar';
          if (pt !== want) fail(e.param.pos, `expected type ${TYPE_NAME[want]} in aggregation parameter, got ${TYPE_NAME[pt]}`);
        }
        return;
      }
      case 'Call': {
        const sig = FUNCTIONS[e.func]!;
        const n = e.args.length;
        if (sig.variadic === 0 && n !== sig.args.length) {
          fail(e.pos, `expected ${sig.args.length} argument(s) in call to ${JSON.stringify(e.func)}, got ${n}`);
        }
        if (sig.variadic > 0) {
          const min = sig.args.length - sig.variadic;
          if (n < min || n > sig.args.length) {
            fail(e.pos, `expected at least ${min} argument(s) in call to ${JSON.stringify(e.func)}, got ${n}`);
          }
        }
        if (sig.variadic < 0 && n < sig.args.length - 1) {
          fail(e.pos, `expected at least ${sig.args.length - 1} argument(s) in call to ${JSON.stringify(e.func)}, got ${n}`);
        }
        e.args.forEach((a, i) => {
          walk(a);
          const want = sig.args[Math.min(i, sig.args.length - 1)]!;
          const got = exprType(a);
          if (got !== want) {
            fail(a.pos, `expected type ${TYPE_NAME[want]} in call to function ${JSON.stringify(e.func)}, got ${TYPE_NAME[got]}`);
          }
        });
        // Which functions accept `anchored`/`smoothed` is checked at evaluation time, as Prometheus
        // does (the message carries no parse position).
        return;
      }
      case 'BinaryExpr': {
        walk(e.lhs);
        walk(e.rhs);
        const lt = exprType(e.lhs);
        const rt = exprType(e.rhs);
        if ((lt !== 'scalar' && lt !== 'vector') || (rt !== 'scalar' && rt !== 'vector')) {
          fail(e.pos, 'binary expression must contain only scalar and instant vector types');
        }
        if (e.returnBool && !COMPARISON.has(e.op)) fail(e.pos, 'bool modifier can only be used on comparison operators');
        if (COMPARISON.has(e.op) && lt === 'scalar' && rt === 'scalar' && !e.returnBool) {
          fail(e.pos, 'comparisons between scalars must use BOOL modifier');
        }
        if (SET_OPS.has(e.op)) {
          if (lt === 'scalar' || rt === 'scalar') fail(e.pos, `set operator ${JSON.stringify(e.op)} not allowed in binary scalar expression`);
        }
        if ((lt !== 'vector' || rt !== 'vector') && e.matching && (e.matching.labels.length > 0 || e.matching.on) && !SET_OPS.has(e.op)) {
          fail(e.pos, 'vector matching only allowed between instant vectors');
        }
        if (e.matching && (e.matching.card === 'many-to-one' || e.matching.card === 'one-to-many')) {
          if (e.matching.on) {
            for (const l of e.matching.include) {
              if (e.matching.labels.includes(l)) fail(e.pos, `label "${l}" must not occur in ON and GROUP clause at once`);
            }
          }
        }
        return;
      }
      default:
        return;
    }
  };
  walk(e);
}
