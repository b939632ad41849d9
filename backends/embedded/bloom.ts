/**
 * Per-block trigram bloom filters for log message terms. Terms are case-insensitive substrings,
 * so whole-word token filters would miss "erro" in "error"; trigrams of the lowercased text
 * cannot. A term shorter than 3 characters cannot be pruned.
 */
export const BLOOM_BITS = 1 << 16;

function tri(a: number, b: number, c: number): number {
  let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca77) ^ Math.imul(c, 0xc2b2ae3d);
  h ^= h >>> 15;
  return (h >>> 0) & (BLOOM_BITS - 1);
}

export function bloomOf(messages: readonly string[]): Uint8Array {
  const bits = new Uint8Array(BLOOM_BITS >>> 3);
  for (const m of messages) {
    const s = m.toLowerCase();
    let a = s.charCodeAt(0);
    let b = s.charCodeAt(1);
    for (let i = 2; i < s.length; i++) {
      const c = s.charCodeAt(i);
      const h = tri(a, b, c);
      bits[h >>> 3]! |= 1 << (h & 7);
      a = b;
      b = c;
    }
  }
  return bits;
}

/** True when every trigram of every term may be present. */
export function bloomMayContain(bits: Uint8Array, terms: readonly string[]): boolean {
  for (const term of terms) {
    const s = term.toLowerCase();
    for (let i = 2; i < s.length; i++) {
      const h = tri(s.charCodeAt(i - 2), s.charCodeAt(i - 1), s.charCodeAt(i));
      if ((bits[h >>> 3]! & (1 << (h & 7))) === 0) return false;
    }
  }
  return true;
}
