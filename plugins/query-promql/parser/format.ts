/** Canonical PromQL text of an AST, as Prometheus' String() (used by /api/v1/format_query). */
import type { AtModifier, DurationExpr, Expr, VectorSelector } from './ast.js';

export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let neg = '';
  if (ms < 0) {
    neg = '-';
    ms = -ms;
  }
  const units: [string, number][] = [
    ['y', 31_536_000_000],
    ['w', 604_800_000],
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
    ['ms', 1],
  ];
  let out = '';
  for (const [u, size] of units) {
    const q = Math.floor(ms / size);
    if (q > 0) {
      out += q + u;
      ms -= q * size;
    }
  }
  return neg + out;
}

function fmtDurExpr(d: DurationExpr): string {
  switch (d.kind) {
    case 'num':
      return d.isDuration ? formatDuration(d.ms) : String(d.ms / 1000);
    case 'neg':
      return '-' + fmtDurExpr(d.expr);
    case 'step':
      return 'step()';
    case 'range':
      return 'range()';
    case 'min':
    case 'max':
      return `${d.kind}(${fmtDurExpr(d.args[0])}, ${fmtDurExpr(d.args[1])})`;
    case 'binary':
      return `${fmtDurExpr(d.lhs)} ${d.op} ${fmtDurExpr(d.rhs)}`;
  }
}

function fmtAt(at: AtModifier | undefined): string {
  if (at === undefined) return '';
  if (at === 'start' || at === 'end') return ` @ ${at}()`;
  return ` @ ${(at / 1000).toFixed(3)}`;
}

function fmtOffset(ms: number, expr: DurationExpr | undefined): string {
  if (expr) return ` offset (${fmtDurExpr(expr)})`;
  if (ms === 0) return '';
  return ms < 0 ? ` offset -${formatDuration(-ms)}` : ` offset ${formatDuration(ms)}`;
}

function fmtNumber(v: number): string {
  if (v !== v) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

const IDENT = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function fmtSelector(vs: VectorSelector): string {
  const ms = vs.matchers.filter((m) => !(m.name === '__name__' && m.op === '=' && m.value === vs.name && vs.name !== ''));
  let name = vs.name;
  let quotedName = '';
  if (name && !IDENT.test(name)) {
    quotedName = JSON.stringify(name);
    name = '';
  }
  const parts = ms.map((m) => `${LABEL.test(m.name) ? m.name : JSON.stringify(m.name)}${m.op}${JSON.stringify(m.value)}`);
  if (quotedName) parts.unshift(quotedName);
  const body = parts.length || !name ? `{${parts.join(', ')}}` : '';
  return `${name}${body}`;
}

export function formatPromQL(e: Expr): string {
  switch (e.type) {
    case 'NumberLiteral':
      return fmtNumber(e.value);
    case 'StringLiteral':
      return JSON.stringify(e.value);
    case 'ParenExpr':
      return `(${formatPromQL(e.expr)})`;
    case 'TimeRef':
      return `${e.which}()`;
    case 'UnaryExpr':
      return `${e.op}${formatPromQL(e.expr)}`;
    case 'VectorSelector':
      return fmtSelector(e) + (e.smoothed ? ' smoothed' : '') + fmtOffset(e.offset, e.offsetExpr) + fmtAt(e.at);
    case 'MatrixSelector': {
      const v = e.vector;
      const r = e.rangeExpr ? fmtDurExpr(e.rangeExpr) : formatDuration(e.range);
      const mods = (v.anchored ? ' anchored' : '') + (v.smoothed ? ' smoothed' : '');
      return `${fmtSelector(v)}[${r}]${mods}${fmtOffset(v.offset, v.offsetExpr)}${fmtAt(v.at)}`;
    }
    case 'SubqueryExpr': {
      const r = e.rangeExpr ? fmtDurExpr(e.rangeExpr) : formatDuration(e.range);
      const st = e.stepExpr ? fmtDurExpr(e.stepExpr) : e.step ? formatDuration(e.step) : '';
      return `${formatPromQL(e.expr)}[${r}:${st}]${fmtOffset(e.offset, e.offsetExpr)}${fmtAt(e.at)}`;
    }
    case 'Call':
      return `${e.func}(${e.args.map(formatPromQL).join(', ')})`;
    case 'AggregateExpr': {
      let s = e.op;
      if (e.hasGrouping) s += ` ${e.without ? 'without' : 'by'} (${e.grouping.join(', ')}) `;
      const args = e.param ? `${formatPromQL(e.param)}, ${formatPromQL(e.expr)}` : formatPromQL(e.expr);
      return `${s}(${args})`;
    }
    case 'BinaryExpr': {
      let op: string = e.op;
      if (e.returnBool) op += ' bool';
      const m = e.matching;
      if (m) {
        if (m.on || m.labels.length) op += ` ${m.on ? 'on' : 'ignoring'} (${m.labels.join(', ')})`;
        if (m.card === 'many-to-one' || m.card === 'one-to-many') {
          op += ` ${m.card === 'many-to-one' ? 'group_left' : 'group_right'} (${m.include.join(', ')})`;
        }
        if (m.fillLeft !== undefined && m.fillRight !== undefined && m.fillLeft === m.fillRight) op += ` fill (${fmtNumber(m.fillLeft)})`;
        else {
          if (m.fillLeft !== undefined) op += ` fill_left (${fmtNumber(m.fillLeft)})`;
          if (m.fillRight !== undefined) op += ` fill_right (${fmtNumber(m.fillRight)})`;
        }
      }
      return `${formatPromQL(e.lhs)} ${op} ${formatPromQL(e.rhs)}`;
    }
  }
}
