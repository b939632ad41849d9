/**
 * Parameters of the cardinality API (SPEC.md "Cardinality API"): the common time window and
 * selectors, and the per-endpoint aggregation and label restrictions. Every problem is a 400.
 */
import { badRequest } from '../../kernel/errors.js';
import type { LabelMatcher } from '../../kernel/matchers.js';
import { parseSelector } from '../api-prometheus/params.js';

/** Half-open bucket `[startMs, endMs)` except the last, which includes the request timestamp. */
export interface Bucket {
  startMs: number;
  /** Inclusive upper bound in ms, as MetricStore.cardinality expects. */
  maxMs: number;
}

export interface CardinalityRequest {
  buckets: Bucket[];
  matchSets: LabelMatcher[][];
  labels: string[];
}

/**
 * An instant query (duration 0) looks back this far for active series, like PromQL's default
 * lookback: with 15 s scrapes an exact instant would otherwise never hold a sample.
 */
export const INSTANT_LOOKBACK_MS = 5 * 60_000;
/** Refuse requests that would produce absurd bucket counts (each bucket is one index query). */
export const MAX_BUCKETS = 10_000;

function intParam(form: URLSearchParams, name: string, min: number): number {
  const v = form.get(name);
  if (v === null || v === '') throw badRequest(`missing required parameter "${name}"`);
  if (!/^[+-]?\d+$/.test(v)) throw badRequest(`invalid parameter "${name}": ${JSON.stringify(v)} is not an integer`);
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min) throw badRequest(`invalid parameter "${name}": must be an integer >= ${min}`);
  return n;
}

export function parseCommon(form: URLSearchParams): { buckets: Bucket[]; matchSets: LabelMatcher[][] } {
  const timestamp = intParam(form, 'timestamp', 0);
  const duration = intParam(form, 'duration', 0);
  const rollUp = intParam(form, 'rollUpSeconds', 0);
  const endMs = timestamp * 1000;
  const buckets: Bucket[] = [];
  if (duration === 0) {
    buckets.push({ startMs: endMs, maxMs: endMs });
  } else {
    if (rollUp <= 0) throw badRequest('invalid parameter "rollUpSeconds": must be > 0 when duration > 0');
    const count = Math.ceil(duration / rollUp);
    if (count > MAX_BUCKETS) {
      throw badRequest(`duration / rollUpSeconds gives ${count} buckets, more than the limit of ${MAX_BUCKETS}`);
    }
    const startMs = endMs - duration * 1000;
    for (let i = 0; i < count; i++) {
      const b = startMs + i * rollUp * 1000;
      const last = i === count - 1;
      buckets.push({ startMs: b, maxMs: last ? endMs : b + rollUp * 1000 - 1 });
    }
  }
  const matchSets: LabelMatcher[][] = [];
  for (const sel of form.getAll('match[]')) {
    try {
      matchSets.push(parseSelector(sel));
    } catch (e) {
      throw badRequest(`invalid parameter "match[]": ${(e as Error).message}`);
    }
  }
  return { buckets, matchSets };
}

export function requireDistinctCount(form: URLSearchParams): void {
  const a = form.get('aggregation');
  if (a === null || a === '') throw badRequest('missing required parameter "aggregation"');
  if (a !== 'distinctcount') {
    throw badRequest(`invalid parameter "aggregation": ${JSON.stringify(a)} is not supported (must be distinctcount)`);
  }
}

export function labelParams(form: URLSearchParams, required: boolean): string[] {
  const labels = form.getAll('label').filter((l) => l !== '');
  if (required && labels.length === 0) throw badRequest('missing required parameter "label"');
  return [...new Set(labels)];
}
