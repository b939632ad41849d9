/**
 * The hydration worker. A job reads every hour partition overlapping its range, in order, and
 * within an hour every object in key order; lines inside the range that pass the filters are
 * replayed through the ingest pipeline in batches. After each batch the progress (counters and
 * the position: hour, object, line) is saved with the batch already written, and the job's
 * status is read back: that is where pause, cancel and shutdown take effect. A job resumed —
 * after a pause or a restart — continues from the saved position, so a graceful stop loses and
 * duplicates nothing; after a crash at most the one batch written after the last save is
 * replayed again.
 */
import type { Archive, ArchiveObject } from '../../kernel/extension-points.js';
import type { Logger } from '../../kernel/logger.js';
import { normalizeLabels, type IngestBatch, type LogRecord } from '../../kernel/models.js';
import type { ArchiveRegistry } from '../../kernel/services.js';
import { HOUR_MS, hoursOverlapping, type ArchivedLine } from '../../backends/archive-fs/layout.js';
import { compileFilters } from './filters.js';
import { gunzipLines, msToNs, parseArchivedLine } from './lines.js';
import { HYDRATION_EXPIRES_FACET, HYDRATION_JOB_LABEL } from './marker.js';
import type { JobCounters, JobPosition, StoredJob } from './model.js';
import type { JobStore } from './store.js';

export interface RunnerOptions {
  store: JobStore;
  archives: ArchiveRegistry;
  write: (batch: IngestBatch) => Promise<void>;
  now: () => number;
  logger: Logger;
  /** Lines per replayed batch. */
  batchSize: number;
  /** Pause between batches (throttles replay); 0 = none. */
  batchDelayMs: number;
}

interface Active {
  /** Run again after the current pass (a resume arrived while it was winding down). */
  wake: boolean;
  /** Check the job's status at the next line rather than at the next batch. */
  interrupt: boolean;
  /** Wakes a throttling sleep early. */
  alarm?: () => void;
  /** Called when the current pass ends (see {@link JobRunner.settle}). */
  waiters: (() => void)[];
  done: Promise<void>;
}

/** Thrown to leave the replay loop when the job must not go on (paused, canceled, shutdown). */
class Stop extends Error {}
/** A failure that already says what failed (kept as is by the per-object error wrapping). */
class ReplayError extends Error {}

export class JobRunner {
  private readonly active = new Map<string, Active>();
  private stopping = false;

  constructor(private readonly o: RunnerOptions) {}

  /** Makes sure a worker runs the job (idempotent). */
  drive(jobId: string): void {
    if (this.stopping) return;
    const cur = this.active.get(jobId);
    if (cur) {
      cur.wake = true;
      this.poke(jobId);
      return;
    }
    const entry: Active = { wake: false, interrupt: false, waiters: [], done: Promise.resolve() };
    this.active.set(jobId, entry);
    entry.done = (async () => {
      try {
        do {
          entry.wake = false;
          try {
            await this.runOnce(jobId, entry);
          } finally {
            for (const w of entry.waiters.splice(0)) w();
          }
        } while (entry.wake && !this.stopping);
      } catch (e) {
        this.o.logger.error('hydration worker crashed', { jobId, err: e });
      } finally {
        this.active.delete(jobId);
      }
    })();
  }

  /** Asks a running worker to look at its job's status now (after pause or cancel). */
  poke(jobId: string): void {
    const a = this.active.get(jobId);
    if (!a) return;
    a.interrupt = true;
    a.alarm?.();
  }

  /**
   * After pause or cancel: resolves once the job's worker has seen the new status and saved its
   * progress (at most one batch later), so the answer to the request is the job's final state;
   * gives up waiting after `timeoutMs`.
   */
  settle(jobId: string, timeoutMs = 10_000): Promise<void> {
    const a = this.active.get(jobId);
    if (!a) return Promise.resolve();
    this.poke(jobId);
    return new Promise<void>((res) => {
      const t = setTimeout(res, timeoutMs);
      a.waiters.push(() => {
        clearTimeout(t);
        res();
      });
    });
  }

