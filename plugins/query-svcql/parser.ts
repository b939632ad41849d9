/**
 * SvcQL's recursive-descent parser (grammar: SVCQL.md). It validates everything that can be
 * checked without data — regexes, pattern/name counts, percentiles, limits, duplicate columns —
 * so that stages never fail on data.
 */
import type { MatchOp } from '../../kernel/matchers.js';
import type {
  AggFn,
  AggSpec,
  ArithOp,
  CmpOp,
  Expr,
  FieldRef,
  Literal,
  SearchNode,
  Stage,
  SvcQueryAst,
} from './ast.js';
import { invalidArgument, syntaxError, unexpected, type Pos } from './errors.js';
import { Lexer, type LexMode, type Token } from './lexer.js';
import { checkRegex } from './regex.js';

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_.]*$/;
const DUR_RE = /^([1-9][0-9]*)([smhd])$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const AGG_FNS = new Set<AggFn>(['count', 'count_distinct', 'sum', 'avg', 'min', 'max', 'pct', 'first', 'last']);
const MATCH_OPS = new Set(['=', '!=', '=~', '!~']);
const EXPR_KEYWORDS = new Set(['and', 'or', 'not', 'in', 'matches', 'contains', 'true', 'false', 'null']);
export const MAX_LIMIT = 10_000;

/** Parses a whole query: search expression and stages. */
export function parseQuery(text: string): SvcQueryAst {
  return new Parser(text).query();
}

/** Parses a search expression only; any stage is rejected with `stage "<s>" not allowed here`. */
export function parseSearchOnly(text: string): SvcQueryAst {
  const ast = parseQuery(text);
  const first = ast.stages[0];
  if (first) throw stageNotAllowed(first);
  return ast;
}

export function stageNotAllowed(s: Stage) {
  return invalidArgument(`stage "${s.keyword}" not allowed here`, s.pos);
}

class Parser {
  private readonly lx: Lexer;
  constructor(private readonly text: string) {
    this.lx = new Lexer(text);
  }

  query(): SvcQueryAst {
    const search = this.disj();
    const stages: Stage[] = [];
    for (;;) {
      const t = this.lx.peek('search');
      if (t.kind === 'eof') break;
      if (!(t.kind === 'op' && t.value === '|')) throw this.unexpected(t, '"|"');
      this.lx.next('search');
      stages.push(this.stage());
    }
    return { text: this.text, search, stages };
  }

  private unexpected(t: Token, expected: string) {
    return unexpected(t.kind === 'eof' ? null : t.text, t.pos, expected);
  }

  private isWord(t: Token, kw: string): boolean {
    return (t.kind === 'word' || (t.kind === 'name' && !t.quoted)) && t.value.toLowerCase() === kw;
  }

  // ---- search expression -----------------------------------------------------------------------

  private disj(): SearchNode {
    const first = this.conj();
    const args = [first];
    while (this.isWord(this.lx.peek('search'), 'or') && !this.followedByMatchOp()) {
      this.lx.next('search');
      args.push(this.conj());
    }
    return args.length === 1 ? first : { kind: 'or', args, pos: first.pos };
  }

  private conj(): SearchNode {
    const first = this.term();
    const args = [first];
    for (;;) {
      const t = this.lx.peek('search');
      if (this.isWord(t, 'and') && !this.followedByMatchOp()) {
        this.lx.next('search');
        args.push(this.term());
        continue;
      }
      if (this.startsTerm(t)) {
        args.push(this.term());
        continue;
      }
      if (t.kind === 'op' && MATCH_OPS.has(t.value)) throw this.unexpected(t, 'search term');
      break;
    }
    return args.length === 1 ? first : { kind: 'and', args, pos: first.pos };
  }

  private startsTerm(t: Token): boolean {
    if (t.kind === 'word') return !(this.isWord(t, 'or') && !this.followedByMatchOp());
    return t.kind === 'str' || t.kind === 'key' || t.kind === 'name' || (t.kind === 'op' && (t.value === '(' || t.value === '*'));
  }

  /** True when the token after the current one is a match operator (so the current one is a key). */
  private followedByMatchOp(): boolean {
    const m = this.lx.mark();
    this.lx.next('search');
    const n = this.lx.peek('search');
    this.lx.reset(m);
    return n.kind === 'op' && MATCH_OPS.has(n.value);
  }

