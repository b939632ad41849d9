/**
 * Field handling shared by the log receivers (agent-compatible, forwarders, shipper bulk):
 * level normalisation, timestamp parsing with nanosecond precision, and flattening of nested
 * JSON records into facets. Kept separate so every log format maps the same way.
 */
import { badRequest } from '../../kernel/errors.js';
import type { FacetValue } from '../../kernel/models.js';

/** Level spellings of agents and logging libraries mapped to the six SvcQL levels. */
const LEVELS: Readonly<Record<string, string>> = {
  trace: 'trace',
  debug: 'debug',
  dbug: 'debug',
  info: 'info',
  information: 'info',
  informational: 'info',
  notice: 'info',
  ok: 'info',
  success: 'info',
  warn: 'warn',
  warning: 'warn',
  err: 'error',
  error: 'error',
  eror: 'error',
  crit: 'fatal',
  critical: 'fatal',
  alert: 'fatal',
  emerg: 'fatal',
  emergency: 'fatal',
  fatal: 'fatal',
  panic: 'fatal',
};

/** Syslog severities 0..7 (some agents send the number). */
const SYSLOG_LEVELS = ['fatal', 'fatal', 'fatal', 'error', 'warn', 'info', 'info', 'debug'];

/** Normalises a level/status/severity value; unknown words are kept lowercased. */
export function normalizeLevel(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < SYSLOG_LEVELS.length) return SYSLOG_LEVELS[v];
  if (typeof v !== 'string' || v === '') return undefined;
  const lower = v.trim().toLowerCase();
  return LEVELS[lower] ?? lower;
}

const NS_PER_MS = 1_000_000n;

/**
 * A numeric epoch whose unit is guessed by magnitude (seconds, ms, µs or ns). Forwarders let
 * users pick the unit (Fluent Bit `json_date_format`), so the receiver cannot rely on one.
 */
export function epochToNs(n: number): bigint {
  if (!Number.isFinite(n) || n < 0) throw badRequest(`invalid timestamp ${n}`);
  if (n < 1e11) {
    // seconds, possibly fractional: keep microsecond precision of the float
    const whole = Math.floor(n);
    return BigInt(whole) * 1_000_000_000n + BigInt(Math.round((n - whole) * 1e6)) * 1000n;
  }
  if (n < 1e14) {
    const whole = Math.floor(n);
    return BigInt(whole) * NS_PER_MS + BigInt(Math.round((n - whole) * 1e6));
  }
  if (n < 1e17) return BigInt(Math.round(n)) * 1000n;
  return BigInt(Math.round(n));
}

// Fixed pattern (not user-supplied): date, time, optional fraction, optional zone.
const ISO_RE = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:[.,](\d+))?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** `YYYY-MM-DDTHH:MM:SS.` of the last fast-path timestamp parsed, and its Unix ms. */
let lastSecond = '\u0000';
let lastSecondMs = 0;

/** Parses an RFC 3339 / ISO 8601 timestamp (a missing zone means UTC) to Unix ns; undefined if not one. */
export function parseIsoNs(s: string): bigint | undefined {
  // Fast path for the most common shape, `2025-11-22T10:00:00.123Z` (what shippers send).
  if (s.length === 24 && s.charCodeAt(23) === 90 && s.charCodeAt(10) === 84 && s.charCodeAt(19) === 46) {
    const a = s.charCodeAt(20) - 48;
    const b = s.charCodeAt(21) - 48;
    const c = s.charCodeAt(22) - 48;
    const frac = a >= 0 && a <= 9 && b >= 0 && b <= 9 && c >= 0 && c <= 9 ? a * 100 + b * 10 + c : -1;
    // Records of one batch share the date and time to the second: Date.parse once per second.
    if (frac >= 0 && s.startsWith(lastSecond)) return BigInt(lastSecondMs + frac) * NS_PER_MS;
    const ms = Date.parse(s);
    if (ms === ms) {
      if (frac >= 0) {
        lastSecond = s.slice(0, 20);
        lastSecondMs = ms - frac;
      }
      return BigInt(ms) * NS_PER_MS;
    }
  }
  const m = ISO_RE.exec(s.trim());
  if (!m) return undefined;
  let zone = m[4] ?? 'Z';
  if (/^[+-]\d{2}$/.test(zone)) zone += ':00';
  else if (/^[+-]\d{4}$/.test(zone)) zone = zone.slice(0, 3) + ':' + zone.slice(3);
  const time = m[2]!.length === 5 ? m[2] + ':00' : m[2];
  const ms = Date.parse(`${m[1]}T${time}${zone.toUpperCase()}`);
  if (!Number.isFinite(ms)) return undefined;
  const frac = (m[3] ?? '').slice(0, 9).padEnd(9, '0');
  return BigInt(ms) * NS_PER_MS + BigInt(frac);
}

