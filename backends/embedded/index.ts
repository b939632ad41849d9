/**
 * The embedded storage backend (`storage.backend: embedded`, the default): per-signal WALs and
 * segment files under `<dataDir>/embedded/`. See docs/storage.md for the layout and policies.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseDurationMs } from '../../kernel/config.js';
import type { Logger } from '../../kernel/logger.js';
import { definePlugin } from '../../kernel/plugin.js';
import type { StorageBackend } from '../../kernel/storage.js';
import { EmbeddedEventStore } from './events.js';
import { EmbeddedLogStore } from './logs.js';
import { EmbeddedMetaStore } from './meta.js';
import { EmbeddedMetricStore } from './metrics.js';
import { EmbeddedTraceStore } from './traces.js';
import { mergePolicy, type MergeSettings } from './segment-merge.js';
import type { FsyncPolicy } from './wal.js';

export interface EmbeddedOptions {
  /** The backend's own directory (usually `<dataDir>/embedded`). */
  dir: string;
  logger: Logger;
  fsync?: FsyncPolicy;
  fsyncIntervalMs?: number;
  /** Retention per signal in ms (0 = keep forever). */
  retentionMs?: { metrics: number; logs: number; traces: number; events: number };
  outOfOrderWindowMs?: number;
  /** Background maintenance period (head flush checks, compaction, retention); 0 disables. */
  maintenanceIntervalMs?: number;
  /** Size limits before a head is flushed into segments (tests make these small). */
  metricsMaxHeadSamples?: number;
  /** Memory for the newest metric segments' chunk bytes (`storage.metricsCacheBytes`). */
  metricsCacheBytes?: number;
  logsMaxHeadRecords?: number;
  /** Spans / events in their heads before a flush into a segment. */
  tracesMaxHeadSpans?: number;
  eventsMaxHeadEvents?: number;
  /**
   * Background merging of small log, span and event segments (see segment-merge.ts). Absent =
   * off for direct callers (tests, benchmarks); the plugin always passes the configured policy.
   */
  merge?: MergeSettings;
  now?: () => number;
}

export interface MaintenanceReport {
  flushedSamples: number;
  flushedLogs: number;
  compacted: number;
  expiredSegments: number;
  /** Merges of small log, span and event segments done by this pass. */
  mergedSegments: number;
}

export interface EmbeddedBackend extends StorageBackend {
  readonly metrics: EmbeddedMetricStore;
  readonly logs: EmbeddedLogStore;
  readonly traces: EmbeddedTraceStore;
  readonly events: EmbeddedEventStore;
  readonly meta: EmbeddedMetaStore;
  /**
   * One maintenance pass: flush heads into segments (when `flush` or when they are old/large),
   * compact, then apply retention as of `now`.
   */
  maintenance(opts?: { now?: number; flush?: boolean }): Promise<MaintenanceReport>;
  sizes(): Record<string, number>;
  dropped(): Record<string, number>;
}

