/**
 * A single-pass reader for the usual shape of shipper documents: one JSON object of objects,
 * strings, numbers, booleans and nulls. It reads the bytes of a bulk body and hands every
 * flattened leaf straight to a FieldPlan, so no nested objects are built only to be walked and
 * dropped (JSON.parse plus the flattening walk was most of the shipper's decode time).
 *
 * It must give exactly what `plan.apply(JSON.parse(line))` gives, so it only accepts what it
 * can read that way and declines (returns false; the caller then takes the JSON.parse path,
 * which also produces the error message for malformed input) on anything else: arrays, objects
 * past the flattening depth, objects of more than 64 keys (the duplicate check is quadratic),
 * duplicate keys (JSON.parse keeps the last value), keys that are array indexes (V8 orders them
 * first), empty keys, escapes in keys, and every syntax error. Strings with escapes are decoded
 * by JSON.parse itself.
 */
import { MAX_DEPTH, joinKey, type FieldPlan } from '../ingest-forwarder/log-fields.js';

/** Node's native Buffer slicers (untyped in @types/node): one flat string each. */
interface NativeSlices {
  utf8Slice(start: number, end: number): string;
  latin1Slice(start: number, end: number): string;
}
type Body = Buffer & NativeSlices;

const INTERN_SLOTS = 4096;
const INTERN_MAX_LEN = 32;
/** Values up to this length are interned too (levels, methods, host and service names). */
const INTERN_VALUE_LEN = 16;
/** Keys per object read here (beyond: declined). */
const MAX_KEYS = 64;

export class DocScanner<S extends string> {
  private b: Body = Buffer.alloc(0) as Body;
  private p = 0;
  private e = 0;
  /** Keys of the objects being read (each object's run starts at its base), for duplicates. */
  private readonly keyStack: string[] = [];
  private keyTop = 0;
  private readonly interned: (string | undefined)[] = new Array(INTERN_SLOTS);
  /** Intern slot of the last key read (-1: not interned). */
  private keySlot = -1;
  /**
   * Dotted names by (key slot, parent key slot): the key, its prefix and the joined name, so a
   * repeated nested key costs two string identity checks instead of joinKey's map lookups.
   */
  private readonly joinKey: (string | undefined)[] = new Array(INTERN_SLOTS);
  private readonly joinPrefix: (string | undefined)[] = new Array(INTERN_SLOTS);
  private readonly joinFull: (string | undefined)[] = new Array(INTERN_SLOTS);

  constructor(private readonly plan: FieldPlan<S>) {}

  /**
   * Flattens the object in b[start, end) into the plan (between the caller's begin and end).
   * False: not read here (the plan may hold partial leaves; the caller starts over).
   */
  scan(b: Buffer, start: number, end: number): boolean {
    this.b = b as Body;
    this.p = start;
    this.e = end;
    this.keyTop = 0;
    this.ws();
    if (this.p >= end || b[this.p] !== 0x7b) return false;
    if (!this.object('', 0, 0)) return false;
    this.ws();
    return this.p === end;
  }

  private ws(): void {
    const b = this.b;
    let p = this.p;
    while (p < this.e) {
      const c = b[p]!;
      if (c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a) p++;
      else break;
    }
    this.p = p;
  }

  /**
   * Reads the object at p (`{`); nested objects at `depth` are flattened under `prefix` (the
   * object's own key had intern slot `parentSlot`).
   */
  private object(prefix: string, depth: number, parentSlot: number): boolean {
    const b = this.b;
    this.p++;
    if (b[this.p]! <= 0x20) this.ws();
    if (this.p < this.e && b[this.p] === 0x7d) {
      this.p++;
      return true;
    }
    const keys = this.keyStack;
    const base = this.keyTop;
    for (;;) {
      if (this.p >= this.e || b[this.p] !== 0x22) return false;
      const key = this.key();
      if (key === undefined) return false;
      const top = this.keyTop;
      // The duplicate check is quadratic: objects with many keys go to JSON.parse instead.
      if (top - base >= MAX_KEYS) return false;
      for (let k = base; k < top; k++) if (keys[k] === key) return false;
      keys[top] = key;
      this.keyTop = top + 1;
      const slot = this.keySlot;
      if (b[this.p]! <= 0x20) this.ws();
      if (this.p >= this.e || b[this.p] !== 0x3a) return false;
      this.p++;
      if (b[this.p]! <= 0x20) this.ws();
      if (this.p >= this.e) return false;
      let full: string;
      if (prefix === '') full = key;
      else if (slot < 0) full = joinKey(prefix, key);
      else {
        const j = (slot * 31 + parentSlot) & (INTERN_SLOTS - 1);
        if (this.joinKey[j] === key && this.joinPrefix[j] === prefix) full = this.joinFull[j]!;
        else {
          full = joinKey(prefix, key);
          this.joinKey[j] = key;
          this.joinPrefix[j] = prefix;
          this.joinFull[j] = full;
        }
      }
      const c = b[this.p]!;
      if (c === 0x22) {
        const s = this.string();
        if (s === undefined) return false;
        this.plan.leaf(full, s);
      } else if (c === 0x7b) {
        if (depth + 1 >= MAX_DEPTH || !this.object(full, depth + 1, slot < 0 ? 0 : slot)) return false;
      } else if (c === 0x74) {
        if (!this.literal(0x72, 0x75, 0x65)) return false;
        this.plan.leaf(full, true);
      } else if (c === 0x66) {
        if (!this.literal(0x61, 0x6c, 0x73) || this.p >= this.e || b[this.p] !== 0x65) return false;
        this.p++;
        this.plan.leaf(full, false);
      } else if (c === 0x6e) {
        if (!this.literal(0x75, 0x6c, 0x6c)) return false;
      } else {
        const v = this.number();
        if (v === undefined) return false;
        this.plan.leaf(full, v);
      }
      if (b[this.p]! <= 0x20) this.ws();
      if (this.p >= this.e) return false;
      const sep = b[this.p]!;
      this.p++;
      if (sep === 0x7d) {
        this.keyTop = base;
        return true;
      }
      if (sep !== 0x2c) return false;
      if (b[this.p]! <= 0x20) this.ws();
    }
  }

