/**
 * The archiver (OPERATIONS.md `archiver`): when enabled, every log line that reaches storage
 * through the ingest pipeline is also written to the named archive, in the archive layout,
 * every `archiver.flushSeconds` and on shutdown. Lines replayed by hydration carry the
 * hydration job label and are not archived again.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import { isHydrated } from '../hydration/marker.js';
import { ArchiveWriter } from './writer.js';

/** Buffered lines that trigger a flush before the timer does (bounds memory under load). */
const EARLY_FLUSH_LINES = 100_000;

export default definePlugin({
  name: 'archiver',
  description: 'Writes every ingested log line to an archive (archive layout), for later hydration.',
  register(ctx) {
    const cfg = ctx.config.archiver;
    if (!cfg.enabled) return;
    const ingest = ctx.get(Tokens.Ingest);
    const metrics = ctx.get(Tokens.Metrics);
    let writer: ArchiveWriter | undefined;
    let timer: NodeJS.Timeout | undefined;
    const lines = metrics.counter('lookout_archiver_lines_total', 'Log lines written to the archive.');
    const errors = metrics.counter('lookout_archiver_flush_errors_total', 'Archive flushes that failed.');
    metrics
      .gauge('lookout_archiver_buffered_lines', 'Log lines waiting for the next archive flush.')
      .collect(() => [[{}, writer?.bufferedLines ?? 0]]);

    const flush = async (): Promise<void> => {
      if (!writer) return;
      const before = writer.written;
      try {
        await writer.flush();
      } catch (e) {
        errors.inc({ archive: cfg.archive });
        ctx.logger.warn('archive flush failed; lines kept for the next flush', { archive: cfg.archive, err: e });
      }
      lines.inc({ archive: cfg.archive }, writer.written - before);
    };

    ingest.onBatch((batch) => {
      if (!writer || !batch.logs?.length) return;
      const fresh = batch.logs.filter((r) => !isHydrated(r));
      if (fresh.length === 0) return;
      writer.add(fresh);
      if (writer.bufferedLines >= EARLY_FLUSH_LINES) void flush();
    });

    ctx.onStart(() => {
      const archive = ctx.get(Tokens.Archives).get(cfg.archive);
      if (!archive) throw new Error(`archiver.archive "${cfg.archive}" is not one of the configured archives`);
      if (!archive.write) throw new Error(`archiver.archive "${cfg.archive}" cannot be written to`);
      writer = new ArchiveWriter(archive as typeof archive & { write: NonNullable<typeof archive.write> });
      timer = setInterval(() => void flush(), cfg.flushSeconds * 1000);
      timer.unref();
    });
    ctx.onStop(async () => {
      if (timer) clearInterval(timer);
      await flush();
    });
  },
});