  /** Stops every worker at its next line or batch; their jobs stay resumable. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const id of this.active.keys()) this.poke(id);
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
  }

  private async runOnce(jobId: string, entry: Active): Promise<void> {
    const { store } = this.o;
    let job = await store.get(jobId);
    if (job?.jobStatus === 'INIT') job = await store.begin(jobId);
    if (!job || job.jobStatus !== 'HYDRATING') return;
    const counters: JobCounters = { ...job.counters };
    const pos: JobPosition = { ...job.position };
    try {
      await this.replay(job, entry, counters, pos);
    } catch (e) {
      if (e instanceof Stop) return;
      const msg = e instanceof Error ? e.message : String(e);
      this.o.logger.warn('hydration job failed', { jobId, err: msg });
      await store.finish(jobId, 'FAILED', counters, pos, msg);
      return;
    }
    await store.finish(jobId, 'DONE', counters, pos, null);
  }

  private async replay(job: StoredJob, entry: Active, counters: JobCounters, pos: JobPosition): Promise<void> {
    const archive = this.o.archives.get(job.archiveName);
    if (!archive) throw new Error(`archive "${job.archiveName}" is no longer configured`);
    const keep = compileFilters(job.archiveFilters);
    const { first, count } = hoursOverlapping(job.archiveStartTsMs, job.archiveEndTsMs);
    counters.totalHours = count;
    const start = job.archiveStartTsMs;
    const end = job.archiveEndTsMs;
    const batchSize = Math.max(1, this.o.batchSize);
    let pending: LogRecord[] = [];
    let unsaved = 0;
    let lastSave = this.o.now();

    /** Writes pending lines, saves progress, and throws Stop unless the job may go on. */
    const save = async (): Promise<void> => {
      if (pending.length > 0) {
        const logs = pending;
        pending = [];
        await this.o.write({ logs }).catch((e: unknown) => {
          throw new ReplayError(`writing replayed lines: ${errText(e)}`);
        });
      }
      unsaved = 0;
      entry.interrupt = false;
      const status = await this.o.store.checkpoint(job.jobId, { ...counters }, { ...pos });
      lastSave = this.o.now();
      if (status !== 'HYDRATING' || this.stopping) throw new Stop();
    };
    const throttle = async (): Promise<void> => {
      if (this.o.batchDelayMs <= 0) return;
      await new Promise<void>((res) => {
        const t = setTimeout(res, this.o.batchDelayMs);
        entry.alarm = () => {
          clearTimeout(t);
          res();
        };
      });
      entry.alarm = undefined;
      if (entry.interrupt || this.stopping) await save();
    };

    for (let h = pos.hour; h < count; h++) {
      const hourMs = first + h * HOUR_MS;
      const objects = await listHour(archive, hourMs);
      for (const obj of objects) {
        if (h === pos.hour && pos.key !== '' && obj.key < pos.key) continue;
        const skip = h === pos.hour && obj.key === pos.key ? pos.line : 0;
        pos.hour = h;
        pos.key = obj.key;
        pos.line = skip;
        let lineNo = 0;
        const src = await archive.read(obj.key).catch((e: unknown) => {
          throw new Error(`reading object "${obj.key}" of archive "${archive.name}": ${errText(e)}`);
        });
        try {
          for await (const text of gunzipLines(src)) {
            lineNo++;
            if (lineNo <= skip) continue;
            pos.line = lineNo;
            unsaved++;
            if (text.trim() !== '') {
              const line = parseArchivedLine(text);
              if (!line) counters.malformedLines++;
              else if (line.timestampMs >= start && line.timestampMs <= end) {
                counters.totalLines++;
                if (keep(line)) {
                  counters.filteredLines++;
                  if (!job.isDryRun) pending.push(this.toRecord(job, line));
                }
              }
            }
            if (pending.length >= batchSize || (job.isDryRun && unsaved >= batchSize)) {
              await save();
              await throttle();
            } else if (entry.interrupt || this.stopping || unsaved >= batchSize * 10) {
              await save();
            }
          }
        } catch (e) {
          if (e instanceof Stop || e instanceof ReplayError) throw e;
          throw new Error(`reading object "${obj.key}" of archive "${archive.name}": ${errText(e)}`);
        }
      }
      counters.completedHours = h + 1;
      pos.hour = h + 1;
      pos.key = '';
      pos.line = 0;
      // Empty hours are cheap: save them at most once a second, so long empty ranges stay fast.
      if (pending.length > 0 || entry.interrupt || this.stopping || this.o.now() - lastSave >= 1000) await save();
    }
    if (pending.length > 0) {
      await this.o.write({ logs: pending.splice(0) }).catch((e: unknown) => {
        throw new ReplayError(`writing replayed lines: ${errText(e)}`);
      });
    }
  }

  private toRecord(job: StoredJob, line: ArchivedLine): LogRecord {
    const labels = normalizeLabels({
      ...line.labels,
      ...job.addTags,
      svc_stream: 'logs',
      [HYDRATION_JOB_LABEL]: job.jobId,
    });
    const facets =
      job.retentionMs > 0
        ? { ...line.facets, [HYDRATION_EXPIRES_FACET]: this.o.now() + job.retentionMs }
        : line.facets;
    return { timestampNs: msToNs(line.timestampMs), message: line.message, labels, facets };
  }
}

async function listHour(archive: Archive, hourMs: number): Promise<ArchiveObject[]> {
  const out: ArchiveObject[] = [];
  try {
    for await (const o of archive.listHour(hourMs)) out.push(o);
  } catch (e) {
    throw new Error(`listing hour ${new Date(hourMs).toISOString()} of archive "${archive.name}": ${errText(e)}`);
  }
  out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return out;
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
