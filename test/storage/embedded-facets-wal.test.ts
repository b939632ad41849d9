/**
 * Log facets written to the embedded WAL by the hand-written msgpack writer
 * (backends/embedded/facets-pack.ts) come back identical after a replay without a clean
 * shutdown: every scalar kind, integer widths, -0, non-integers, non-ASCII and long strings.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedBackend } from '../../backends/embedded/index.js';
import { createLogger } from '../../kernel/logger.js';
import type { FacetValue } from '../../kernel/models.js';

const T0 = 1_700_000_000_000n * 1_000_000n;

const FACETS: Record<string, FacetValue>[] = [
  { 'http.method': 'GET', 'http.status_code': 200, duration_ms: 12.5, ok: true, cached: false },
  { a: -1, b: -33, c: -200, d: -40_000, e: -3_000_000_000, f: 2 ** 40, g: -0, h: 255, i: 65_535, j: 4_294_967_295, k: 0.1 },
  { text: 'héllo wörld ✓ 😀', long: 'x'.repeat(300), longer: 'é'.repeat(30_000), empty: '' },
  Object.fromEntries(Array.from({ length: 40 }, (_, i) => ['key' + i, i % 2 ? 'v' + i : i])),
];

test('facets survive a WAL replay', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-facets-'));
  const opts = { dir, logger: createLogger('error', {}, () => undefined), fsync: 'always' as const, maintenanceIntervalMs: 0 };
  try {
    const a = openEmbeddedBackend(opts);
    await a.logs.append(FACETS.map((facets, i) => ({ timestampNs: T0 + BigInt(i), message: `m${i}`, labels: { service: 'f' }, facets })));
    // No close(): the next open replays the WAL as after a crash.
    const b = openEmbeddedBackend(opts);
    const got: Record<string, FacetValue>[] = [];
    for await (const x of b.logs.scan({ startNs: 0n, endNs: T0 * 2n, order: 'asc' })) for (const r of x.records) got.push({ ...r.facets });
    assert.is(got.length, FACETS.length);
    for (let i = 0; i < FACETS.length; i++) {
      assert.equal(got[i], FACETS[i], `record ${i}`);
      for (const [k, v] of Object.entries(FACETS[i]!)) assert.ok(Object.is(got[i]![k], v), `record ${i} facet ${k}`);
    }
    await b.close();
    await a.close().catch(() => undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
