/**
 * Buffers log records per UTC hour and writes each hour's buffer as one gzip NDJSON object in the
 * archive layout (OPERATIONS.md): `YYYY/MM/DD/HH/lookout-<start>-<pid>-<seq>.ndjson.gz`. Names
 * are unique per process start so two flushes (or two servers sharing an archive) never collide.
 */
import { gzipSync } from 'node:zlib';
import type { Archive } from '../../kernel/extension-points.js';
import type { LogRecord } from '../../kernel/models.js';
import { hourPartition, hourStart, type ArchivedLine } from '../../backends/archive-fs/layout.js';

/** Bound on buffered lines: past it the oldest hours are dropped (and counted) when writes fail. */
export const MAX_BUFFERED_LINES = 1_000_000;

export function toArchivedLine(r: LogRecord): ArchivedLine {
  return {
    timestampMs: Number(r.timestampNs / 1_000_000n),
    message: r.message,
    labels: { ...r.labels },
    facets: { ...r.facets },
  };
}

export class ArchiveWriter {
  private readonly hours = new Map<number, string[]>();
  private buffered = 0;
  private seq = 0;
  private readonly runId = `${Date.now()}-${process.pid}`;
  private flushing: Promise<void> | undefined;
  dropped = 0;
  written = 0;

  constructor(private readonly archive: Archive & { write: NonNullable<Archive['write']> }) {}

  get bufferedLines(): number {
    return this.buffered;
  }

  add(records: readonly LogRecord[]): void {
    for (const r of records) {
      const line = toArchivedLine(r);
      const h = hourStart(line.timestampMs);
      let buf = this.hours.get(h);
      if (!buf) this.hours.set(h, (buf = []));
      buf.push(JSON.stringify(line));
      this.buffered++;
    }
    this.enforceBound();
  }

  /** Writes every buffered hour; a failed hour stays buffered for the next flush. */
  flush(): Promise<void> {
    // One flush at a time: a timer tick during a slow write waits for it.
    const run = async (): Promise<void> => {
      const hours = [...this.hours.entries()].sort((a, b) => a[0] - b[0]);
      this.hours.clear();
      this.buffered = 0;
      let firstError: unknown;
      for (const [h, lines] of hours) {
        const key = `${hourPartition(h)}lookout-${this.runId}-${String(++this.seq).padStart(6, '0')}.ndjson.gz`;
        try {
          await this.archive.write(key, gzipSync(lines.join('\n') + '\n'));
          this.written += lines.length;
        } catch (e) {
          firstError ??= e;
          const cur = this.hours.get(h);
          this.hours.set(h, cur ? [...lines, ...cur] : lines);
          this.buffered += lines.length;
        }
      }
      this.enforceBound();
      if (firstError !== undefined) throw firstError;
    };
    const p = (this.flushing ?? Promise.resolve()).then(run, run);
    this.flushing = p.catch(() => undefined);
    return p;
  }

  private enforceBound(): void {
    while (this.buffered > MAX_BUFFERED_LINES && this.hours.size > 0) {
      const oldest = Math.min(...this.hours.keys());
      const n = this.hours.get(oldest)!.length;
      this.hours.delete(oldest);
      this.buffered -= n;
      this.dropped += n;
    }
  }
}