  private term(): SearchNode {
    const t = this.lx.peek('search');
    if (t.kind === 'word') {
      if (this.followedByMatchOp()) {
        if (!NAME_RE.test(t.value)) {
          this.lx.next('search');
          throw this.unexpected(this.lx.peek('search'), 'search term');
        }
        this.lx.next('search');
        return this.matchTerm({ name: t.value, facet: false, column: t.value, pos: t.pos });
      }
      const kw = t.value.toLowerCase();
      if (kw === 'and' || kw === 'or') throw this.unexpected(t, 'search term');
      this.lx.next('search');
      if (kw === 'not') return { kind: 'not', arg: this.term(), pos: t.pos };
      return { kind: 'text', text: t.value, pos: t.pos };
    }
    if (t.kind === 'name' || t.kind === 'key') {
      this.lx.next('search');
      const facet = t.kind === 'key';
      return this.matchTerm({ name: t.value, facet, column: facet ? '@' + t.value : t.value, pos: t.pos });
    }
    if (t.kind === 'str') {
      this.lx.next('search');
      return { kind: 'text', text: t.value, pos: t.pos };
    }
    if (t.kind === 'op' && t.value === '*') {
      this.lx.next('search');
      return { kind: 'all', pos: t.pos };
    }
    if (t.kind === 'op' && t.value === '(') {
      this.lx.next('search');
      const inner = this.disj();
      this.expectOp('search', ')', '")"');
      return inner;
    }
    throw this.unexpected(t, 'search term');
  }

  private matchTerm(key: FieldRef): SearchNode {
    const opTok = this.lx.peek('search');
    if (!(opTok.kind === 'op' && MATCH_OPS.has(opTok.value))) throw this.unexpected(opTok, 'match operator');
    this.lx.next('search');
    const v = this.lx.peek('search');
    if (v.kind !== 'str' && v.kind !== 'word') throw this.unexpected(v, 'value');
    this.lx.next('search');
    const op = opTok.value as MatchOp;
    if (op === '=~' || op === '!~') checkRegex(v.value, v.pos);
    return { kind: 'match', key, op, value: v.value, pos: key.pos };
  }

  private expectOp(mode: LexMode, op: string, expected: string): Token {
    const t = this.lx.peek(mode);
    if (!(t.kind === 'op' && t.value === op)) throw this.unexpected(t, expected);
    return this.lx.next(mode);
  }

  // ---- stages ------------------------------------------------------------------------------------

  private peekName(kw: string): boolean {
    const t = this.lx.peek('expr');
    return t.kind === 'name' && !t.quoted && t.value.toLowerCase() === kw;
  }

  private acceptName(kw: string): boolean {
    if (!this.peekName(kw)) return false;
    this.lx.next('expr');
    return true;
  }

  private expectName(kw: string): void {
    if (!this.acceptName(kw)) throw this.unexpected(this.lx.peek('expr'), `"${kw}"`);
  }

  private stage(): Stage {
    const t = this.lx.peek('expr');
    if (t.kind !== 'name') throw this.unexpected(t, 'stage');
    const kw = t.value.toLowerCase();
    const pos = t.pos;
    const keyword = t.quoted ? t.value : kw;
    if (t.quoted) throw syntaxError(`unknown stage "${t.value}"`, pos);
    if (AGG_FNS.has(kw as AggFn)) return this.aggregateStage(pos, keyword);
    this.lx.next('expr');
    switch (kw) {
      case 'where':
        return { kind: 'where', expr: this.expr(), pos, keyword };
      case 'parse':
        return this.parseStage(pos, keyword);
      case 'json':
        return this.jsonStage(pos, keyword);
      case 'logfmt': {
        const src = this.src();
        return { kind: 'logfmt', src, nodrop: this.acceptName('nodrop'), pos, keyword };
      }
      case 'fields': {
        const drop = this.lx.peek('expr').kind === 'op' && this.lx.peek('expr').value === '-';
        if (drop) this.lx.next('expr');
        const keys = this.keys();
        checkDuplicates(keys.map((k) => [k.column, k.pos]));
        return { kind: 'fields', drop, keys, pos, keyword };
      }
      case 'timeslice':
        return this.timesliceStage(pos, keyword);
      case 'sort': {
        this.expectName('by');
        const keys: { key: FieldRef; desc: boolean }[] = [];
        do {
          const key = this.key();
          let desc = true;
          if (this.acceptName('asc')) desc = false;
          else this.acceptName('desc');
          keys.push({ key, desc });
        } while (this.acceptOp(','));
        return { kind: 'sort', keys, pos, keyword };
      }
      case 'limit':
        return { kind: 'limit', n: this.limitNumber(), pos, keyword };
      case 'top': {
        const n = this.limitNumber();
        const by = this.keys();
        let agg: AggSpec = { fn: 'count', arg: null, name: '_count', pos };
        if (this.acceptName('by')) {
          const at = this.lx.peek('expr');
          if (!(at.kind === 'name' && !at.quoted && AGG_FNS.has(at.value.toLowerCase() as AggFn)))
            throw this.unexpected(at, 'aggregate');
          agg = this.aggregate();
        }
        checkDuplicates([...by.map((k): [string, Pos] => [k.column, k.pos]), [agg.name, agg.pos]]);
        return { kind: 'top', n, by, agg, pos, keyword };
      }
      case 'dedup': {
        const keys = this.acceptName('by') ? this.keys() : [];
        return { kind: 'dedup', keys, pos, keyword };
      }
      default:
        throw syntaxError(`unknown stage "${t.value}"`, pos);
    }
  }

