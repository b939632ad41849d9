/**
 * The embedded log head (backends/embedded/log-head.ts): records read from the head (facets
 * decoded from their WAL bytes) equal what was appended; a flush of an unsorted head orders
 * records by (timestamp, seq) — timestamps that differ only in the high or only in the low
 * 32 bits, equal timestamps, records without facets — and the segment holds the same records;
 * after a restart the WAL-replayed head reads the same again.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedBackend, type EmbeddedBackend } from '../../backends/embedded/index.js';
import { LogSegment } from '../../backends/embedded/log-segment.js';
import { createLogger } from '../../kernel/logger.js';
import type { FacetValue, LogRecord } from '../../kernel/models.js';

const T0 = 1_700_000_000_000n * 1_000_000n;
// Offsets chosen so the order depends on the high word alone, the low word alone, or the seq.
const OFFSETS = [5n, 4_294_967_296n, 0n, 4_294_967_295n, 1n, 5n, 8_589_934_592n, 999_999n, 1_000_000n, 0n, 4_294_967_297n, 5n];

function records(): LogRecord[] {
  return OFFSETS.map((off, i) => ({
    timestampNs: T0 + off,
    message: `m${i} ${'é'.repeat(i)}`,
    labels: { service: i % 2 ? 'odd' : 'even' },
    facets: (i % 3 === 0 ? {} : { i, name: `n${i}`, ok: i % 2 === 0, long: 'x'.repeat(i * 20) }) as Record<string, FacetValue>,
  }));
}

/** (timestamp, seq) order of the appended records: seq is the append position. */
const expected = records()
  .map((r, seq) => ({ r, seq }))
  .sort((a, b) => (a.r.timestampNs < b.r.timestampNs ? -1 : a.r.timestampNs > b.r.timestampNs ? 1 : a.seq - b.seq))
  .map(({ r }) => [String(r.timestampNs), r.message, r.labels.service, r.facets]);

async function readAll(b: EmbeddedBackend): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const x of b.logs.scan({ startNs: 0n, endNs: T0 * 2n, order: 'asc' })) {
    for (const r of x.records) out.push([String(r.timestampNs), r.message, r.labels.service, { ...r.facets }]);
  }
  return out;
}

test('head reads, unsorted flush order and WAL replay', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-loghead-'));
  const opts = { dir, logger: createLogger('error', {}, () => undefined), fsync: 'always' as const, maintenanceIntervalMs: 0 };
  try {
    const a = openEmbeddedBackend(opts);
    await a.logs.append(records().slice(0, 6));
    await a.logs.append(records().slice(6));
    assert.equal(await readAll(a), expected, 'from the head');
    // Replay without a clean shutdown: the head is rebuilt from the WAL bytes.
    const b = openEmbeddedBackend(opts);
    assert.equal(await readAll(b), expected, 'from the replayed head');
    assert.is(await b.logs.serial(() => b.logs.flushHead()), OFFSETS.length);
    assert.is(b.logs.stats().segments, 1);
    assert.equal(await readAll(b), expected, 'from the segment');
    // The rows themselves are stored in (timestamp, seq) order (scans rely on block bounds).
    const segDir = join(dir, 'logs', 'segments');
    const file = readdirSync(segDir).find((f) => f.endsWith('.lseg'))!;
    const seg = LogSegment.load(1, join(segDir, file), () => 0);
    const rdr = seg.reader(0);
    const stored = Array.from({ length: rdr.n }, (_, k) => String(rdr.tsAt(k)));
    assert.equal(stored, expected.map((e) => e[0]));
    seg.closeNow();
    await b.close();
    await a.close().catch(() => undefined);
    const c = openEmbeddedBackend(opts);
    assert.equal(await readAll(c), expected, 'after reopening');
    await c.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
