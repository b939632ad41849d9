/**
 * TraceQL parser: recursive descent over the lexer's tokens, producing the AST of ast.ts.
 * Precedence follows Tempo's grammar: spanset `||` < `&&` < structural operators (left
 * associative); inside `{ }`: `||` < `&&` < comparisons < `+ -` < `* / %` < `^` < unary.
 */
import type {
  AggregateFn,
  ComparisonOp,
  FieldExpr,
  IntrinsicName,
  Pipeline,
  PipelineStage,
  Position,
  ScalarExpr,
  SpansetExpr,
  SpansetOp,
  Static,
  TraceQLQuery,
  AttributeScope,
} from './ast.js';
import { TraceQLParseError, tokenize, type Token } from './lexer.js';

export { TraceQLParseError };

const INTRINSICS: Record<string, IntrinsicName> = {
  name: 'name',
  status: 'status',
  statusMessage: 'statusMessage',
  kind: 'kind',
  duration: 'duration',
  rootName: 'rootName',
  rootServiceName: 'rootServiceName',
  traceDuration: 'traceDuration',
  'span:name': 'name',
  'span:status': 'status',
  'span:statusMessage': 'statusMessage',
  'span:kind': 'kind',
  'span:duration': 'duration',
  'span:id': 'spanID',
  'span:parentID': 'parentID',
  'trace:rootName': 'rootName',
  'trace:rootService': 'rootServiceName',
  'trace:duration': 'traceDuration',
  'trace:id': 'traceID',
  'event:name': 'eventName',
  'event:timeSinceStart': 'eventTimeSinceStart',
  'link:traceID': 'linkTraceID',
  'link:spanID': 'linkSpanID',
  'instrumentation:name': 'instrumentationName',
  'instrumentation:version': 'instrumentationVersion',
};

/** Intrinsic names a user may type, for tag listings. */
export const INTRINSIC_TAGS: readonly string[] = Object.keys(INTRINSICS).sort();

const STATUSES = new Set(['ok', 'error', 'unset']);
const KINDS = new Set(['unspecified', 'internal', 'server', 'client', 'producer', 'consumer']);
const AGGREGATES = new Set<AggregateFn>(['count', 'avg', 'min', 'max', 'sum']);
const COMPARISONS = new Set<ComparisonOp>(['=', '!=', '>', '>=', '<', '<=', '=~', '!~']);
const STRUCTURAL = new Set<SpansetOp>(['>', '>>', '<', '<<', '~', '!>', '!>>', '!<', '!<<', '!~']);

/** Parses a TraceQL query; throws TraceQLParseError with a position on bad input. */
export function parseTraceQL(text: string): TraceQLQuery {
  const p = new Parser(text);
  const pipeline = p.parsePipeline();
  p.expectEnd();
  return { text, pipeline };
}

class Parser {
  private readonly toks: Token[];
  private i = 0;

  constructor(private readonly text: string) {
    this.toks = tokenize(text);
  }

  private peek(k = 0): Token {
    return this.toks[Math.min(this.i + k, this.toks.length - 1)]!;
  }
  private next(): Token {
    const t = this.peek();
    if (this.i < this.toks.length - 1) this.i++;
    return t;
  }
  private isOp(text: string, k = 0): boolean {
    const t = this.peek(k);
    return t.type === 'op' && t.text === text;
  }
  private isIdent(text: string, k = 0): boolean {
    const t = this.peek(k);
    return t.type === 'ident' && t.text === text;
  }
  private fail(reason: string, t: Token = this.peek()): never {
    throw new TraceQLParseError(reason, t.pos);
  }
  private unexpected(t: Token = this.peek(), expected?: string): never {
    const what = t.type === 'eof' ? 'end of query' : t.type === 'string' ? `string "${t.text}"` : `"${this.text.slice(t.pos.offset, t.end)}"`;
    this.fail(`syntax error: unexpected ${what}${expected ? `, expecting ${expected}` : ''}`, t);
  }
  private expectOp(text: string): Token {
    if (!this.isOp(text)) this.unexpected(this.peek(), `"${text}"`);
    return this.next();
  }

