/**
 * A hand-written decoder for protobuf `ExportLogsServiceRequest` that produces LogRecords
 * directly (the hot path of OTLP logs). protobufjs' reflection decoder builds a message object
 * per record, per attribute and per AnyValue plus a Long per timestamp, all of which survive
 * until the mapper ran and so cost old-generation GC; here fields go straight into the record,
 * attribute keys and short values are interned (no fresh string per record), and ids are hex
 * strings built in one allocation. The mapping is exactly that of logs.ts (mapLogs), which
 * stays in use for OTLP JSON.
 *
 * The reader is strict like wire-check.ts: field number 0, invalid or mismatched wire types
 * and truncation throw WireError; sub-messages the mapping does not read (scope, entity refs)
 * are validated with the generic checker.
 */
import type { AttributeValue, FacetValue, LogRecord } from '../../kernel/models.js';
import { Reader, WireError, decodeUtf8 } from '../ingest-remote-write/wire.js';
import { otlpRoot } from './codec.js';
import { levelOf, resourceLabels } from './logs.js';
import { valueText } from './values.js';
import { checkWire } from './wire-check.js';

/** Node's native Buffer slicers (untyped in @types/node): one flat string, no rope, no re-dispatch. */
interface NativeSlices {
  utf8Slice(start: number, end: number): string;
  hexSlice(start: number, end: number): string;
}
type Body = Uint8Array & NativeSlices;

/** Strings past a dozen bytes decode faster natively than through a JS loop of concatenations. */
function str(buf: Body, start: number, end: number): string {
  return end - start <= 12 ? decodeUtf8(buf, start, end) : buf.utf8Slice(start, end);
}

// ---- interning ----------------------------------------------------------------------------------

const INTERN_SLOTS = 4096;
const INTERN_MAX_LEN = 32;
const internStr: (string | undefined)[] = new Array(INTERN_SLOTS);

/**
 * A string for buf[start, end): the same string object as last time for short ASCII byte runs
 * that hash to the same slot (direct-mapped, compared byte by byte, so never wrong).
 */
function internedString(buf: Body, start: number, end: number): string {
  const len = end - start;
  if (len === 0) return '';
  if (len > INTERN_MAX_LEN) return buf.utf8Slice(start, end);
  let h = len;
  for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
  const slot = (h ^ (h >>> 16)) & (INTERN_SLOTS - 1);
  const s = internStr[slot];
  if (s !== undefined && s.length === len) {
    let i = 0;
    while (i < len && s.charCodeAt(i) === buf[start + i]) i++;
    if (i === len) return s;
  }
  const fresh = str(buf, start, end);
  // Only pure-ASCII strings compare correctly by char code against the bytes.
  if (fresh.length === len) internStr[slot] = fresh;
  return fresh;
}

function readInterned(r: Reader): string {
  const end = r.delimited();
  const s = internedString(r.buf as Body, r.pos, end);
  r.pos = end;
  return s;
}

// ---- values ------------------------------------------------------------------------------------

