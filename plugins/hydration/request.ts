/**
 * Decoding and validation of hydration request bodies. Type mismatches are reported the way a
 * JSON unmarshaller reports them ("unmarshal failure: ..."), as malformed JSON is (SPEC.md
 * "Errors"); semantic problems get their own 400 message. Nothing here touches storage.
 */
import { badRequest } from '../../kernel/errors.js';
import {
  FILTER_OPERATIONS,
  FILTER_TYPES,
  RETENTION_UNITS,
  type FilterOperation,
  type FilterType,
  type HydrationFilter,
  type RetentionUnit,
} from './model.js';
import { compileFilters } from './filters.js';

type Json = Record<string, unknown>;

const kindOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v;

function unmarshal(field: string, v: unknown, want: string): Error {
  return badRequest(`unmarshal failure: cannot unmarshal ${kindOf(v)} into field ${field} of type ${want}`);
}

/** The body as an object; `null` or a missing body reads as {} only when `emptyOk`. */
export function asObject(body: unknown): Json {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest(`unmarshal failure: cannot unmarshal ${kindOf(body)} into a request object`);
  }
  return body as Json;
}

function optInt(o: Json, field: string): number | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw unmarshal(field, v, 'int64');
  return v;
}

function optString(o: Json, field: string): string | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw unmarshal(field, v, 'string');
  return v;
}

function optBool(o: Json, field: string): boolean | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw unmarshal(field, v, 'bool');
  return v;
}

export interface HydrateRequest {
  archiveName: string;
  startTsMs: number;
  endTsMs: number;
  retentionMs: number;
  filters: HydrationFilter[];
  addTags: Record<string, string>;
  isDryRun: boolean;
}

/** Validates POST /hydrate; `archives` are the configured archive names. */
export function parseHydrateRequest(body: unknown, archives: readonly string[]): HydrateRequest {
  const o = asObject(body);
  const archiveName = optString(o, 'archiveName') ?? '';
  const startTsMs = optInt(o, 'startTsMs');
  const endTsMs = optInt(o, 'endTsMs');
  const retentionValue = optInt(o, 'retentionDurationValue');
  const retentionUnit = optString(o, 'retentionDurationUnit');
  const isDryRun = optBool(o, 'isDryRun') ?? false;
  const filters = parseFilters(o.filters);
  const addTags = parseTags(o.addTags);

  if (!archives.includes(archiveName)) {
    throw badRequest(`archive name "${archiveName}" does not exist in the list of archives`);
  }
  if (startTsMs === undefined) throw badRequest('startTsMs is required');
  if (endTsMs === undefined) throw badRequest('endTsMs is required');
  if (startTsMs < 0 || endTsMs < 0) throw badRequest('startTsMs and endTsMs must be non-negative Unix ms');
  if (startTsMs > endTsMs) throw badRequest(`startTsMs (${startTsMs}) must not be after endTsMs (${endTsMs})`);

  let retentionMs = 0;
  if (retentionUnit !== undefined && !(retentionUnit in RETENTION_UNITS)) {
    throw badRequest(`retentionDurationUnit "${retentionUnit}" is invalid; use hours, days or weeks`);
  }
  if (retentionValue !== undefined) {
    if (retentionValue < 0) throw badRequest('retentionDurationValue must not be negative');
    if (retentionUnit === undefined && retentionValue > 0) {
      throw badRequest('retentionDurationUnit (hours, days or weeks) is required with retentionDurationValue');
    }
    if (retentionUnit !== undefined) retentionMs = retentionValue * RETENTION_UNITS[retentionUnit as RetentionUnit];
  }
  // Compile once here so a bad regex is a 400 at submission, not a FAILED job.
  compileFilters(filters);
  return { archiveName, startTsMs, endTsMs, retentionMs, filters, addTags, isDryRun };
}

function parseFilters(v: unknown): HydrationFilter[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw unmarshal('filters', v, '[]HydrationFilter');
  return v.map((raw, i) => {
    const at = `filters[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw unmarshal(at, raw, 'HydrationFilter');
    const f = raw as Json;
    const field = optString(f, 'field') ?? '';
    const operation = optString(f, 'operation');
    const value = optString(f, 'value');
    const type = optString(f, 'type') ?? 'labels';
    if (operation === undefined || operation === '') throw badRequest(`${at}: operation is required`);
    if (!FILTER_OPERATIONS.includes(operation as FilterOperation)) {
      throw badRequest(`${at}: operation "${operation}" is invalid; use one of ${FILTER_OPERATIONS.join(', ')}`);
    }
    if (value === undefined) throw badRequest(`${at}: value is required`);
    const t = type === '' ? 'labels' : type;
    if (!FILTER_TYPES.includes(t as FilterType)) {
      throw badRequest(`${at}: type "${type}" is invalid; use labels or message`);
    }
    if (t === 'labels' && field === '') throw badRequest(`${at}: field is required when type is labels`);
    if (t === 'message' && field !== '') throw badRequest(`${at}: field must be omitted or empty when type is message`);
    return { field, operation: operation as FilterOperation, value, type: t as FilterType };
  });
}

function parseTags(v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw unmarshal('addTags', v, 'map[string]string');
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v as Json)) {
    if (typeof val !== 'string') throw unmarshal(`addTags.${k}`, val, 'string');
    if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(k)) throw badRequest(`addTags: "${k}" is not a valid label name`);
    out[k] = val;
  }
  return out;
}

/** `{jobId}` bodies of job-progress, pause, resume and cancel. */
export function parseJobId(body: unknown, operation: string): string {
  const o = asObject(body);
  const jobId = optString(o, 'jobId');
  if (jobId === undefined || jobId === '') throw badRequest(`${operation} failed: jobId is required`);
  return jobId;
}

export interface ListJobsRequest {
  startTsMs?: number;
  endTsMs?: number;
  count?: number;
  offset: number;
}

export function parseListJobs(body: unknown): ListJobsRequest {
  const o = body === undefined ? {} : asObject(body);
  const count = optInt(o, 'count');
  const offset = optInt(o, 'offset') ?? 0;
  if (count !== undefined && count < 0) throw badRequest('count must not be negative');
  if (offset < 0) throw badRequest('offset must not be negative');
  // Clients that serialise every field send zero values for the ones they leave unset (a Go
  // struct's `count: 0`, `endTsMs: 0`); SPEC's default for count is "all", and no archive range
  // ends at or before 1970, so 0 means "not given" for both.
  const endTsMs = optInt(o, 'endTsMs');
  return {
    startTsMs: optInt(o, 'startTsMs'),
    endTsMs: endTsMs === 0 ? undefined : endTsMs,
    count: count === 0 ? undefined : count,
    offset,
  };
}
