/**
 * Jobs survive a restart (embedded backend, same data directory): a job HYDRATING at shutdown
 * resumes from its saved position and ends with every line replayed exactly once; PAUSED, DONE
 * and CANCELED jobs keep their status, summary and timestamps.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { HOUR, T0, call, dataset, hydrate, storedLines, waitStatus, writeFsArchive } from './helpers.js';

const lines = dataset(1200, 3, 5);
const RANGE = { archiveName: 'local', startTsMs: T0, endTsMs: T0 + 3 * HOUR - 1 };
let dir: string;

const boot = (dataDir: string) =>
  startTestServer(
    {
      storage: { backend: 'embedded' },
      archives: [{ name: 'local', type: 'fs', path: join(dir, 'a') }],
      hydration: { maxConcurrentJobs: 4 },
      pluginOptions: { hydration: { batchSize: 10, batchDelayMs: 40 } },
    },
    { dataDir },
  );

test.before(() => {
  dir = tempDir('lookout-hydration-persist-');
  writeFsArchive(join(dir, 'a'), lines, { objectsPerHour: 2 });
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test('a HYDRATING job resumes after restart; other jobs keep their state', async () => {
  const dataDir = join(dir, 'data');
  let srv: TestServer | undefined = await boot(dataDir);
  try {
    const dry = await hydrate(srv, {
      ...RANGE,
      endTsMs: T0 + 20 * 60_000,
      isDryRun: true,
      filters: [{ field: 'service', operation: 'eq', value: 'api' }],
    });
    await waitStatus(srv, dry, ['DONE'], 30_000);
    const running = await hydrate(srv, { ...RANGE, addTags: { run: 'one' } });
    const paused = await hydrate(srv, { ...RANGE, isDryRun: true });
    const canceled = await hydrate(srv, { ...RANGE, isDryRun: true });
    await waitStatus(srv, paused, ['HYDRATING']);
    assert.is((await call(srv, 'POST', 'pause', { jobId: paused })).status, 200);
    assert.is((await call(srv, 'POST', 'cancel', { jobId: canceled })).status, 200);
    // Let the running job replay part of the range, then stop the server under it.
    for (;;) {
      const p = await waitStatus(srv, running, ['HYDRATING']);
      if (p.summary.filteredLines >= 60) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const before = (await call(srv, 'POST', 'list-jobs', {})).body as Record<string, unknown>[];
    const partial = (await storedLines(srv, running)).length;
    await srv.stop();
    srv = undefined;
    assert.ok(partial > 0 && partial < lines.length, `stopped mid-way (${partial})`);

    srv = await boot(dataDir);
    const after = (await call(srv, 'POST', 'list-jobs', {})).body as Record<string, unknown>[];
    const byId = (xs: Record<string, unknown>[], id: string) => xs.find((j) => j.jobId === id)!;
    for (const id of [dry, paused, canceled]) {
      const a = byId(after, id);
      const b = byId(before, id);
      assert.equal({ ...a, lastUpdatedAtMs: 0 }, { ...b, lastUpdatedAtMs: 0 }, id);
    }
    assert.is(byId(after, paused).jobStatus, 'PAUSED');
    assert.is(byId(after, canceled).jobStatus, 'CANCELED');
    assert.is(byId(after, dry).jobStatus, 'DONE');
    assert.is(byId(after, running).createdAtMs, byId(before, running).createdAtMs);

    const done = await waitStatus(srv, running, ['DONE', 'FAILED'], 60_000);
    assert.is(done.jobStatus, 'DONE');
    assert.equal(done.summary, { totalHours: 3, completedHours: 3, totalLines: lines.length, filteredLines: lines.length, malformedLines: 0 });
    // Exactly once: the stored lines are the archive's lines, none lost or duplicated.
    const stored = await storedLines(srv, running);
    const key = (ms: number, msg: string, labels: Record<string, string>) =>
      `${ms}|${msg}|${labels.service ?? ''}|${labels.env ?? ''}`;
    assert.equal(
      stored.map((r) => key(Number(r.timestampNs / 1_000_000n), r.message, r.labels)).sort(),
      lines.map((l) => key(l.timestampMs, l.message, l.labels)).sort(),
    );
    assert.ok(stored.every((r) => r.labels.run === 'one'));

    // The paused job can still be resumed after the restart.
    assert.is((await call(srv, 'POST', 'resume', { jobId: paused })).status, 200);
    const resumed = await waitStatus(srv, paused, ['DONE'], 60_000);
    assert.is(resumed.summary.totalLines, lines.length);
  } finally {
    await srv?.stop();
  }
});

test.run();