function fixed64(r: Reader): bigint {
  const b = r.buf;
  const p = r.pos;
  if (p + 8 > r.end) throw new WireError('truncated fixed64');
  r.pos = p + 8;
  const lo = (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
  const hi = (b[p + 4]! | (b[p + 5]! << 8) | (b[p + 6]! << 16) | (b[p + 7]! << 24)) >>> 0;
  // Nanosecond timestamps until 2255 fit 2^53 exactly: one BigInt allocation instead of three.
  if (hi < 0x200000) return BigInt(hi * 4294967296 + lo);
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/** Sentinel for "AnyValue with no member set" (maps to no facet / empty message). */
const NONE = undefined;

/** Reads an AnyValue message ending at `end` as the plain value values.ts' anyValue would give. */
function readAnyValue(r: Reader, end: number, depth: number): AttributeValue | undefined {
  if (depth > 64) throw new WireError('AnyValue nested too deeply');
  let v: AttributeValue | undefined = NONE;
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag) {
      case 10: // string_value
        v = readInterned(r);
        break;
      case 16: // bool_value
        v = r.varint() !== 0;
        break;
      case 24: // int_value
        v = r.int64();
        break;
      case 33: // double_value
        v = r.double();
        break;
      case 42: { // array_value
        const e = r.delimited();
        const arr: AttributeValue[] = [];
        while (r.pos < e) {
          const t = r.varint();
          if (t === 10) {
            const ve = r.delimited();
            arr.push(readAnyValue(r, ve, depth + 1) ?? null);
            if (r.pos !== ve) throw new WireError('AnyValue overruns its length');
          } else r.skipField(t, 0b10);
        }
        if (r.pos !== e) throw new WireError('ArrayValue overruns its length');
        v = arr;
        break;
      }
      case 50: { // kvlist_value
        const e = r.delimited();
        const obj: Record<string, AttributeValue> = {};
        while (r.pos < e) {
          const t = r.varint();
          if (t === 10) {
            const ke = r.delimited();
            readKeyValue(r, ke, depth + 1, obj);
          } else r.skipField(t, 0b10);
        }
        if (r.pos !== e) throw new WireError('KeyValueList overruns its length');
        v = obj;
        break;
      }
      case 58: { // bytes_value
        const e = r.delimited();
        v = Buffer.from(r.buf.buffer, r.buf.byteOffset + r.pos, e - r.pos).toString('base64');
        r.pos = e;
        break;
      }
      default:
        r.skipField(tag, 0b11111110);
    }
  }
  if (r.pos !== end) throw new WireError('AnyValue overruns its length');
  return v;
}

/** KeyValue into `into` (a structure: a value with no member set is null, as anyValue gives). */
function readKeyValue(r: Reader, end: number, depth: number, into: Record<string, AttributeValue>): void {
  let key = '';
  let value: AttributeValue | undefined = NONE;
  let hasValue = false;
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) key = readInterned(r);
    else if (tag === 18) {
      const e = r.delimited();
      value = readAnyValue(r, e, depth + 1);
      hasValue = true;
    } else r.skipField(tag, 0b110);
  }
  if (r.pos !== end) throw new WireError('KeyValue overruns its length');
  if (key) into[key] = hasValue ? (value ?? null) : null;
}

function facetOf(v: AttributeValue | undefined): FacetValue | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return JSON.stringify(v);
}

// ---- messages ----------------------------------------------------------------------------------

function checkSub(typeName: string, r: Reader, end: number): void {
  checkWire(otlpRoot().lookupType(typeName), r.buf.subarray(r.pos, end));
  r.pos = end;
}

function readResource(r: Reader, end: number): Record<string, string> {
  const start = r.pos;
  checkSub('opentelemetry.proto.resource.v1.Resource', r, end);
  r.pos = start;
  const attrs: Record<string, AttributeValue> = {};
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) readKeyValue(r, r.delimited(), 0, attrs);
    else r.skipField(tag);
  }
  return resourceLabels(attrs);
}

interface Ctx {
  logs: LogRecord[];
  base: Record<string, string>;
  source: string;
  byLevel: Map<string | undefined, Record<string, string>>;
  nowNs: bigint;
}

function labelsFor(c: Ctx, level: string | undefined): Record<string, string> {
  let labels = c.byLevel.get(level);
  if (!labels) {
    labels = { ...c.base, svc_stream: 'logs', source: c.source };
    if (level) labels.level = level;
    c.byLevel.set(level, labels);
  }
  return labels;
}