  expectEnd(): void {
    if (this.peek().type !== 'eof') this.unexpected();
  }

  parsePipeline(): Pipeline {
    const pos = this.peek().pos;
    const stages: PipelineStage[] = [this.parseSpansetExpr()];
    while (this.isOp('|')) {
      this.next();
      stages.push(this.parseStage());
    }
    if (stages.length === 1 && stages[0]!.kind === 'pipeline') return stages[0] as Pipeline;
    return { kind: 'pipeline', stages, pos };
  }

  private parseStage(): PipelineStage {
    const t = this.peek();
    if (t.type === 'ident' && t.text === 'select' && this.isOp('(', 1)) {
      this.next();
      this.next();
      const fields: FieldExpr[] = [this.parseField()];
      while (this.isOp(',')) {
        this.next();
        fields.push(this.parseField());
      }
      this.expectOp(')');
      return { kind: 'select', fields, pos: t.pos };
    }
    if (t.type === 'ident' && t.text === 'by' && this.isOp('(', 1)) {
      this.next();
      const open = this.next();
      const field = this.parseField();
      const close = this.expectOp(')');
      const textOf = this.text.slice(open.end, close.pos.offset).trim();
      return { kind: 'by', field, text: textOf, pos: t.pos };
    }
    if (t.type === 'ident' && t.text === 'coalesce' && this.isOp('(', 1)) {
      this.next();
      this.next();
      this.expectOp(')');
      return { kind: 'coalesce', pos: t.pos };
    }
    if (this.isOp('{') || this.isOp('(')) {
      // `( ... )` may open a spanset expression or a parenthesised scalar; spansets are the
      // common case, so try them and fall back to a scalar filter.
      if (this.isOp('{')) return this.parseSpansetExpr();
      const save = this.i;
      try {
        return this.parseSpansetExpr();
      } catch (e) {
        if (!(e instanceof TraceQLParseError)) throw e;
        this.i = save;
      }
    }
    return this.parseScalarFilter();
  }

  private parseScalarFilter(): PipelineStage {
    const pos = this.peek().pos;
    const lhs = this.parseScalarAdd();
    const t = this.peek();
    if (t.type !== 'op' || !COMPARISONS.has(t.text as ComparisonOp)) this.unexpected(t, 'a comparison');
    this.next();
    const op = t.text as ComparisonOp;
    if (op === '=~' || op === '!~') this.fail('regular expressions cannot compare aggregates', t);
    const rhs = this.parseScalarAdd();
    if (lhs.kind !== 'aggregate' && rhs.kind !== 'aggregate' && !hasAggregate(lhs) && !hasAggregate(rhs)) {
      this.fail('a pipeline comparison needs an aggregate such as count() or avg(duration)', this.toks[this.i - 1]);
    }
    return { kind: 'scalarFilter', op, lhs, rhs, pos };
  }

  private parseScalarAdd(): ScalarExpr {
    let lhs = this.parseScalarMul();
    while (this.isOp('+') || this.isOp('-')) {
      const t = this.next();
      lhs = { kind: 'scalarBinary', op: t.text as '+' | '-', lhs, rhs: this.parseScalarMul(), pos: t.pos };
    }
    return lhs;
  }
  private parseScalarMul(): ScalarExpr {
    let lhs = this.parseScalarPrimary();
    while (this.isOp('*') || this.isOp('/') || this.isOp('%')) {
      const t = this.next();
      lhs = { kind: 'scalarBinary', op: t.text as '*' | '/' | '%', lhs, rhs: this.parseScalarPrimary(), pos: t.pos };
    }
    return lhs;
  }
  private parseScalarPrimary(): ScalarExpr {
    const t = this.peek();
    if (t.type === 'ident' && AGGREGATES.has(t.text as AggregateFn) && this.isOp('(', 1)) {
      this.next();
      this.next();
      const fn = t.text as AggregateFn;
      if (fn === 'count') {
        this.expectOp(')');
        return { kind: 'aggregate', fn, pos: t.pos };
      }
      if (this.isOp(')')) this.fail(`${fn}() needs a field`, this.peek());
      const field = this.parseField();
      this.expectOp(')');
      return { kind: 'aggregate', fn, field, pos: t.pos };
    }
    if (this.isOp('(')) {
      this.next();
      const e = this.parseScalarAdd();
      this.expectOp(')');
      return e;
    }
    if (this.isOp('-') && (this.peek(1).type === 'number' || this.peek(1).type === 'duration')) {
      this.next();
      const s = this.parseStatic();
      if (s.type === 'int' || s.type === 'float' || s.type === 'duration') return { ...s, value: -s.value, pos: t.pos };
    }
    const s = this.parseStatic();
    if (s.type !== 'int' && s.type !== 'float' && s.type !== 'duration') this.fail('a number or duration is expected', t);
    return { ...s, pos: t.pos };
  }

