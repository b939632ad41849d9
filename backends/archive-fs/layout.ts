/**
 * The archive layout of OPERATIONS.md ("Archive layout"), shared by every archive source, the
 * archiver and hydration: gzip-compressed NDJSON objects under `YYYY/MM/DD/HH/<name>.ndjson.gz`
 * (UTC hours), relative to the archive root (fs directory, or S3 bucket + prefix).
 */

export const HOUR_MS = 3_600_000;

/** Suffix of archive objects; other files in a partition are not archive data. */
export const OBJECT_SUFFIX = '.ndjson.gz';

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Start (Unix ms) of the UTC hour containing `ms`. */
export function hourStart(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

/** `YYYY/MM/DD/HH/` of the UTC hour containing `hourStartMs` (no leading slash). */
export function hourPartition(hourStartMs: number): string {
  const d = new Date(hourStart(hourStartMs));
  return `${pad(d.getUTCFullYear(), 4)}/${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())}/${pad(d.getUTCHours())}/`;
}

/** Hour starts of every partition overlapping [startMs, endMs] (inclusive), ascending. */
export function hoursOverlapping(startMs: number, endMs: number): { first: number; count: number } {
  if (endMs < startMs) return { first: hourStart(startMs), count: 0 };
  const first = hourStart(startMs);
  return { first, count: (hourStart(endMs) - first) / HOUR_MS + 1 };
}

/** Normalizes a configured prefix: no leading or trailing slashes ("" = keys start at `YYYY/`). */
export function normalizePrefix(prefix: string | undefined): string {
  return (prefix ?? '').replace(/^\/+/, '').replace(/\/+$/, '');
}

/** One archived log line, as written in the objects. */
export interface ArchivedLine {
  timestampMs: number;
  message: string;
  labels: Record<string, string>;
  facets: Record<string, string | number | boolean>;
}
