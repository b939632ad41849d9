/**
 * The hydration plugin: SPEC.md "Hydration" — replays archived logs (OPERATIONS.md "Archive
 * layout") back into storage as asynchronous, persisted jobs that can be paused, resumed and
 * canceled. Jobs live in the MetaStore; jobs that were INIT or HYDRATING when the server stopped
 * (or crashed) resume from their last saved position at the next start.
 *
 * pluginOptions.hydration: `batchSize` (lines per replayed batch, default 1000) and
 * `batchDelayMs` (pause between batches to limit the load replay puts on storage, default 0).
 */
import { definePlugin } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import { isActive } from './model.js';
import { registerHydrationRoutes } from './routes.js';
import { JobRunner } from './runner.js';
import { JobStore } from './store.js';

export { HYDRATION_JOB_LABEL, HYDRATION_EXPIRES_FACET, isHydrated } from './marker.js';

function intOption(v: unknown, name: string, def: number, min: number): number {
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
    throw new Error(`pluginOptions.hydration.${name} must be an integer >= ${min}`);
  }
  return v;
}

export default definePlugin({
  name: 'hydration',
  description: 'Replays archived logs into storage as asynchronous jobs (/hydration/query).',
  after: ['rbac'],
  register(ctx) {
    const batchSize = intOption(ctx.options.batchSize, 'batchSize', 1000, 1);
    const batchDelayMs = intOption(ctx.options.batchDelayMs, 'batchDelayMs', 0, 0);
    const clock = ctx.get(Tokens.Clock);
    const archives = ctx.get(Tokens.Archives);
    const ingest = ctx.get(Tokens.Ingest);
    const store = new JobStore(() => ctx.get(Tokens.Storage).meta, () => clock.now());
    const runner = new JobRunner({
      store,
      archives,
      write: (batch) => ingest.write(batch),
      now: () => clock.now(),
      logger: ctx.logger,
      batchSize,
      batchDelayMs,
    });
    registerHydrationRoutes(ctx, { store: () => store, runner: () => runner, archives, now: () => clock.now() });
    ctx.onStart(async () => {
      for (const j of await store.list()) if (isActive(j.jobStatus)) runner.drive(j.jobId);
    });
    ctx.onStop(() => runner.stop());
  },
});