  // ---- spanset expressions ------------------------------------------------------------------

  parseSpansetExpr(): SpansetExpr {
    let lhs = this.parseSpansetAnd();
    while (this.isOp('||')) {
      const t = this.next();
      lhs = { kind: 'spansetOp', op: '||', lhs, rhs: this.parseSpansetAnd(), pos: t.pos };
    }
    return lhs;
  }
  private parseSpansetAnd(): SpansetExpr {
    let lhs = this.parseSpansetStructural();
    while (this.isOp('&&')) {
      const t = this.next();
      lhs = { kind: 'spansetOp', op: '&&', lhs, rhs: this.parseSpansetStructural(), pos: t.pos };
    }
    return lhs;
  }
  private parseSpansetStructural(): SpansetExpr {
    let lhs = this.parseSpansetPrimary();
    for (;;) {
      const t = this.peek();
      if (t.type !== 'op' || !STRUCTURAL.has(t.text as SpansetOp)) return lhs;
      this.next();
      lhs = { kind: 'spansetOp', op: t.text as SpansetOp, lhs, rhs: this.parseSpansetPrimary(), pos: t.pos };
    }
  }
  private parseSpansetPrimary(): SpansetExpr {
    const t = this.peek();
    if (this.isOp('{')) {
      this.next();
      if (this.isOp('}')) {
        this.next();
        return { kind: 'filter', expr: null, pos: t.pos };
      }
      const expr = this.parseField();
      this.expectOp('}');
      return { kind: 'filter', expr, pos: t.pos };
    }
    if (this.isOp('(')) {
      this.next();
      const inner = this.parsePipeline();
      this.expectOp(')');
      return inner;
    }
    this.unexpected(t, '"{" or "("');
  }

  // ---- field expressions --------------------------------------------------------------------

