import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedBackend, type EmbeddedBackend } from '../../backends/embedded/index.js';
import { createLogger } from '../../kernel/logger.js';
import type { StorageBackend } from '../../kernel/storage.js';
import { storageConformance } from './conformance.js';

const DAY = 86_400_000;

storageConformance('embedded', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-embedded-'));
  return {
    persistent: true,
    open: async () =>
      openEmbeddedBackend({
        dir,
        logger: createLogger('error'),
        fsync: 'interval',
        fsyncIntervalMs: 50,
        maintenanceIntervalMs: 0,
        retentionMs: { metrics: 15 * DAY, logs: 15 * DAY, traces: 7 * DAY, events: 15 * DAY },
      }),
    retention: async (b: StorageBackend, now: number, flush: boolean) => {
      await (b as EmbeddedBackend).maintenance({ now, flush });
    },
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});
