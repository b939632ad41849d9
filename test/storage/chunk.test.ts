/**
 * XOR chunks round-trip bit-exactly at every bit alignment, including the widest append (a
 * 64-bit delta-of-delta and a value whose XOR with its predecessor spans all 64 bits: 145 bits),
 * which once overran the space reserved per append when it fell at the end of the buffer.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ChunkEncoder, decodeChunk } from '../../backends/embedded/chunk.js';

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
const bits = (v: number) => {
  f64[0] = v;
  return `${u32[1]!.toString(16)}:${u32[0]!.toString(16)}`;
};

test('widest appends decode bit-exactly at every alignment', () => {
  for (let shift = 0; shift < 300; shift++) {
    const enc = new ChunkEncoder();
    const ts: number[] = [];
    const vs: number[] = [];
    let t = 1_700_000_000_000;
    // Cheap samples (1-bit timestamps, 1-bit values) move the bit position by `shift`.
    for (let i = 0; i < shift; i++) {
      ts.push((t += 1000));
      vs.push(1);
    }
    // Then gaps far beyond the 20-bit delta-of-delta bucket and values whose XOR has neither
    // leading nor trailing zeros (the sign flips, the lowest mantissa bit differs).
    for (let i = 0; i < 12; i++) {
      ts.push((t += i % 2 ? 1_000 : 3_600_000 + i * 7919));
      vs.push((i % 2 ? -1 : 1) * (1.2345678901234567 + i * 2 ** -52));
    }
    for (let i = 0; i < ts.length; i++) enc.append(ts[i]!, vs[i]!);
    const data = enc.bytes();
    const ot = new Float64Array(ts.length);
    const ov = new Float64Array(ts.length);
    const n = decodeChunk(data, enc.count, ot, ov, 0);
    assert.is(n, ts.length, `count at shift ${shift}`);
    for (let i = 0; i < n; i++) {
      assert.is(ot[i], ts[i], `timestamp ${i} at shift ${shift}`);
      assert.is(bits(ov[i]!), bits(vs[i]!), `value ${i} at shift ${shift}`);
    }
  }
});

test.run();