  private acceptOp(op: string): boolean {
    const t = this.lx.peek('expr');
    if (t.kind === 'op' && t.value === op) {
      this.lx.next('expr');
      return true;
    }
    return false;
  }

  /** `field=key` before a parser's arguments. */
  private src(): FieldRef | null {
    if (!this.peekName('field')) return null;
    const m = this.lx.mark();
    this.lx.next('expr');
    if (!this.acceptOp('=')) {
      this.lx.reset(m);
      return null;
    }
    return this.key();
  }

  private key(): FieldRef {
    const t = this.lx.peek('expr');
    if (t.kind === 'key') {
      this.lx.next('expr');
      return { name: t.value, facet: true, column: '@' + t.value, pos: t.pos };
    }
    if (t.kind === 'name') {
      this.lx.next('expr');
      return { name: t.value, facet: false, column: t.value, pos: t.pos };
    }
    throw this.unexpected(t, 'field');
  }

  private keys(): FieldRef[] {
    const out = [this.key()];
    while (this.acceptOp(',')) out.push(this.key());
    return out;
  }

  private name(): { name: string; pos: Pos } {
    const t = this.lx.peek('expr');
    if (t.kind !== 'name') throw this.unexpected(t, 'name');
    this.lx.next('expr');
    return { name: t.value, pos: t.pos };
  }

  private names(): { name: string; pos: Pos }[] {
    const out = [this.name()];
    while (this.acceptOp(',')) out.push(this.name());
    checkDuplicates(out.map((n) => [n.name, n.pos]));
    return out;
  }

  private string(): Token {
    const t = this.lx.peek('expr');
    if (t.kind !== 'str') throw this.unexpected(t, 'string');
    return this.lx.next('expr');
  }

  private parseStage(pos: Pos, keyword: string): Stage {
    if (this.acceptName('regex')) {
      const src = this.src();
      const re = this.string();
      const compiled = checkRegex(re.value, re.pos);
      if (Object.keys(compiled.namedGroups()).length === 0) throw invalidArgument('regex has no named group', re.pos);
      return { kind: 'parseRegex', src, regex: re.value, nodrop: this.acceptName('nodrop'), pos, keyword };
    }
    const src = this.src();
    const pat = this.string();
    this.expectName('as');
    const names = this.names();
    const wildcards = pat.value.split('*').length - 1;
    if (wildcards !== names.length)
      throw invalidArgument(`parse pattern has ${wildcards} wildcards but ${names.length} names`, pat.pos);
    return {
      kind: 'parse',
      src,
      pattern: pat.value,
      names: names.map((n) => n.name),
      nodrop: this.acceptName('nodrop'),
      pos,
      keyword,
    };
  }

  private jsonStage(pos: Pos, keyword: string): Stage {
    const src = this.src();
    let paths: string[] | null = null;
    let names: string[] | null = null;
    if (this.lx.peek('expr').kind === 'str') {
      paths = [this.string().value];
      while (this.acceptOp(',')) paths.push(this.string().value);
      if (this.acceptName('as')) {
        const ns = this.names();
        if (ns.length !== paths.length)
          throw invalidArgument(`json has ${paths.length} paths but ${ns.length} names`, pos);
        names = ns.map((n) => n.name);
      }
    }
    return { kind: 'json', src, paths, names, nodrop: this.acceptName('nodrop'), pos, keyword };
  }

