/**
 * Bloom filters over whole strings (trace ids, `key=value` attribute pairs), for segment and
 * block pruning of spans. Distinct from bloom.ts (trigrams of log messages): membership here is
 * exact-string equality. Sized at ~10 bits per distinct key with 4 probes (≈1% false positives).
 */

/** Two independent 32-bit hashes of a string (FNV-1a variants, finalized with murmur's mix). */
export function hash2(s: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 13;
  }
  return [fmix(a), (fmix(b) | 1) >>> 0];
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const PROBES = 4;

/** Builds a filter for `keys` (duplicates are fine); at least 64 bytes, a power of two in bits. */
export function stringBloom(keys: Iterable<string>, distinct: number): Uint8Array {
  let bits = 512;
  while (bits < distinct * 10 && bits < 1 << 24) bits *= 2;
  const out = new Uint8Array(bits >>> 3);
  const mask = bits - 1;
  for (const k of keys) {
    const [h1, h2] = hash2(k);
    for (let i = 0; i < PROBES; i++) {
      const h = (h1 + Math.imul(i, h2)) & mask;
      out[h >>> 3]! |= 1 << (h & 7);
    }
  }
  return out;
}

/** False only when `key` was certainly not added. */
export function bloomHas(bits: Uint8Array, key: string): boolean {
  const [h1, h2] = hash2(key);
  return bloomHasHash(bits, h1, h2);
}

/** bloomHas for a key already hashed with hash2 (one key probed against many filters). */
export function bloomHasHash(bits: Uint8Array, h1: number, h2: number): boolean {
  const mask = bits.length * 8 - 1;
  for (let i = 0; i < PROBES; i++) {
    const h = (h1 + Math.imul(i, h2)) & mask;
    if ((bits[h >>> 3]! & (1 << (h & 7))) === 0) return false;
  }
  return true;
}
