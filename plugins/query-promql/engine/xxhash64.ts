/**
 * XXH64 (seed 0), the hash Prometheus' Labels.Hash() uses. limit_ratio picks series by this hash,
 * so matching it byte for byte makes the same series selected as in Prometheus. BigInt keeps it
 * short; it runs once per selected series, not per sample.
 */
const M = (1n << 64n) - 1n;
const P1 = 11400714785074694791n;
const P2 = 14029467366897019727n;
const P3 = 1609587929392839161n;
const P4 = 9650029242287828579n;
const P5 = 2870177450012600261n;

const rotl = (x: bigint, r: bigint): bigint => ((x << r) | (x >> (64n - r))) & M;

function round(acc: bigint, input: bigint): bigint {
  acc = (acc + input * P2) & M;
  return (rotl(acc, 31n) * P1) & M;
}

function merge(acc: bigint, val: bigint): bigint {
  acc ^= round(0n, val);
  return (acc * P1 + P4) & M;
}

function read64(b: Uint8Array, i: number): bigint {
  const dv = new DataView(b.buffer, b.byteOffset + i, 8);
  return dv.getBigUint64(0, true);
}

function read32(b: Uint8Array, i: number): bigint {
  return BigInt(new DataView(b.buffer, b.byteOffset + i, 4).getUint32(0, true));
}

export function xxhash64(b: Uint8Array): bigint {
  const len = b.length;
  let i = 0;
  let h: bigint;
  if (len >= 32) {
    let v1 = (P1 + P2) & M;
    let v2 = P2;
    let v3 = 0n;
    let v4 = (M + 1n - P1) & M;
    for (; i + 32 <= len; i += 32) {
      v1 = round(v1, read64(b, i));
      v2 = round(v2, read64(b, i + 8));
      v3 = round(v3, read64(b, i + 16));
      v4 = round(v4, read64(b, i + 24));
    }
    h = (rotl(v1, 1n) + rotl(v2, 7n) + rotl(v3, 12n) + rotl(v4, 18n)) & M;
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    h = merge(h, v4);
  } else {
    h = P5;
  }
  h = (h + BigInt(len)) & M;
  for (; i + 8 <= len; i += 8) {
    h ^= round(0n, read64(b, i));
    h = (rotl(h, 27n) * P1 + P4) & M;
  }
  if (i + 4 <= len) {
    h ^= (read32(b, i) * P1) & M;
    h = (rotl(h, 23n) * P2 + P3) & M;
    i += 4;
  }
  for (; i < len; i++) {
    h ^= (BigInt(b[i]!) * P5) & M;
    h = (rotl(h, 11n) * P1) & M;
  }
  h ^= h >> 33n;
  h = (h * P2) & M;
  h ^= h >> 29n;
  h = (h * P3) & M;
  h ^= h >> 32n;
  return h;
}