/** A timestamp value of any common shape (epoch number, numeric string, ISO string) to Unix ns. */
export function anyTimestampNs(v: unknown, field: string): bigint {
  if (typeof v === 'number') return epochToNs(v);
  if (typeof v === 'bigint') return v;
  if (typeof v === 'string') {
    const iso = parseIsoNs(v);
    if (iso !== undefined) return iso;
    const n = Number(v);
    if (v.trim() !== '' && Number.isFinite(n)) return epochToNs(n);
  }
  throw badRequest(`invalid timestamp in field "${field}": ${JSON.stringify(v)?.slice(0, 80)}`);
}

export const nowNs = (): bigint => BigInt(Date.now()) * NS_PER_MS;

/** Nesting depth past which objects are kept as JSON text instead of flattened. */
export const MAX_DEPTH = 8;

/**
 * Flattens a JSON value into dotted facet keys (`{"http":{"status":200}}` → `http.status=200`).
 * Arrays and objects past the depth limit are kept as their JSON text; nulls are dropped.
 */
export function flattenInto(out: Record<string, FacetValue>, prefix: string, value: unknown, depth = 0): void {
  visitFlat(prefix, value, depth, (k, v) => {
    out[k] = v;
  });
}

/** Calls `emit` for every flattened leaf (see {@link flattenInto}); no intermediate objects. */
export function visitFlat(prefix: string, value: unknown, depth: number, emit: (key: string, v: FacetValue) => void): void {
  if (value === null || value === undefined) return;
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      if (prefix !== '') emit(prefix, value);
      return;
    case 'bigint':
      if (prefix !== '') emit(prefix, value.toString());
      return;
    case 'object': {
      if (Array.isArray(value) || depth >= MAX_DEPTH || value instanceof Uint8Array) {
        if (prefix !== '') emit(prefix, value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : JSON.stringify(value));
        return;
      }
      const obj = value as Record<string, unknown>;
      for (const k in obj) {
        if (!Object.prototype.hasOwnProperty.call(obj, k)) continue;
        visitFlat(joinKey(prefix, k), obj[k], depth + 1, emit);
      }
      return;
    }
    default:
      return;
  }
}

/**
 * Interns dotted keys: records of one stream repeat the same nested keys, and a key that is
 * already an internalized string makes every facet store cheaper than a fresh concatenation.
 */
const joinedKeys = new Map<string, Map<string, string>>();
let joinedCount = 0;
const MAX_JOINED = 50_000;

export function joinKey(prefix: string, k: string): string {
  if (prefix === '') return k;
  let m = joinedKeys.get(prefix);
  if (m === undefined) {
    if (joinedCount >= MAX_JOINED) return prefix + '.' + k;
    joinedKeys.set(prefix, (m = new Map()));
  }
  let j = m.get(k);
  if (j === undefined) {
    j = prefix + '.' + k;
    if (joinedCount < MAX_JOINED) {
      joinedCount++;
      m.set(k, j);
    }
  }
  return j;
}

interface SlotRule {
  slot: number;
  prio: number;
  nonEmpty: boolean;
}

/**
 * Picks well-known fields out of a record in one flattening pass. Each slot lists its keys in
 * priority order; the best candidate fills the slot and every other leaf (losing candidates
 * included) becomes a facet. Faster than flattening and deleting: no `delete`, which would
 * turn every facet object into a slow dictionary, and no closure per record.
 */
export class FieldPlan<S extends string> {
  private readonly byKey = new Map<string, SlotRule>();
  readonly slotNames: readonly S[];
  // Per-call state (apply is synchronous, so one set is enough).
  private prios: number[] = [];
  private keys: (string | undefined)[] = [];
  private values: (FacetValue | undefined)[] = [];
  private facets: Record<string, FacetValue> = {};

  /** `slots[name] = [keys...]`; names in `stringSlots` only take non-empty values. */
  constructor(slots: Record<S, readonly string[]>, stringSlots: readonly NoInfer<S>[] = []) {
    this.slotNames = Object.keys(slots) as S[];
    this.slotNames.forEach((name, slot) => {
      (slots[name] as readonly string[]).forEach((key, prio) => {
        if (!this.byKey.has(key)) this.byKey.set(key, { slot, prio, nonEmpty: stringSlots.includes(name) });
      });
    });
  }

