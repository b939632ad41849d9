/**
 * HTTP routes of SPEC.md "Hydration (base path /hydration/query)". Family 'plain': every client
 * error is a 400 with a plain-text body (403 "Forbidden" for the Admin rule, 429 for the
 * concurrency limit).
 */
import { randomUUID } from 'node:crypto';
import { LookoutError, badRequest } from '../../kernel/errors.js';
import type { RequestContext } from '../../kernel/http/routes.js';
import type { PluginContext } from '../../kernel/plugin.js';
import type { ArchiveRegistry } from '../../kernel/services.js';
import { requireAdminForHydration } from '../rbac/index.js';
import { jobSummary, viewOf, type JobStatus, type StoredJob } from './model.js';
import { parseHydrateRequest, parseJobId, parseListJobs } from './request.js';
import type { JobRunner } from './runner.js';
import type { ControlOperation, JobStore } from './store.js';

export const HYDRATION_BASE = '/hydration/query';

export interface HydrationRouteDeps {
  store: () => JobStore;
  runner: () => JobRunner;
  archives: ArchiveRegistry;
  now: () => number;
}

/** "names the operation, job id and current status" (SPEC.md "Errors"). */
function jobError(op: string, jobId: string, status: JobStatus | undefined, why: string): LookoutError {
  return badRequest(`${op} failed for job ${jobId}: current status is ${status ?? 'UNKNOWN'}; ${why}`);
}

const CONTROL_TEXT: Record<ControlOperation, { need: string; done: string }> = {
  pause: { need: 'only a HYDRATING job can be paused', done: 'job paused' },
  resume: { need: 'only a PAUSED job can be resumed', done: 'job resumed' },
  cancel: { need: 'a DONE or FAILED job cannot be canceled', done: 'job canceled' },
};

async function bodyOrEmpty(ctx: RequestContext): Promise<unknown> {
  const b = await ctx.body();
  return b.length === 0 || b.toString('utf8').trim() === '' ? undefined : ctx.json();
}

export function registerHydrationRoutes(ctx: PluginContext, deps: HydrationRouteDeps): void {
  const maxJobs = ctx.config.hydration.maxConcurrentJobs;
  const route = (method: 'GET' | 'POST', path: string, handler: (r: RequestContext) => Promise<unknown> | unknown) =>
    ctx.route({ method, path: HYDRATION_BASE + path, family: 'plain', auth: 'bearer', handler });

  route('GET', '/list-archives', () => deps.archives.names().map((name) => ({ name })));

  route('POST', '/hydrate', async (r) => {
    requireAdminForHydration(r.principal, ctx.config);
    const req = parseHydrateRequest(await r.json(), deps.archives.names());
    const now = deps.now();
    const job: StoredJob = {
      jobId: randomUUID(),
      archiveName: req.archiveName,
      archiveStartTsMs: req.startTsMs,
      archiveEndTsMs: req.endTsMs,
      archiveFilters: req.filters,
      isDryRun: req.isDryRun,
      jobStatus: 'INIT',
      createdAtMs: now,
      lastUpdatedAtMs: now,
      errorMsg: null,
      addTags: req.addTags,
      retentionMs: req.retentionMs,
      counters: { totalHours: 0, completedHours: 0, totalLines: 0, filteredLines: 0, malformedLines: 0 },
      position: { hour: 0, key: '', line: 0 },
    };
    if (!(await deps.store().create(job, maxJobs))) {
      throw new LookoutError('rate_limited', 'too many concurrent jobs', { status: 429 });
    }
    deps.runner().drive(job.jobId);
    return { jobId: job.jobId };
  });

  route('POST', '/job-progress', async (r) => {
    const jobId = parseJobId(await r.json(), 'job-progress');
    const job = await deps.store().get(jobId);
    if (!job) throw jobError('job-progress', jobId, undefined, 'no such job');
    return { jobId, jobStatus: job.jobStatus, jobSummary: jobSummary(job.counters) };
  });

  route('POST', '/list-jobs', async (r) => {
    const q = parseListJobs(await bodyOrEmpty(r));
    const jobs = (await deps.store().list())
      .filter((j) => q.startTsMs === undefined || j.archiveStartTsMs >= q.startTsMs)
      .filter((j) => q.endTsMs === undefined || j.archiveEndTsMs <= q.endTsMs)
      // Newest first; the id breaks ties so pages are stable.
      .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.jobId < b.jobId ? -1 : 1));
    const page = jobs.slice(q.offset, q.count === undefined ? undefined : q.offset + q.count);
    return page.map(viewOf);
  });

  for (const op of ['pause', 'resume', 'cancel'] as const) {
    route('POST', '/' + op, async (r) => {
      requireAdminForHydration(r.principal, ctx.config);
      const jobId = parseJobId(await r.json(), op);
      const res = await deps.store().control(jobId, op);
      if (!res.before) throw jobError(op, jobId, undefined, 'no such job');
      if (!res.allowed) throw jobError(op, jobId, res.before.jobStatus, CONTROL_TEXT[op].need);
      if (op === 'resume') deps.runner().drive(jobId);
      else if (res.recordsUpdated > 0) await deps.runner().settle(jobId);
      return {
        jobId,
        // The status the job had when the request arrived (SPEC.md "States and transitions").
        jobStatus: res.before.jobStatus,
        recordsUpdated: res.recordsUpdated,
        message: res.recordsUpdated === 0 ? `job already ${res.before.jobStatus.toLowerCase()}` : CONTROL_TEXT[op].done,
      };
    });
  }
}
