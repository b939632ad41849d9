/**
 * Protobuf form of trace-by-id. Tempo's `tempopb.Trace` is `repeated ResourceSpans
 * resourceSpans = 1`, wire-identical to OTLP's ExportTraceServiceRequest, so the OTLP receiver's
 * schema encodes it; `TraceByIDResponse` (v2) carries that Trace as field 1.
 */
import { otlpRoot } from '../ingest-otlp/codec.js';
import type { OtlpTraceJson } from './otlp-json.js';

export function encodeTraceProto(trace: OtlpTraceJson): Uint8Array {
  const T = otlpRoot().lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  return T.encode(T.fromObject(trace)).finish();
}

/** TraceByIDResponse { Trace trace = 1; } */
export function encodeTraceByIdV2Proto(trace: OtlpTraceJson): Uint8Array {
  const inner = encodeTraceProto(trace);
  const len: number[] = [];
  let n = inner.length;
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    len.push(b);
  } while (n);
  const out = new Uint8Array(1 + len.length + inner.length);
  out[0] = (1 << 3) | 2;
  out.set(len, 1);
  out.set(inner, 1 + len.length);
  return out;
}
