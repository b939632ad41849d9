/**
 * Request parameter parsing with the exact rules and error texts of Prometheus' web/api/v1
 * package, so that clients (Grafana, promtool, client_golang) see the answers they expect.
 */
import { badRequest } from '../../kernel/errors.js';
import type { LabelMatcher } from '../../kernel/matchers.js';
import { matchesEmpty } from '../../kernel/matchers.js';
import { parsePromQL, PromQLParseError } from '../query-promql/index.js';

/** Prometheus' MinTime / MaxTime in Unix ms (what "no start"/"no end" mean). */
export const MIN_TIME_MS = -9223309901257974000;
export const MAX_TIME_MS = 9223309901257974000;
/** Prometheus' formatting of MinTime / MaxTime, which client_golang sends verbatim. */
const MIN_TIME_FORMATTED = '-292273086-05-16T16:47:06Z';
const MAX_TIME_FORMATTED = '292277025-08-18T07:12:54.999999999Z';

const FLOAT_RE = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const RFC3339_RE = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;
const DURATION_RE = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const DURATION_UNITS_MS = [365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1];

/** Go's math.Round: halves away from zero. */
function roundHalfAway(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

/** Parses a timestamp as Prometheus does: Unix seconds (float) or RFC 3339; returns Unix ms. */
export function parseTimestamp(s: string): number {
  if (FLOAT_RE.test(s)) {
    const f = Number(s);
    if (Number.isFinite(f)) {
      // Whole seconds plus the fraction rounded to milliseconds, as Go's math.Modf-based parser.
      const whole = Math.trunc(f);
      return whole * 1000 + roundHalfAway((f - whole) * 1000);
    }
  }
  const m = RFC3339_RE.exec(s);
  if (m) {
    const frac = (m[3] ?? '').slice(0, 3).padEnd(3, '0');
    const ms = Date.parse(`${m[1]}T${m[2]}.${frac}${m[4]!.toUpperCase()}`);
    if (Number.isFinite(ms)) return ms;
  }
  if (s === MIN_TIME_FORMATTED) return MIN_TIME_MS;
  if (s === MAX_TIME_FORMATTED) return MAX_TIME_MS;
  throw new Error(`cannot parse ${JSON.stringify(s)} to a valid timestamp`);
}

/** Parses a duration: float seconds or a Prometheus duration string ("1h30m"); returns ms. */
export function parseDurationParam(s: string): number {
  if (FLOAT_RE.test(s)) {
    const f = Number(s);
    const ns = f * 1e9;
    if (ns > 9.223372036854776e18 || ns < -9.223372036854776e18) {
      throw new Error(`cannot parse ${JSON.stringify(s)} to a valid duration. It overflows int64`);
    }
    return f * 1000;
  }
  const m = s === '' ? null : DURATION_RE.exec(s);
  if (m && s !== '') {
    let ms = 0;
    for (let i = 0; i < DURATION_UNITS_MS.length; i++) if (m[i + 1]) ms += Number(m[i + 1]) * DURATION_UNITS_MS[i]!;
    return ms;
  }
  throw new Error(`cannot parse ${JSON.stringify(s)} to a valid duration`);
}

/** `invalid parameter "name": reason`, Prometheus' invalidParamError. */
export function invalidParam(name: string, e: unknown): Error {
  const reason = e instanceof Error ? e.message : String(e);
  return badRequest(`invalid parameter ${JSON.stringify(name)}: ${reason}`);
}

/** A time parameter, `fallback` when absent or empty. */
export function timeParam(form: URLSearchParams, name: string, fallback: number): number {
  const v = form.get(name);
  if (v === null || v === '') return fallback;
  try {
    return parseTimestamp(v);
  } catch (e) {
    throw invalidParam(name, e);
  }
}

/** A required time parameter (empty counts as given, and fails to parse, as in Prometheus). */
export function requiredTimeParam(form: URLSearchParams, name: string): number {
  try {
    return parseTimestamp(form.get(name) ?? '');
  } catch (e) {
    throw invalidParam(name, e);
  }
}

/** `limit`: a non-negative integer; 0 or absent = no limit. */
export function limitParam(form: URLSearchParams): number {
  const v = form.get('limit');
  if (v === null || v === '') return 0;
  if (!/^[+-]?\d+$/.test(v)) throw invalidParam('limit', new Error(`strconv.Atoi: parsing ${JSON.stringify(v)}: invalid syntax`));
  const n = Number(v);
  if (n < 0) throw invalidParam('limit', new Error('limit must be non-negative'));
  return n;
}

/**
 * Parses one series selector (`metric{a="b"}` or a bare `{a="b"}`) into matchers, with the
 * metric name as a `__name__` matcher. Throws the parser's positioned error text.
 */
export function parseSelector(text: string): LabelMatcher[] {
  let expr;
  try {
    expr = parsePromQL(text);
  } catch (e) {
    if (e instanceof PromQLParseError) throw new Error(e.message);
    throw e;
  }
  if (expr.type !== 'VectorSelector' || expr.offset !== 0 || expr.at !== undefined) {
    throw new Error(`1:1: parse error: expected a series selector such as metric{label="value"}, got ${JSON.stringify(text)}`);
  }
  const matchers = [...expr.matchers];
  if (expr.name && !matchers.some((m) => m.name === '__name__')) {
    matchers.unshift({ name: '__name__', op: '=', value: expr.name });
  }
  return matchers;
}

/**
 * `match[]` selectors, each a conjunction; at least one matcher of each set must not match
 * the empty string (Prometheus refuses selectors that would select every series).
 */
export function parseMatchSets(values: readonly string[]): LabelMatcher[][] {
  const sets: LabelMatcher[][] = [];
  for (const v of values) {
    try {
      sets.push(parseSelector(v));
    } catch (e) {
      throw badRequest((e as Error).message);
    }
  }
  for (const set of sets) {
    if (!set.some((m) => !matchesEmpty(m))) throw badRequest('match[] must contain at least one non-empty matcher');
  }
  return sets;
}