function readLogRecord(r: Reader, end: number, c: Ctx): void {
  let time = 0n;
  let observed = 0n;
  let sevNum = 0;
  let sevText = '';
  let message = '';
  let traceStart = 0;
  let traceEnd = 0;
  let spanStart = 0;
  let spanEnd = 0;
  let eventName = '';
  const facets: Record<string, FacetValue> = {};
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag) {
      case 9:
        time = fixed64(r);
        break;
      case 89:
        observed = fixed64(r);
        break;
      case 16:
        sevNum = r.varint();
        break;
      case 26:
        sevText = readInterned(r);
        break;
      case 42: {
        const e = r.delimited();
        const v = readAnyValue(r, e, 0);
        message = typeof v === 'string' ? v : valueText(v);
        break;
      }
      case 50: {
        const e = r.delimited();
        let key = '';
        let fv: FacetValue | undefined;
        while (r.pos < e) {
          const t = r.varint();
          if (t === 10) key = readInterned(r);
          else if (t === 18) {
            const ve = r.delimited();
            fv = facetOf(readAnyValue(r, ve, 0));
          } else r.skipField(t, 0b110);
        }
        if (r.pos !== e) throw new WireError('KeyValue overruns its length');
        if (key && fv !== undefined) facets[key] = fv;
        break;
      }
      case 56:
        r.varint();
        break;
      case 69:
        if (r.pos + 4 > r.end) throw new WireError('truncated fixed32');
        r.pos += 4;
        break;
      case 74:
        traceEnd = r.delimited();
        traceStart = r.pos;
        r.pos = traceEnd;
        break;
      case 82:
        spanEnd = r.delimited();
        spanStart = r.pos;
        r.pos = spanEnd;
        break;
      case 98:
        eventName = readInterned(r);
        break;
      default:
        r.skipField(tag, 0x1fee); // fields 1-3 and 5-12 (4 is reserved)
    }
  }
  if (r.pos !== end) throw new WireError('LogRecord overruns its length');
  if (traceEnd > traceStart) facets.trace_id = (r.buf as Body).hexSlice(traceStart, traceEnd);
  if (spanEnd > spanStart) facets.span_id = (r.buf as Body).hexSlice(spanStart, spanEnd);
  if (sevText) facets.severity_text = sevText;
  if (eventName) facets.event_name = eventName;
  c.logs.push({
    timestampNs: time !== 0n ? time : observed !== 0n ? observed : c.nowNs,
    message,
    labels: labelsFor(c, levelOf(sevNum, sevText)),
    facets,
  });
}

function readScopeLogs(r: Reader, end: number, c: Ctx): void {
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 18) {
      const e = r.delimited();
      readLogRecord(r, e, c);
    } else if (tag === 10) checkSub('opentelemetry.proto.common.v1.InstrumentationScope', r, r.delimited());
    else r.skipField(tag, 0b1110);
  }
  if (r.pos !== end) throw new WireError('ScopeLogs overruns its length');
}

/**
 * Encoders put `resource` (field 1) first, but protobuf allows any order: a first pass over
 * the (few) top-level fields finds the resource, the second decodes the scope logs with its labels.
 */
function readResourceLogs(r: Reader, end: number, logs: LogRecord[], nowNs: bigint): void {
  const start = r.pos;
  let base: Record<string, string> = {};
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) {
      const e = r.delimited();
      base = readResource(r, e);
      if (r.pos !== e) throw new WireError('Resource overruns its length');
    } else if (tag === 18) r.pos = r.delimited();
    else r.skipField(tag, 0b1110);
  }
  if (r.pos !== end) throw new WireError('ResourceLogs overruns its length');
  const c: Ctx = { logs, base, source: base.source ?? 'otlp', byLevel: new Map(), nowNs };
  r.pos = start;
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 18) {
      const e = r.delimited();
      readScopeLogs(r, e, c);
    } else r.skipField(tag);
  }
}

/** Decodes a protobuf ExportLogsServiceRequest into LogRecords (see mapLogs for the mapping). */
export function decodeLogsProtobuf(body: Uint8Array, nowNs: bigint): LogRecord[] {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const r = new Reader(buf);
  const logs: LogRecord[] = [];
  while (r.pos < r.end) {
    const tag = r.varint();
    if (tag === 10) {
      const e = r.delimited();
      readResourceLogs(r, e, logs, nowNs);
      r.pos = e;
    } else r.skipField(tag, 0b10);
  }
  return logs;
}
