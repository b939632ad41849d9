/**
 * How replayed lines are recognised: every line hydration writes carries this label (the job id),
 * so users can query one job's lines and the archiver never archives them a second time.
 */
import type { LogRecord } from '../../kernel/models.js';

export const HYDRATION_JOB_LABEL = 'hydration_job_id';
/** Facet with the Unix ms after which a replayed line is past its job's retention. */
export const HYDRATION_EXPIRES_FACET = 'hydration_expires_at_ms';

export function isHydrated(r: LogRecord): boolean {
  return r.labels[HYDRATION_JOB_LABEL] !== undefined;
}
