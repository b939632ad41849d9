/**
 * A small LRU of decoded segment blocks, bounded by an estimated size in bytes, so repeated
 * trace lookups and searches over recent data do not re-read and re-inflate the same blocks
 * while memory stays bounded however much is on disk.
 */
export class BlockCache<V> {
  private readonly map = new Map<string, { v: V; weight: number }>();
  private used = 0;
  hits = 0;
  misses = 0;

  constructor(private readonly maxBytes: number) {}

  get(key: string, load: () => { value: V; weight: number }): V {
    const hit = this.map.get(key);
    if (hit) {
      // Re-insert: Map iteration order is insertion order, so the first key is the oldest.
      this.map.delete(key);
      this.map.set(key, hit);
      this.hits++;
      return hit.v;
    }
    this.misses++;
    const { value, weight } = load();
    if (weight <= this.maxBytes) {
      this.map.set(key, { v: value, weight });
      this.used += weight;
      for (const [k, e] of this.map) {
        if (this.used <= this.maxBytes) break;
        this.map.delete(k);
        this.used -= e.weight;
      }
    }
    return value;
  }

  /** Drops every entry whose key starts with `prefix` (a deleted segment). */
  dropPrefix(prefix: string): void {
    for (const [k, e] of this.map) {
      if (!k.startsWith(prefix)) continue;
      this.map.delete(k);
      this.used -= e.weight;
    }
  }

  get bytes(): number {
    return this.used;
  }
}
