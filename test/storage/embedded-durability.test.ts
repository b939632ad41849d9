/** WAL replay without a clean shutdown, torn/corrupt tails, and compaction, on the embedded backend. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedBackend, type EmbeddedBackend } from '../../backends/embedded/index.js';
import { createLogger } from '../../kernel/logger.js';
import { STALE_NAN, isStaleMarker } from '../../kernel/models.js';

const T0 = 1_700_000_000_000;
const ns = (ms: number) => BigInt(ms) * 1_000_000n;

function open(dir: string, lines?: string[]): EmbeddedBackend {
  return openEmbeddedBackend({
    dir,
    logger: createLogger('info', {}, (l) => lines?.push(l)),
    fsync: 'always',
    maintenanceIntervalMs: 0,
  });
}

async function count(b: EmbeddedBackend): Promise<{ samples: number; logs: number }> {
  let samples = 0;
  for await (const s of b.metrics.select([{ name: '__name__', op: '=~', value: '.+' }], 0, T0 * 2)) samples += s.timestamps.length;
  let logs = 0;
  for await (const x of b.logs.scan({ startNs: 0n, endNs: ns(T0 * 2) })) logs += x.records.length;
  return { samples, logs };
}

async function write(b: EmbeddedBackend, from: number, n: number): Promise<void> {
  for (let i = from; i < from + n; i++) {
    await b.metrics.append([{ labels: { __name__: 'm', i: String(i % 7) }, samples: [{ t: T0 + i * 1000, v: i === 3 ? STALE_NAN : i }] }]);
    await b.logs.append([{ timestampNs: ns(T0 + i), message: `line ${i}`, labels: { service: 's' + (i % 3) }, facets: { i } }]);
  }
}

test('every acknowledged write is replayed from the WAL without a clean shutdown', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-dur-'));
  const a = open(dir);
  await write(a, 0, 50);
  await a.maintenance({ flush: true }); // some data in segments ...
  await write(a, 50, 50); // ... and some only in the WAL
  await a.events.append([{ id: 'e', timestampNs: ns(T0), title: 't', text: '', labels: {}, attributes: {} }]);
  await a.meta.transaction((tx) => tx.put('x', 'y', { z: 1 }));
  // No close: a second instance opens the same directory, as after kill -9.
  const b = open(dir);
  assert.equal(await count(b), { samples: 100, logs: 100 });
  assert.is(b.logs.lastSeq(), 100);
  for await (const s of b.metrics.select([{ name: 'i', op: '=', value: '3' }], 0, T0 * 2)) assert.ok(isStaleMarker(s.values[0]!));
  assert.equal(await b.meta.get('x', 'y'), { z: 1 });
  let evs = 0;
  for await (const x of b.events.scan({ startNs: 0n, endNs: ns(T0 + 1) })) evs += x.events.length;
  assert.is(evs, 1);
  await b.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a torn or corrupt WAL tail is truncated at the last good record, and logged', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-dur-'));
  const a = open(dir);
  await write(a, 0, 40);
  await a.flush();
  for (const sig of ['metrics', 'logs']) {
    const walDir = join(dir, sig, 'wal');
    const last = readdirSync(walDir).sort().filter((f) => statSync(join(walDir, f)).size > 0).pop()!;
    // A torn record: a header announcing more bytes than follow, then garbage.
    appendFileSync(join(walDir, last), Buffer.from([0xff, 0x00, 0x00, 0x00, 1, 2, 3, 4, 9, 9, 9]));
  }
  const lines: string[] = [];
  const b = open(dir, lines);
  assert.equal(await count(b), { samples: 40, logs: 40 });
  const warn = lines.map((l) => JSON.parse(l) as { msg: string; droppedBytes?: number; signal?: string }).filter((l) => l.msg.includes('truncated'));
  assert.equal(warn.map((w) => [w.signal, w.droppedBytes]).sort(), [['logs', 11], ['metrics', 11]]);
  // Writing continues and survives another restart.
  await write(b, 40, 5);
  await b.flush();
  const c = open(dir);
  assert.equal(await count(c), { samples: 45, logs: 45 });
  await c.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a corrupted record in the middle drops it and everything after it, keeping what precedes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-dur-'));
  const a = open(dir);
  await write(a, 0, 10);
  await a.flush();
  const walDir = join(dir, 'logs', 'wal');
  const file = join(walDir, readdirSync(walDir).sort().filter((f) => statSync(join(walDir, f)).size > 0).pop()!);
  const { readFileSync, writeFileSync } = await import('node:fs');
  const buf = readFileSync(file);
  // Flip a byte inside the 6th record's payload.
  let pos = 0;
  for (let i = 0; i < 5; i++) pos += 8 + buf.readUInt32LE(pos);
  buf[pos + 10] ^= 0xff;
  writeFileSync(file, buf);
  const b = open(dir);
  assert.is((await count(b)).logs, 5);
  await b.close();
  rmSync(dir, { recursive: true, force: true });
});

test('compaction merges a day of segments without changing query results', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-dur-'));
  const a = open(dir);
  for (let round = 0; round < 4; round++) {
    const series = [];
    for (let s = 0; s < 20; s++) {
      const samples = [];
      for (let i = 0; i < 100; i++) samples.push({ t: T0 + round * 1_000_000 + i * 10_000, v: s * 1000 + i + round });
      series.push({ labels: { __name__: 'c', s: String(s) }, samples });
    }
    await a.metrics.append(series);
    // An out-of-order overwrite of an earlier round.
    if (round > 0) await a.metrics.append([{ labels: { __name__: 'c', s: '0' }, samples: [{ t: T0 + (round - 1) * 1_000_000 + 500_000, v: -round }] }]);
    await a.maintenance({ flush: true, now: T0 });
  }
  const before: number[][] = [];
  let ts: number[] = [];
  for await (const s of a.metrics.select([{ name: '__name__', op: '=', value: 'c' }], 0, T0 * 2)) {
    if (before.length === 0) ts = [...s.timestamps];
    before.push([...s.values]);
  }
  await a.maintenance({ flush: false, now: T0 });
  const st = a.metrics.stats();
  assert.ok(st.segments <= 2, `segments after compaction: ${st.segments}`);
  const after: number[][] = [];
  for await (const s of a.metrics.select([{ name: '__name__', op: '=', value: 'c' }], 0, T0 * 2)) after.push([...s.values]);
  assert.equal(after, before);
  assert.is(before[0]![ts.indexOf(T0 + 2_500_000)], -3);
  assert.is(before[0]![ts.indexOf(T0 + 500_000)], -1);
  assert.is(before[0]!.length, 400);
  await a.close();
  const b = open(dir);
  const reopened: number[][] = [];
  for await (const s of b.metrics.select([{ name: '__name__', op: '=', value: 'c' }], 0, T0 * 2)) reopened.push([...s.values]);
  assert.equal(reopened, before);
  await b.close();
  rmSync(dir, { recursive: true, force: true });
});

test.run();
