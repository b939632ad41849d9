/**
 * Hydration jobs in the MetaStore (collection `hydration_jobs`). Every status change is one
 * transaction that checks the current status and writes the new one, so concurrent requests and
 * the worker can never both win.
 */
import type { MetaStore } from '../../kernel/storage.js';
import {
  fromMeta,
  isActive,
  toMeta,
  type JobCounters,
  type JobPosition,
  type JobStatus,
  type StoredJob,
} from './model.js';

const COLLECTION = 'hydration_jobs';

export type ControlOperation = 'pause' | 'resume' | 'cancel';

/** Which statuses each control operation accepts, and what it moves the job to. */
const RULES: Record<ControlOperation, { from: (s: JobStatus) => boolean; to: JobStatus }> = {
  pause: { from: (s) => s === 'HYDRATING', to: 'PAUSED' },
  resume: { from: (s) => s === 'PAUSED', to: 'HYDRATING' },
  // Canceling a job already CANCELED is accepted and changes nothing (recordsUpdated 0).
  cancel: { from: (s) => s !== 'DONE' && s !== 'FAILED', to: 'CANCELED' },
};

export interface ControlResult {
  /** The job as it was when the request arrived; undefined = unknown job. */
  before: StoredJob | undefined;
  /** false when the status does not allow the operation. */
  allowed: boolean;
  recordsUpdated: number;
}

export class JobStore {
  constructor(
    private readonly meta: () => MetaStore,
    private readonly now: () => number,
  ) {}

  async get(jobId: string): Promise<StoredJob | undefined> {
    return fromMeta(await this.meta().get(COLLECTION, jobId));
  }

  async list(): Promise<StoredJob[]> {
    const out: StoredJob[] = [];
    for (const [, v] of await this.meta().list(COLLECTION)) {
      const j = fromMeta(v);
      if (j) out.push(j);
    }
    return out;
  }

  /** Inserts the job unless `maxActive` jobs are already INIT or HYDRATING. */
  create(job: StoredJob, maxActive: number): Promise<boolean> {
    return this.meta().transaction((tx) => {
      let active = 0;
      for (const [, v] of tx.list(COLLECTION)) {
        const j = fromMeta(v);
        if (j && isActive(j.jobStatus)) active++;
      }
      if (active >= maxActive) return false;
      tx.put(COLLECTION, job.jobId, toMeta(job));
      return true;
    });
  }

  control(jobId: string, op: ControlOperation): Promise<ControlResult> {
    return this.meta().transaction((tx) => {
      const before = fromMeta(tx.get(COLLECTION, jobId));
      if (!before) return { before, allowed: false, recordsUpdated: 0 };
      const rule = RULES[op];
      if (!rule.from(before.jobStatus)) return { before, allowed: false, recordsUpdated: 0 };
      if (before.jobStatus === rule.to) return { before, allowed: true, recordsUpdated: 0 };
      tx.put(COLLECTION, jobId, toMeta({ ...before, jobStatus: rule.to, lastUpdatedAtMs: this.now() }));
      return { before, allowed: true, recordsUpdated: 1 };
    });
  }

  /** INIT → HYDRATING when a worker picks the job up; returns the job as it is afterwards. */
  begin(jobId: string): Promise<StoredJob | undefined> {
    return this.meta().transaction((tx) => {
      const j = fromMeta(tx.get(COLLECTION, jobId));
      if (!j || j.jobStatus !== 'INIT') return j;
      const next: StoredJob = { ...j, jobStatus: 'HYDRATING', lastUpdatedAtMs: this.now() };
      tx.put(COLLECTION, jobId, toMeta(next));
      return next;
    });
  }

  /**
   * Saves progress (always: lines already replayed must be accounted for whatever the status)
   * and returns the status the job has now, so the worker learns of pause and cancel.
   */
  checkpoint(jobId: string, counters: JobCounters, position: JobPosition): Promise<JobStatus | undefined> {
    return this.meta().transaction((tx) => {
      const j = fromMeta(tx.get(COLLECTION, jobId));
      if (!j) return undefined;
      tx.put(COLLECTION, jobId, toMeta({ ...j, counters, position, lastUpdatedAtMs: this.now() }));
      return j.jobStatus;
    });
  }

  /**
   * HYDRATING → DONE or FAILED with final progress. A job paused or canceled meanwhile keeps
   * that status (a paused job that had nothing left becomes DONE when resumed).
   */
  finish(
    jobId: string,
    status: 'DONE' | 'FAILED',
    counters: JobCounters,
    position: JobPosition,
    errorMsg: string | null,
  ): Promise<JobStatus | undefined> {
    return this.meta().transaction((tx) => {
      const j = fromMeta(tx.get(COLLECTION, jobId));
      if (!j) return undefined;
      const applies = j.jobStatus === 'HYDRATING' || (status === 'FAILED' && j.jobStatus === 'INIT');
      tx.put(
        COLLECTION,
        jobId,
        toMeta({
          ...j,
          counters,
          position,
          ...(applies ? { jobStatus: status, errorMsg } : {}),
          lastUpdatedAtMs: this.now(),
        }),
      );
      return applies ? status : j.jobStatus;
    });
  }
}
