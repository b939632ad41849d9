/**
 * Fluent Bit's msgpack HTTP output: the raw chunk, i.e. concatenated msgpack values, each
 * `[timestamp, record]` (Fluent Bit < 2.1), `[[timestamp, metadata], record]` (2.1+), or a bare
 * map; timestamps are the Fluent "EventTime" extension (type 0: uint32 seconds, uint32 ns),
 * an integer or a float.
 */
import { Unpackr, addExtension } from 'msgpackr';
import { badRequest } from '../../kernel/errors.js';
import { epochToNs, isRecord } from './log-fields.js';

/** Fluentd/Fluent Bit EventTime (msgpack ext type 0). */
export class FluentEventTime {
  constructor(
    readonly seconds: number,
    readonly nanoseconds: number,
  ) {}
  toNs(): bigint {
    return BigInt(this.seconds) * 1_000_000_000n + BigInt(this.nanoseconds);
  }
}

addExtension({
  type: 0,
  unpack(buf: Buffer | Uint8Array) {
    if (buf.length !== 8) throw new Error(`EventTime extension of ${buf.length} bytes (expected 8)`);
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    return new FluentEventTime(view.getUint32(0), view.getUint32(4));
  },
});

const unpackr = new Unpackr({ mapsAsObjects: true, useRecords: false, int64AsType: 'number' });

export interface TimedRecord {
  /** From the entry's EventTime/number; undefined for bare maps (the date key decides then). */
  timestampNs?: bigint;
  record: Record<string, unknown>;
}

function tsFrom(v: unknown): bigint | undefined {
  if (v instanceof FluentEventTime) return v.toNs();
  if (typeof v === 'number') return epochToNs(v);
  return undefined;
}

function entry(v: unknown, index: number, out: TimedRecord[]): void {
  if (isRecord(v)) {
    out.push({ record: v });
    return;
  }
  if (Array.isArray(v)) {
    // [ts, record] or [[ts, metadata], record]
    if (v.length === 2 && isRecord(v[1])) {
      const head = v[0];
      const ts = Array.isArray(head) ? tsFrom(head[0]) : tsFrom(head);
      if (ts !== undefined || head === null) {
        out.push({ timestampNs: ts, record: v[1] });
        return;
      }
    }
    // A batch packed as one array of entries.
    if (v.every((x) => isRecord(x) || Array.isArray(x))) {
      for (const x of v) entry(x, index, out);
      return;
    }
  }
  throw badRequest(`msgpack entry ${index + 1} is not a record map, [timestamp, record] or [[timestamp, metadata], record]`);
}

export function decodeMsgpackRecords(body: Buffer): TimedRecord[] {
  let values: unknown[];
  try {
    values = unpackr.unpackMultiple(body) as unknown[];
  } catch (e) {
    throw badRequest(`malformed msgpack body: ${(e as Error).message}`);
  }
  const out: TimedRecord[] = [];
  values.forEach((v, i) => entry(v, i, out));
  return out;
}
