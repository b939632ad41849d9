/**
 * The embedded WAL: records given whole or as parts (written with writev, never joined in
 * memory) replay byte for byte and in order, group commit included; a torn tail is cut at the
 * last good record.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Wal } from '../../backends/embedded/wal.js';
import { createLogger } from '../../kernel/logger.js';

const logger = createLogger('error', {}, () => undefined);
const open = (dir: string, out: Buffer[]) =>
  Wal.open({ dir, fsync: 'interval', fsyncIntervalMs: 1000, logger, name: 'test' }, (p) => void out.push(Buffer.from(p)));

test('whole and multi-part records replay byte for byte, in order, across group commits', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-wal-'));
  try {
    const { wal } = open(dir, []);
    const expected: Buffer[] = [];
    const pending: Promise<void>[] = [];
    for (let i = 0; i < 300; i++) {
      const whole = Buffer.alloc(1 + ((i * 37) % 5000), i & 0xff);
      if (i % 3 === 0) {
        pending.push(wal.append(whole));
        expected.push(whole);
      } else {
        // Parts of different sizes, an empty one included.
        const parts = [whole.subarray(0, 3), Buffer.alloc(0), whole.subarray(3, 10), Buffer.alloc(i % 7, 0xee), whole.subarray(10)];
        pending.push(wal.append(parts));
        expected.push(Buffer.concat(parts));
      }
      if (i % 50 === 0) await Promise.all(pending.splice(0)); // some batches of one, some of many
    }
    await Promise.all(pending);
    await wal.close();
    const replayed: Buffer[] = [];
    const { wal: again, stats } = open(dir, replayed);
    await again.close();
    assert.is(stats.records, expected.length);
    assert.is(stats.droppedBytes, 0);
    assert.is(replayed.length, expected.length);
    for (let i = 0; i < expected.length; i++) assert.ok(replayed[i]!.equals(expected[i]!), `record ${i}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a torn multi-part record at the tail is dropped, the records before it kept', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-wal-'));
  try {
    const { wal } = open(dir, []);
    await wal.append([Buffer.from('ab'), Buffer.from('cd')]);
    await wal.append([Buffer.from('ef'), Buffer.from('gh')]);
    await wal.close();
    const file = join(dir, readdirSync(dir).sort().at(-1)!);
    appendFileSync(file, Buffer.from([20, 0, 0, 0, 1, 2, 3, 4, 0x61])); // header promising 20 bytes, 1 present
    const replayed: Buffer[] = [];
    const { wal: again, stats } = open(dir, replayed);
    await again.close();
    assert.equal(replayed.map((b) => b.toString()), ['abcd', 'efgh']);
    assert.is(stats.droppedBytes, 9);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
