/** msgpack with BigInt support and no shared record structures (every buffer self-describing). */
import { Packr } from 'msgpackr';

const packr = new Packr({ useRecords: false, moreTypes: false });

export function pack(v: unknown): Buffer {
  return packr.pack(v);
}

export function unpack<T>(b: Uint8Array): T {
  return packr.unpack(b) as T;
}