  parseField(): FieldExpr {
    return this.parseOr();
  }
  private parseOr(): FieldExpr {
    let lhs = this.parseAnd();
    while (this.isOp('||')) {
      const t = this.next();
      lhs = { kind: 'binary', op: '||', lhs, rhs: this.parseAnd(), pos: t.pos };
    }
    return lhs;
  }
  private parseAnd(): FieldExpr {
    let lhs = this.parseComparison();
    while (this.isOp('&&')) {
      const t = this.next();
      lhs = { kind: 'binary', op: '&&', lhs, rhs: this.parseComparison(), pos: t.pos };
    }
    return lhs;
  }
  private parseComparison(): FieldExpr {
    const lhs = this.parseAdditive();
    const t = this.peek();
    if (t.type === 'op' && COMPARISONS.has(t.text as ComparisonOp)) {
      this.next();
      const rhs = this.parseAdditive();
      const op = t.text as ComparisonOp;
      if ((op === '=~' || op === '!~') && !(rhs.kind === 'static' && rhs.type === 'string')) {
        this.fail(`the right side of ${op} must be a string (a regular expression)`, t);
      }
      const after = this.peek();
      if (after.type === 'op' && COMPARISONS.has(after.text as ComparisonOp)) {
        this.fail('syntax error: comparisons cannot be chained; use && between them', after);
      }
      return { kind: 'binary', op, lhs, rhs, pos: t.pos };
    }
    return lhs;
  }
  private parseAdditive(): FieldExpr {
    let lhs = this.parseMultiplicative();
    while (this.isOp('+') || this.isOp('-')) {
      const t = this.next();
      lhs = { kind: 'binary', op: t.text as '+' | '-', lhs, rhs: this.parseMultiplicative(), pos: t.pos };
    }
    return lhs;
  }
  private parseMultiplicative(): FieldExpr {
    let lhs = this.parsePower();
    while (this.isOp('*') || this.isOp('/') || this.isOp('%')) {
      const t = this.next();
      lhs = { kind: 'binary', op: t.text as '*' | '/' | '%', lhs, rhs: this.parsePower(), pos: t.pos };
    }
    return lhs;
  }
  private parsePower(): FieldExpr {
    const lhs = this.parseUnary();
    if (this.isOp('^')) {
      const t = this.next();
      return { kind: 'binary', op: '^', lhs, rhs: this.parsePower(), pos: t.pos };
    }
    return lhs;
  }
  private parseUnary(): FieldExpr {
    const t = this.peek();
    if (this.isOp('!')) {
      this.next();
      return { kind: 'unary', op: '!', expr: this.parseUnary(), pos: t.pos };
    }
    if (this.isOp('-')) {
      this.next();
      const inner = this.parseUnary();
      if (inner.kind === 'static' && (inner.type === 'int' || inner.type === 'float' || inner.type === 'duration')) {
        return { ...inner, value: -inner.value, pos: t.pos };
      }
      return { kind: 'unary', op: '-', expr: inner, pos: t.pos };
    }
    return this.parsePrimary();
  }
  private parsePrimary(): FieldExpr {
    const t = this.peek();
    if (this.isOp('(')) {
      this.next();
      const e = this.parseField();
      this.expectOp(')');
      return e;
    }
    if (t.type === 'attribute') {
      this.next();
      return { kind: 'attribute', scope: t.scope as AttributeScope, name: t.text, pos: t.pos };
    }
    if (t.type === 'intrinsic') {
      const name = INTRINSICS[t.text];
      if (!name) this.fail(`unknown intrinsic "${t.text}"`, t);
      this.next();
      return { kind: 'intrinsic', name, text: t.text, pos: t.pos };
    }
    if (t.type === 'ident' && INTRINSICS[t.text] && !t.text.includes(':')) {
      this.next();
      return { kind: 'intrinsic', name: INTRINSICS[t.text]!, text: t.text, pos: t.pos };
    }
    if (t.type === 'ident' && (t.text === 'parent' || t.text === 'nestedSetParent')) {
      this.fail(`"${t.text}" is not supported`, t);
    }
    return { ...this.parseStatic(), pos: t.pos };
  }

  private parseStatic(): Static {
    const t = this.peek();
    switch (t.type) {
      case 'string':
        this.next();
        return { kind: 'static', type: 'string', value: t.text };
      case 'number':
        this.next();
        if (!Number.isFinite(t.num)) this.fail(`invalid number "${t.text}"`, t);
        return { kind: 'static', type: t.isInt ? 'int' : 'float', value: t.num! };
      case 'duration':
        this.next();
        return { kind: 'static', type: 'duration', value: t.num! };
      case 'ident':
        if (t.text === 'true' || t.text === 'false') {
          this.next();
          return { kind: 'static', type: 'bool', value: t.text === 'true' };
        }
        if (t.text === 'nil') {
          this.next();
          return { kind: 'static', type: 'nil' };
        }
        if (STATUSES.has(t.text)) {
          this.next();
          return { kind: 'static', type: 'status', value: t.text as 'ok' };
        }
        if (KINDS.has(t.text)) {
          this.next();
          return { kind: 'static', type: 'kind', value: t.text as 'server' };
        }
        this.fail(`syntax error: unexpected identifier "${t.text}" (attributes need a scope: span.${t.text}, resource.${t.text} or .${t.text})`, t);
      // falls through (fail never returns)
      default:
        this.unexpected(t, 'a value');
    }
  }
}

function hasAggregate(e: ScalarExpr): boolean {
  if (e.kind === 'aggregate') return true;
  if (e.kind === 'scalarBinary') return hasAggregate(e.lhs) || hasAggregate(e.rhs);
  return false;
}

export type { Position };
