/**
 * OTLP metric and attribute names to Prometheus names, following Prometheus' own OTLP receiver
 * (otlptranslator, "UnderscoreEscapingWithSuffixes"): unit suffixes from UCUM units, `_total` for
 * monotonic counters, `_ratio` for gauges of unit "1", invalid characters to `_`.
 */

const UNIT_MAP: Record<string, string> = {
  // time
  d: 'days', h: 'hours', min: 'minutes', s: 'seconds', ms: 'milliseconds', us: 'microseconds', ns: 'nanoseconds',
  // bytes
  By: 'bytes', KiBy: 'kibibytes', MiBy: 'mebibytes', GiBy: 'gibibytes', TiBy: 'tibibytes',
  KBy: 'kilobytes', MBy: 'megabytes', GBy: 'gigabytes', TBy: 'terabytes',
  // SI
  m: 'meters', V: 'volts', A: 'amperes', J: 'joules', W: 'watts', g: 'grams',
  // misc
  Cel: 'celsius', Hz: 'hertz', '1': '', '%': 'percent',
};

const PER_UNIT_MAP: Record<string, string> = {
  s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week', mo: 'month', y: 'year',
};

export type NamingKind = 'counter' | 'gauge' | 'histogram' | 'summary';

function isMetricChar(c: number, first: boolean): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 58 || (!first && c >= 48 && c <= 57) || c === 95;
}

/** Splits into tokens of [a-zA-Z0-9:], dropping every other character (and `_`). */
function tokens(s: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c !== 95 && isMetricChar(c, false)) cur += s[i];
    else if (cur) {
      out.push(cur);
      cur = '';
    }
  }
  if (cur) out.push(cur);
  return out;
}

function unitSuffixes(unit: string): [string, string] {
  // Annotations in braces ({requests}) carry no unit.
  const u = unit.replace(/\{[^}]*\}/g, '').trim();
  if (!u) return ['', ''];
  const [main = '', per = ''] = u.split('/', 2);
  const mainS = UNIT_MAP[main] ?? main;
  const perS = PER_UNIT_MAP[per] ?? per;
  return [tokens(mainS).join('_'), tokens(perS).join('_')];
}

/** The Prometheus metric name for an OTLP metric (histogram/summary suffixes not included). */
export function prometheusMetricName(name: string, unit: string, kind: NamingKind): string {
  let toks = tokens(name);
  const [main, per] = unitSuffixes(unit);
  if (main && !toks.includes(main)) toks.push(main);
  if (kind === 'counter') {
    toks = toks.filter((t) => t !== 'total');
    toks.push('total');
  }
  if (unit === '1' && kind === 'gauge') {
    toks = toks.filter((t) => t !== 'ratio');
    toks.push('ratio');
  }
  if (per && !toks.includes(per)) toks.push('per', per);
  let out = toks.join('_');
  if (out && out.charCodeAt(0) >= 48 && out.charCodeAt(0) <= 57) out = '_' + out;
  return out;
}

/** An attribute key as a Prometheus label name (Prometheus' NormalizeLabel). */
export function sanitizeLabelName(key: string): string {
  if (!key) return key;
  let out = '';
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    out += (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 ? key[i] : '_';
  }
  const c0 = out.charCodeAt(0);
  if (c0 >= 48 && c0 <= 57) return 'key_' + out;
  if (out.startsWith('_') && !out.startsWith('__')) return 'key' + out;
  return out;
}

/** Prometheus' float formatting for `le` and `quantile` label values. */
export function formatFloat(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  return String(v);
}