  /** The three bytes after the literal's first one. */
  private literal(x: number, y: number, z: number): boolean {
    const b = this.b;
    const p = this.p;
    if (p + 4 > this.e || b[p + 1] !== x || b[p + 2] !== y || b[p + 3] !== z) return false;
    this.p = p + 4;
    return true;
  }

  /** A key without escapes; undefined for anything else (and for empty or array-index keys). */
  private key(): string | undefined {
    const b = this.b;
    const s = this.p + 1;
    let p = s;
    let ascii = true;
    let h = 0;
    for (;;) {
      if (p >= this.e) return undefined;
      const c = b[p]!;
      if (c === 0x22) break;
      if (c === 0x5c || c < 0x20) return undefined;
      if (c >= 0x80) ascii = false;
      h = Math.imul(h ^ c, 0x01000193);
      p++;
    }
    if (p === s) return undefined;
    if (b[s]! <= 0x39 && b[s]! >= 0x30) {
      let k = s + 1;
      while (k < p && b[k]! >= 0x30 && b[k]! <= 0x39) k++;
      if (k === p) return undefined; // all digits: an array index to JSON.parse
    }
    this.p = p + 1;
    this.keySlot = -1;
    return ascii && p - s <= INTERN_MAX_LEN ? this.intern(s, p, h, true) : b.utf8Slice(s, p);
  }

  /** A string value; escapes are decoded by JSON.parse (exactly its semantics); undefined if malformed. */
  private string(): string | undefined {
    const b = this.b;
    const s = this.p + 1;
    let p = s;
    let ascii = true;
    let escaped = false;
    for (;;) {
      if (p >= this.e) return undefined;
      const c = b[p]!;
      if (c === 0x22) break;
      if (c < 0x20) return undefined;
      if (c === 0x5c) {
        escaped = true;
        p += 2;
        continue;
      }
      if (c >= 0x80) ascii = false;
      p++;
    }
    this.p = p + 1;
    if (escaped) {
      try {
        return JSON.parse(b.utf8Slice(s - 1, p + 1)) as string;
      } catch {
        return undefined;
      }
    }
    if (!ascii || p - s > INTERN_VALUE_LEN) return b.utf8Slice(s, p);
    let h = 0;
    for (let i = s; i < p; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
    return this.intern(s, p, h, false);
  }

  /** A JSON number (strict grammar); undefined if malformed. */
  private number(): number | undefined {
    const b = this.b;
    const e = this.e;
    const s = this.p;
    let p = s;
    let neg = false;
    if (b[p] === 0x2d) {
      neg = true;
      p++;
    }
    if (p >= e) return undefined;
    let c = b[p]!;
    let v = 0;
    let digits = 0;
    if (c === 0x30) {
      p++;
      digits = 1;
    } else if (c >= 0x31 && c <= 0x39) {
      while (p < e && (c = b[p]!) >= 0x30 && c <= 0x39) {
        v = v * 10 + (c - 0x30);
        p++;
        digits++;
      }
    } else return undefined;
    let simple = true;
    if (p < e && b[p] === 0x2e) {
      simple = false;
      const d0 = ++p;
      while (p < e && b[p]! >= 0x30 && b[p]! <= 0x39) p++;
      if (p === d0) return undefined;
    }
    if (p < e && (b[p] === 0x65 || b[p] === 0x45)) {
      simple = false;
      p++;
      if (p < e && (b[p] === 0x2b || b[p] === 0x2d)) p++;
      const d0 = p;
      while (p < e && b[p]! >= 0x30 && b[p]! <= 0x39) p++;
      if (p === d0) return undefined;
    }
    this.p = p;
    // Up to 15 digits the running integer is exact; otherwise the spec's own conversion.
    if (simple && digits <= 15) return neg ? -v : v;
    return Number(b.latin1Slice(s, p));
  }

  /** The same string object as last time for an ASCII byte run hashing (`h`) to the same slot. */
  private intern(start: number, end: number, h: number, isKey: boolean): string {
    const b = this.b;
    const len = end - start;
    h ^= len;
    const slot = (h ^ (h >>> 16)) & (INTERN_SLOTS - 1);
    if (isKey) this.keySlot = slot;
    const s = this.interned[slot];
    if (s !== undefined && s.length === len) {
      let i = 0;
      while (i < len && s.charCodeAt(i) === b[start + i]) i++;
      if (i === len) return s;
    }
    const fresh = b.latin1Slice(start, end);
    this.interned[slot] = fresh;
    return fresh;
  }
}