  /** Fills `values` (indexed like slotNames) and returns the facets. */
  apply(rec: Record<string, unknown>, values: (FacetValue | undefined)[]): Record<string, FacetValue> {
    this.begin(values);
    this.walk('', rec, 0);
    return this.end();
  }

  /**
   * The streaming form of apply for parsers that flatten as they read (the shipper's bulk
   * scanner): begin, then `leaf` for every flattened leaf in document order, then end.
   */
  begin(values: (FacetValue | undefined)[]): void {
    const n = this.slotNames.length;
    // Reused in place: a record is mapped synchronously, one at a time.
    if (this.prios.length !== n) this.prios = new Array(n);
    if (this.keys.length !== n) this.keys = new Array(n);
    this.prios.fill(Infinity);
    this.keys.fill(undefined);
    for (let i = 0; i < n; i++) values[i] = undefined;
    this.values = values;
    this.facets = {};
  }

  end(): Record<string, FacetValue> {
    const facets = this.facets;
    this.facets = {};
    this.values = [];
    return facets;
  }

  leaf(k: string, v: FacetValue): void {
    const m = this.byKey.get(k);
    if (m === undefined || (m.nonEmpty && v === '')) {
      this.facets[k] = v;
      return;
    }
    if (m.prio < this.prios[m.slot]!) {
      const prevKey = this.keys[m.slot];
      if (prevKey !== undefined) this.facets[prevKey] = this.values[m.slot]!;
      this.prios[m.slot] = m.prio;
      this.keys[m.slot] = k;
      this.values[m.slot] = v;
    } else this.facets[k] = v;
  }

  private walk(prefix: string, value: unknown, depth: number): void {
    if (value === null || value === undefined) return;
    switch (typeof value) {
      case 'string':
      case 'number':
      case 'boolean':
        if (prefix !== '') this.leaf(prefix, value);
        return;
      case 'bigint':
        if (prefix !== '') this.leaf(prefix, value.toString());
        return;
      case 'object': {
        if (Array.isArray(value) || depth >= MAX_DEPTH || value instanceof Uint8Array) {
          if (prefix !== '') this.leaf(prefix, value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : JSON.stringify(value));
          return;
        }
        const obj = value as Record<string, unknown>;
        for (const k in obj) {
          if (!Object.prototype.hasOwnProperty.call(obj, k)) continue;
          this.walk(joinKey(prefix, k), obj[k], depth + 1);
        }
        return;
      }
      default:
        return;
    }
  }
}

/** Removes and returns a flattened key's value. */
export function take(flat: Record<string, FacetValue>, ...keys: string[]): FacetValue | undefined {
  for (const k of keys) {
    const v = flat[k];
    if (v !== undefined) {
      delete flat[k];
      return v;
    }
  }
  return undefined;
}

/** Removes and returns the first of `keys` that holds a non-empty string (numbers are stringified). */
export function takeString(flat: Record<string, FacetValue>, ...keys: string[]): string | undefined {
  for (const k of keys) {
    const v = flat[k];
    if (v === undefined) continue;
    if (typeof v === 'string' && v === '') continue;
    delete flat[k];
    return String(v);
  }
  return undefined;
}

/** True for a plain JSON object (not an array, not null). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/**
 * Parses a body of JSON records in any of the shapes forwarders send: a JSON array, a single
 * object, or newline-delimited objects (also when the Content-Type says plain JSON, as Fluent
 * Bit's `json_lines` does). Errors name the line.
 */
export function parseJsonRecords(body: Buffer, what: string): unknown[] {
  const text = body.toString('utf8');
  const trimmed = text.trim();
  if (trimmed === '') return [];
  if (trimmed[0] === '[') {
    try {
      return JSON.parse(trimmed) as unknown[];
    } catch (e) {
      throw badRequest(`malformed JSON array of ${what}: ${(e as Error).message}`);
    }
  }
  try {
    return [JSON.parse(trimmed)];
  } catch {
    return parseNdjson(text, what);
  }
}

/** Newline-delimited JSON; blank lines skipped; the error names the 1-based line number. */
export function parseNdjson(text: string, what: string): unknown[] {
  const out: unknown[] = [];
  let pos = 0;
  let line = 0;
  while (pos <= text.length) {
    let end = text.indexOf('\n', pos);
    if (end < 0) end = text.length;
    line++;
    const s = text.slice(pos, end).trim();
    pos = end + 1;
    if (s === '') continue;
    try {
      out.push(JSON.parse(s));
    } catch (e) {
      throw badRequest(`malformed JSON on line ${line} of the ${what}: ${(e as Error).message}`);
    }
  }
  return out;
}
