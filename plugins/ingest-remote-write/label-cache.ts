/**
 * Remote-write senders repeat the same label sets every scrape interval, byte for byte. Caching
 * decoded label sets by their encoded bytes turns label decoding (the bulk of the decode cost)
 * into a hash and a byte comparison, and hands storage the same immutable object each time.
 */
import type { Labels } from '../../kernel/models.js';

interface Entry {
  bytes: Uint8Array;
  labels: Labels;
}

export class LabelSetCache {
  private readonly map = new Map<number, Entry>();
  constructor(private readonly maxEntries = 1 << 18) {}

  /** FNV-1a over buf[start, end). */
  static hash(buf: Uint8Array, start: number, end: number): number {
    let h = 0x811c9dc5;
    for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
    return h >>> 0;
  }

  get(hash: number, buf: Uint8Array, start: number, end: number): Labels | undefined {
    const e = this.map.get(hash);
    if (!e) return undefined;
    const b = e.bytes;
    if (b.length !== end - start) return undefined;
    for (let i = 0; i < b.length; i++) if (b[i] !== buf[start + i]) return undefined;
    return e.labels;
  }

  set(hash: number, buf: Uint8Array, start: number, end: number, labels: Labels): void {
    if (this.map.size >= this.maxEntries) this.map.clear(); // crude bound: refills from the next requests
    if (!this.map.has(hash)) this.map.set(hash, { bytes: buf.slice(start, end), labels });
  }
}