export function openEmbeddedBackend(o: EmbeddedOptions): EmbeddedBackend {
  mkdirSync(o.dir, { recursive: true });
  const fsync = o.fsync ?? 'interval';
  const fsyncIntervalMs = o.fsyncIntervalMs ?? 100;
  const common = { fsync, fsyncIntervalMs, logger: o.logger };
  const retention = o.retentionMs ?? { metrics: 0, logs: 0, traces: 0, events: 0 };
  const now = o.now ?? Date.now;
  const started = performance.now();
  const metrics = new EmbeddedMetricStore({
    ...common,
    dir: join(o.dir, 'metrics'),
    outOfOrderWindowMs: o.outOfOrderWindowMs ?? 3600_000,
    maxHeadSamples: o.metricsMaxHeadSamples,
    cacheBytes: o.metricsCacheBytes,
  });
  const logs = new EmbeddedLogStore({ ...common, dir: join(o.dir, 'logs'), maxHeadRecords: o.logsMaxHeadRecords });
  const traces = new EmbeddedTraceStore({ ...common, dir: join(o.dir, 'traces'), name: 'traces', maxHeadSpans: o.tracesMaxHeadSpans });
  const events = new EmbeddedEventStore({ ...common, dir: join(o.dir, 'events'), name: 'events', maxHeadEvents: o.eventsMaxHeadEvents });
  const meta = new EmbeddedMetaStore(join(o.dir, 'meta'), o.logger);
  meta.open();
  metrics.open();
  logs.open();
  traces.open();
  events.open();
  o.logger.info('embedded storage opened', {
    dir: o.dir,
    ms: Math.round(performance.now() - started),
    metrics: metrics.stats(),
    logs: logs.stats(),
    traces: traces.stats(),
    events: events.stats(),
  });

  let lastHeadFlush = now();
  const maintenance = async (m: { now?: number; flush?: boolean } = {}): Promise<MaintenanceReport> => {
    const at = m.now ?? now();
    // Heads are flushed at least every hour so the WAL (and restart time) stays bounded.
    const flush = m.flush ?? at - lastHeadFlush >= 3600_000;
    const report: MaintenanceReport = { flushedSamples: 0, flushedLogs: 0, compacted: 0, expiredSegments: 0, mergedSegments: 0 };
    if (flush) {
      lastHeadFlush = at;
      report.flushedSamples = await metrics.serial(() => metrics.flushHead());
      report.flushedLogs = await logs.serial(() => logs.flushHead());
      await traces.wal.serial(() => traces.flushHead());
      await events.wal.serial(() => events.flushHead());
    }
    report.compacted = await metrics.serial(() => metrics.compact());
    report.expiredSegments += await metrics.serial(() => metrics.applyRetention(at, retention.metrics));
    report.expiredSegments += await logs.serial(() => logs.applyRetention(at, retention.logs));
    report.expiredSegments += await traces.wal.serial(() => traces.applyRetention(at, retention.traces));
    report.expiredSegments += await events.wal.serial(() => events.applyRetention(at, retention.events));
    // After retention, outside the maintenance chains: head flushes and appends go on meanwhile.
    if (o.merge) {
      report.mergedSegments += await logs.mergeSegments(mergePolicy(retention.logs, o.merge));
      report.mergedSegments += await traces.mergeSegments(mergePolicy(retention.traces, o.merge));
      report.mergedSegments += await events.mergeSegments(mergePolicy(retention.events, o.merge));
    }
    return report;
  };

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  const period = o.maintenanceIntervalMs ?? 60_000;
  if (period > 0) {
    timer = setInterval(() => {
      if (running) return;
      running = maintenance()
        .catch((e) => o.logger.error('storage maintenance failed', { err: e }))
        .finally(() => (running = undefined));
    }, period);
    timer.unref();
  }

  return {
    name: 'embedded',
    metrics,
    logs,
    traces,
    events,
    meta,
    maintenance,
    async flush() {
      await Promise.all([metrics.flush(), logs.flush(), traces.flush(), events.flush(), meta.flush()]);
    },
    async close() {
      if (timer) clearInterval(timer);
      // A merge in progress is abandoned rather than waited for (its inputs stay as they are).
      await Promise.all([logs.stopMerging(), traces.stopMerging(), events.stopMerging()]);
      await running;
      // A clean shutdown flushes heads into segments so the next start has little WAL to replay.
      await metrics.close({ flushHead: true });
      await logs.close({ flushHead: true });
      await traces.close({ flushHead: true });
      await events.close({ flushHead: true });
      await meta.close();
    },
    dropped() {
      return { out_of_order_window: metrics.droppedOutOfBounds };
    },
    sizes() {
      const m = metrics.stats();
      const l = logs.stats();
      return {
        metrics: m.segmentBytes + m.walBytes,
        logs: l.segmentBytes + l.walBytes,
        traces: traces.bytes(),
        events: events.bytes(),
        meta: meta.bytes(),
      };
    },
  };
}

export default definePlugin({
  name: 'storage-embedded',
  description: 'Embedded persistent storage: per-signal write-ahead logs, compressed segments, retention.',
  register(ctx) {
    ctx.extensions.storageBackend({
      name: 'embedded',
      create: async ({ config, logger, dataDir }) => {
        const r = config.storage.retention;
        return openEmbeddedBackend({
          dir: join(dataDir, 'embedded'),
          logger: logger.child({ component: 'storage' }),
          fsync: config.storage.fsync,
          fsyncIntervalMs: config.storage.fsyncIntervalMs,
          retentionMs: {
            metrics: parseDurationMs(r.metrics),
            logs: parseDurationMs(r.logs),
            traces: parseDurationMs(r.traces),
            events: parseDurationMs(r.events),
          },
          outOfOrderWindowMs: parseDurationMs(config.storage.outOfOrderWindow),
          metricsCacheBytes: config.storage.metricsCacheBytes,
          merge: {
            windowMs: parseDurationMs(config.storage.merge?.window ?? '1d'),
            maxBytes: config.storage.merge?.maxSegmentBytes,
          },
        });
      },
    });
  },
});