  private timesliceStage(pos: Pos, keyword: string): Stage {
    const t = this.lx.peek('dur');
    if (t.kind !== 'dur') throw this.unexpected(t, 'duration');
    this.lx.next('dur');
    const m = DUR_RE.exec(t.value);
    const n = m ? Number(m[1]) : NaN;
    if (!m || !Number.isSafeInteger(n * UNIT_MS[m[2]!]!))
      throw syntaxError(`invalid duration "${t.value}"`, t.pos);
    const name = this.acceptName('as') ? this.name().name : '_timeslice';
    return { kind: 'timeslice', durMs: n * UNIT_MS[m[2]!]!, durText: t.value, durPos: t.pos, name, pos, keyword };
  }

  private limitNumber(): number {
    const t = this.lx.peek('expr');
    if (t.kind !== 'num' || !/^[0-9]+$/.test(t.value)) throw this.unexpected(t, 'integer');
    this.lx.next('expr');
    const n = Number(t.value);
    if (!(n >= 1 && n <= MAX_LIMIT)) throw invalidArgument(`limit must be between 1 and ${MAX_LIMIT}`, t.pos);
    return n;
  }

  private aggregateStage(pos: Pos, keyword: string): Stage {
    const aggs = [this.aggregate()];
    while (this.acceptOp(',')) {
      const t = this.lx.peek('expr');
      if (!(t.kind === 'name' && !t.quoted && AGG_FNS.has(t.value.toLowerCase() as AggFn)))
        throw this.unexpected(t, 'aggregate');
      aggs.push(this.aggregate());
    }
    const by = this.acceptName('by') ? this.keys() : [];
    checkDuplicates([...aggs.map((a): [string, Pos] => [a.name, a.pos]), ...by.map((k): [string, Pos] => [k.column, k.pos])]);
    return { kind: 'aggregate', aggs, by, pos, keyword };
  }

  private aggregate(): AggSpec {
    const t = this.lx.next('expr');
    const fn = t.value.toLowerCase() as AggFn;
    let arg: FieldRef | null = null;
    let pct: AggSpec['pct'];
    if (fn === 'count' && !(this.lx.peek('expr').kind === 'op' && this.lx.peek('expr').value === '(')) {
      // bare count
    } else {
      this.expectOp('expr', '(', '"("');
      arg = this.key();
      if (fn === 'pct') {
        this.expectOp('expr', ',', '","');
        const p = this.lx.peek('expr');
        if (p.kind !== 'num') throw this.unexpected(p, 'number');
        this.lx.next('expr');
        const frac = decimalFraction(p.value);
        if (frac.num <= 0n || frac.num > 100n * frac.den) throw invalidArgument('percentile must be in (0, 100]', p.pos);
        pct = { ...frac, text: p.value };
      }
      this.expectOp('expr', ')', '")"');
    }
    const name = this.acceptName('as')
      ? this.name().name
      : fn === 'pct'
        ? `_pct${pct!.text.replace(/[.+-]/g, '_')}`
        : `_${fn}`;
    return pct ? { fn, arg, pct, name, pos: t.pos } : { fn, arg, name, pos: t.pos };
  }

  // ---- where expressions -------------------------------------------------------------------------

  private expr(): Expr {
    let left = this.andExpr();
    while (this.acceptName('or')) left = { kind: 'or', left, right: this.andExpr() };
    return left;
  }

  private andExpr(): Expr {
    let left = this.notExpr();
    while (this.acceptName('and')) left = { kind: 'and', left, right: this.notExpr() };
    return left;
  }

  private notExpr(): Expr {
    if (this.acceptName('not')) return { kind: 'not', arg: this.notExpr() };
    return this.cmpExpr();
  }

  private cmpExpr(): Expr {
    const left = this.addExpr();
    const t = this.lx.peek('expr');
    if (t.kind === 'op' && ['=', '==', '!=', '<', '<=', '>', '>='].includes(t.value)) {
      this.lx.next('expr');
      const op = (t.value === '==' ? '=' : t.value) as CmpOp;
      return { kind: 'cmp', op, left, right: this.addExpr() };
    }
    if (this.peekName('not')) {
      const m = this.lx.mark();
      this.lx.next('expr');
      if (this.peekName('in')) {
        this.lx.next('expr');
        return { kind: 'in', negate: true, arg: left, list: this.literalList() };
      }
      this.lx.reset(m);
      return left;
    }
    if (this.acceptName('in')) return { kind: 'in', negate: false, arg: left, list: this.literalList() };
    if (this.acceptName('matches')) {
      const s = this.string();
      checkRegex(s.value, s.pos);
      return { kind: 'matches', arg: left, regex: s.value };
    }
    if (this.acceptName('contains')) return { kind: 'contains', arg: left, needle: this.string().value };
    return left;
  }

