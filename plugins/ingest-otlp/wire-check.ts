/**
 * Strict protobuf wire validation against a protobufjs reflection Type, run before protobufjs'
 * own decoder. protobufjs is lenient by design: it skips field number 0, reads a known field
 * with whatever wire type arrives (a varint taken as a length, garbage after it), so a body of
 * zero bytes "decodes" into an empty message. A receiver must answer such a body 400 and write
 * nothing, so this walk rejects: field number 0, wire types 3/4/6/7 (groups are not used by any
 * format we accept), truncated varints and length-delimited fields, fixed-width fields past the
 * end, and known fields whose wire type differs from the schema (packed and unpacked forms of
 * repeated scalars both accepted, as the protobuf spec requires). Nested messages are checked
 * recursively; unknown fields are skipped as protobuf allows.
 */
import protobuf from 'protobufjs';

export class ProtoWireError extends Error {}

interface FieldRule {
  name: string;
  /** The wire type the schema implies. */
  wire: number;
  /** Repeated packable scalar: wire type 2 (packed) accepted too. */
  packable: boolean;
  /** Element type for message fields (validated recursively). */
  message?: protobuf.Type;
}

type Rules = Map<number, FieldRule>;
const rulesCache = new WeakMap<protobuf.Type, Rules>();

function rulesOf(type: protobuf.Type): Rules {
  let rules = rulesCache.get(type);
  if (rules) return rules;
  rules = new Map();
  rulesCache.set(type, rules);
  for (const f of type.fieldsArray) {
    f.resolve();
    const rt = f.resolvedType;
    if (f.map) {
      rules.set(f.id, { name: f.name, wire: 2, packable: false });
    } else if (rt instanceof protobuf.Type) {
      rules.set(f.id, { name: f.name, wire: 2, packable: false, message: rt });
    } else if (rt instanceof protobuf.Enum) {
      rules.set(f.id, { name: f.name, wire: 0, packable: f.repeated });
    } else {
      const basic = (protobuf.types.basic as Record<string, number | undefined>)[f.type];
      const wire = basic ?? 2; // string and bytes are length-delimited
      rules.set(f.id, { name: f.name, wire, packable: f.repeated && (protobuf.types.packed as Record<string, number | undefined>)[f.type] !== undefined });
    }
  }
  return rules;
}

const MAX_DEPTH = 100;

/** Reads a varint's end position (the value itself is returned through `lastVarint`). */
let lastVarint = 0;
function varintEnd(b: Uint8Array, p: number, end: number): number {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < 10; i++) {
    if (p >= end) throw new ProtoWireError('truncated varint');
    const byte = b[p++]!;
    v += (byte & 0x7f) * mul;
    if (byte < 0x80) {
      lastVarint = v;
      return p;
    }
    mul *= 128;
  }
  throw new ProtoWireError('varint longer than 10 bytes');
}

function walk(type: protobuf.Type, b: Uint8Array, p: number, end: number, depth: number): void {
  if (depth > MAX_DEPTH) throw new ProtoWireError('messages nested too deeply');
  const rules = rulesOf(type);
  while (p < end) {
    p = varintEnd(b, p, end);
    const tag = lastVarint;
    const id = Math.floor(tag / 8);
    const wt = tag & 7;
    if (id === 0) throw new ProtoWireError(`invalid field number 0 in ${type.name}`);
    const rule = rules.get(id);
    if (rule && wt !== rule.wire && !(rule.packable && wt === 2)) {
      throw new ProtoWireError(`field ${type.name}.${rule.name} (${id}) has wire type ${wt}, expected ${rule.wire}`);
    }
    switch (wt) {
      case 0:
        p = varintEnd(b, p, end);
        break;
      case 1:
        p += 8;
        if (p > end) throw new ProtoWireError(`truncated 64-bit field ${id} in ${type.name}`);
        break;
      case 5:
        p += 4;
        if (p > end) throw new ProtoWireError(`truncated 32-bit field ${id} in ${type.name}`);
        break;
      case 2: {
        p = varintEnd(b, p, end);
        const e = p + lastVarint;
        if (e > end) throw new ProtoWireError(`length-delimited field ${id} in ${type.name} exceeds its message`);
        if (rule?.message) walk(rule.message, b, p, e, depth + 1);
        else if (rule && rule.packable && rule.wire !== 2) checkPacked(rule, b, p, e);
        p = e;
        break;
      }
      default:
        throw new ProtoWireError(`invalid wire type ${wt} (field ${id} in ${type.name})`);
    }
  }
}

function checkPacked(rule: FieldRule, b: Uint8Array, p: number, e: number): void {
  if (rule.wire === 0) {
    while (p < e) p = varintEnd(b, p, e);
    return;
  }
  const width = rule.wire === 1 ? 8 : 4;
  if ((e - p) % width !== 0) throw new ProtoWireError(`packed field ${rule.name} is not a multiple of ${width} bytes`);
}

/** Throws ProtoWireError naming the first malformed field; an empty body is a valid empty message. */
export function checkWire(type: protobuf.Type, body: Uint8Array): void {
  walk(type, body, 0, body.length, 0);
}
