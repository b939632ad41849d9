/**
 * Hydration jobs as SPEC.md "Hydration job" describes them, plus what the worker keeps to resume
 * one (position, counters). Jobs are persisted in the MetaStore as {@link StoredJob}.
 */
import type { MetaValue } from '../../kernel/storage.js';

export type JobStatus = 'INIT' | 'HYDRATING' | 'PAUSED' | 'DONE' | 'FAILED' | 'CANCELED';

export type FilterOperation = 'eq' | 'neq' | 'contains' | 'ncontains' | 'regex' | 'nregex';
export type FilterType = 'labels' | 'message';

export const FILTER_OPERATIONS: readonly FilterOperation[] = ['eq', 'neq', 'contains', 'ncontains', 'regex', 'nregex'];
export const FILTER_TYPES: readonly FilterType[] = ['labels', 'message'];

export interface HydrationFilter {
  field: string;
  operation: FilterOperation;
  value: string;
  type: FilterType;
}

export type RetentionUnit = 'hours' | 'days' | 'weeks';
export const RETENTION_UNITS: Readonly<Record<RetentionUnit, number>> = {
  hours: 3_600_000,
  days: 86_400_000,
  weeks: 604_800_000,
};

/** Counters behind `jobSummary` (OPERATIONS.md "Archive layout"). */
export interface JobCounters {
  totalHours: number;
  completedHours: number;
  /** Lines read inside the range. */
  totalLines: number;
  /** Lines that passed the filters (replayed, or that a dry run would replay). */
  filteredLines: number;
  /** Lines that were not a valid archive record (skipped, not in totalLines). */
  malformedLines: number;
}

/**
 * Where the worker resumes: hour `hour` (index from the first partition), the object `key`
 * within it (objects sorted by key; "" = from the first), and `line` lines already consumed
 * of that object.
 */
export interface JobPosition {
  hour: number;
  key: string;
  line: number;
}

export interface StoredJob {
  jobId: string;
  archiveName: string;
  archiveStartTsMs: number;
  archiveEndTsMs: number;
  archiveFilters: HydrationFilter[];
  isDryRun: boolean;
  jobStatus: JobStatus;
  createdAtMs: number;
  lastUpdatedAtMs: number;
  errorMsg: string | null;
  addTags: Record<string, string>;
  /** Retention of replayed lines in ms (0 = kept as long as storage keeps logs). */
  retentionMs: number;
  counters: JobCounters;
  position: JobPosition;
}

/** The public shape (SPEC.md "Hydration job"). */
export interface JobView {
  jobId: string;
  archiveName: string;
  archiveStartTsMs: number;
  archiveEndTsMs: number;
  archiveFilters: HydrationFilter[];
  isDryRun: boolean;
  jobStatus: JobStatus;
  jobSummary: string;
  createdAtMs: number;
  lastUpdatedAtMs: number;
  errorMsg: string | null;
}

export function jobSummary(c: JobCounters): string {
  return JSON.stringify({
    totalHours: c.totalHours,
    completedHours: c.completedHours,
    totalLines: c.totalLines,
    filteredLines: c.filteredLines,
    malformedLines: c.malformedLines,
  });
}

export function viewOf(j: StoredJob): JobView {
  return {
    jobId: j.jobId,
    archiveName: j.archiveName,
    archiveStartTsMs: j.archiveStartTsMs,
    archiveEndTsMs: j.archiveEndTsMs,
    archiveFilters: j.archiveFilters,
    isDryRun: j.isDryRun,
    jobStatus: j.jobStatus,
    jobSummary: jobSummary(j.counters),
    createdAtMs: j.createdAtMs,
    lastUpdatedAtMs: j.lastUpdatedAtMs,
    errorMsg: j.errorMsg,
  };
}

/** Jobs in these statuses count against hydration.maxConcurrentJobs. */
export function isActive(s: JobStatus): boolean {
  return s === 'INIT' || s === 'HYDRATING';
}

export function toMeta(j: StoredJob): MetaValue {
  return JSON.parse(JSON.stringify(j)) as MetaValue;
}

/** Reads a stored job back; the MetaStore only holds what {@link toMeta} wrote. */
export function fromMeta(v: MetaValue | undefined): StoredJob | undefined {
  if (v === undefined || v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  return v as unknown as StoredJob;
}