  private literalList(): Literal[] {
    this.expectOp('expr', '(', '"("');
    const out = [this.literal()];
    while (this.acceptOp(',')) out.push(this.literal());
    this.expectOp('expr', ')', '")"');
    return out;
  }

  private literal(): Literal {
    const t = this.lx.peek('expr');
    if (t.kind === 'str') {
      this.lx.next('expr');
      return t.value;
    }
    if (t.kind === 'op' && t.value === '-') {
      this.lx.next('expr');
      const n = this.lx.peek('expr');
      if (n.kind !== 'num') throw this.unexpected(n, 'number');
      this.lx.next('expr');
      return -Number(n.value);
    }
    if (t.kind === 'num') {
      this.lx.next('expr');
      return Number(t.value);
    }
    if (t.kind === 'name' && !t.quoted) {
      const v = t.value.toLowerCase();
      if (v === 'true' || v === 'false' || v === 'null') {
        this.lx.next('expr');
        return v === 'true' ? true : v === 'false' ? false : null;
      }
    }
    throw this.unexpected(t, 'literal');
  }

  private addExpr(): Expr {
    let left = this.mulExpr();
    for (;;) {
      const t = this.lx.peek('expr');
      if (!(t.kind === 'op' && (t.value === '+' || t.value === '-'))) return left;
      this.lx.next('expr');
      left = { kind: 'arith', op: t.value as ArithOp, left, right: this.mulExpr() };
    }
  }

  private mulExpr(): Expr {
    let left = this.unary();
    for (;;) {
      const t = this.lx.peek('expr');
      if (!(t.kind === 'op' && (t.value === '*' || t.value === '/' || t.value === '%'))) return left;
      this.lx.next('expr');
      left = { kind: 'arith', op: t.value as ArithOp, left, right: this.unary() };
    }
  }

  private unary(): Expr {
    if (this.acceptOp('-')) {
      const t = this.lx.peek('expr');
      if (t.kind === 'num') {
        this.lx.next('expr');
        return { kind: 'lit', value: -Number(t.value) };
      }
      return { kind: 'neg', arg: this.operand() };
    }
    return this.operand();
  }

  private operand(): Expr {
    const t = this.lx.peek('expr');
    if (t.kind === 'key') {
      this.lx.next('expr');
      return { kind: 'field', ref: { name: t.value, facet: true, column: '@' + t.value, pos: t.pos } };
    }
    if (t.kind === 'name') {
      const v = t.value.toLowerCase();
      if (!t.quoted && (v === 'true' || v === 'false' || v === 'null')) {
        this.lx.next('expr');
        return { kind: 'lit', value: v === 'true' ? true : v === 'false' ? false : null };
      }
      if (!t.quoted && EXPR_KEYWORDS.has(v)) throw this.unexpected(t, 'expression');
      this.lx.next('expr');
      return { kind: 'field', ref: { name: t.value, facet: false, column: t.value, pos: t.pos } };
    }
    if (t.kind === 'num') {
      this.lx.next('expr');
      return { kind: 'lit', value: Number(t.value) };
    }
    if (t.kind === 'str') {
      this.lx.next('expr');
      return { kind: 'lit', value: t.value };
    }
    if (t.kind === 'op' && t.value === '(') {
      this.lx.next('expr');
      const e = this.expr();
      this.expectOp('expr', ')', '")"');
      return e;
    }
    throw this.unexpected(t, 'expression');
  }
}

/** `duplicate column "<c>"` at the second occurrence. */
function checkDuplicates(cols: readonly (readonly [string, Pos])[]): void {
  const seen = new Set<string>();
  for (const [c, p] of cols) {
    if (seen.has(c)) throw invalidArgument(`duplicate column "${c}"`, p);
    seen.add(c);
  }
}

/** A decimal literal as an exact fraction, so nearest-rank percentiles never suffer rounding. */
function decimalFraction(text: string): { num: bigint; den: bigint } {
  const m = /^([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(text)!;
  const frac = m[2] ?? '';
  let num = BigInt(m[1]! + frac);
  let den = 10n ** BigInt(frac.length);
  const exp = Number(m[3] ?? 0);
  if (exp > 0) num *= 10n ** BigInt(Math.min(exp, 400));
  if (exp < 0) den *= 10n ** BigInt(Math.min(-exp, 400));
  return { num, den };
}
