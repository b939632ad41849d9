/**
 * OTLP/HTTP wire handling: protobuf or JSON request bodies into protobufjs message objects (one
 * shape for both encodings, so the mappers never see the wire), Export*ServiceResponse bodies
 * in the request's encoding, and errors as google.rpc.Status.
 */
import protobuf from 'protobufjs';
import { badRequest } from '../../kernel/errors.js';
import type { IngestResponse } from '../../kernel/extension-points.js';
import { loadProtoRoot, OTLP_PROTO_FILES } from './proto-root.js';
import { checkWire } from './wire-check.js';

export const PROTOBUF = 'application/x-protobuf';
export const JSON_TYPE = 'application/json';
export const OTLP_CONTENT_TYPES = [PROTOBUF, JSON_TYPE] as const;

let root: protobuf.Root | undefined;
export function otlpRoot(): protobuf.Root {
  root ??= loadProtoRoot(OTLP_PROTO_FILES);
  return root;
}

export type Signal = 'metrics' | 'logs' | 'traces';

const SERVICE: Record<Signal, { request: string; response: string; rejectedField: string }> = {
  metrics: {
    request: 'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest',
    response: 'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse',
    rejectedField: 'rejectedDataPoints',
  },
  logs: {
    request: 'opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest',
    response: 'opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse',
    rejectedField: 'rejectedLogRecords',
  },
  traces: {
    request: 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest',
    response: 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse',
    rejectedField: 'rejectedSpans',
  },
};

/** Fields that carry ids: hex strings in OTLP JSON, bytes in protobuf. */
const HEX_ID_FIELDS = new Set(['traceId', 'spanId', 'parentSpanId']);

function camel(key: string): string {
  return key.includes('_') ? key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase()) : key;
}

function hexToBytes(field: string, s: string): Uint8Array {
  if (s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) throw badRequest(`invalid ${field} "${s.slice(0, 40)}": expected hex`);
  return Buffer.from(s, 'hex');
}

/**
 * The OTLP JSON mapping differs from proto3's canonical JSON in two ways protobufjs' fromObject
 * does not know: ids are hex rather than base64, and the collector also accepts snake_case keys.
 * Attribute keys live in `key` values, never in object keys, so renaming keys is safe.
 */
function normalizeJson(v: unknown, depth = 0): unknown {
  if (depth > 64) throw badRequest('JSON nesting too deep');
  if (Array.isArray(v)) return v.map((x) => normalizeJson(x, depth + 1));
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k0, val] of Object.entries(v as Record<string, unknown>)) {
    const k = camel(k0);
    if (HEX_ID_FIELDS.has(k) && typeof val === 'string') out[k] = hexToBytes(k, val);
    else out[k] = normalizeJson(val, depth + 1);
  }
  return out;
}

/** Decodes an Export*ServiceRequest in either encoding; malformed input is a 400 naming why. */
export function decodeRequest<T>(signal: Signal, contentType: string, body: Buffer): T {
  const type = otlpRoot().lookupType(SERVICE[signal].request);
  if (contentType === JSON_TYPE) {
    let parsed: unknown;
    try {
      parsed = body.length ? JSON.parse(body.toString('utf8')) : {};
    } catch (e) {
      throw badRequest(`malformed OTLP JSON: ${(e as Error).message}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw badRequest('malformed OTLP JSON: expected an object');
    }
    try {
      return type.fromObject(normalizeJson(parsed) as Record<string, unknown>) as unknown as T;
    } catch (e) {
      if ((e as { status?: number }).status) throw e;
      throw badRequest(`malformed OTLP JSON: ${(e as Error).message}`);
    }
  }
  try {
    checkWire(type, body);
    return type.decode(body) as unknown as T;
  } catch (e) {
    throw badRequest(`malformed OTLP protobuf ${type.name}: ${(e as Error).message}`);
  }
}

/** The Export*ServiceResponse, with partialSuccess only when something was rejected. */
export function encodeResponse(signal: Signal, contentType: string, rejected: number, message: string): IngestResponse {
  const spec = SERVICE[signal];
  const partial = rejected > 0 || message ? { [spec.rejectedField]: rejected, errorMessage: message } : undefined;
  if (contentType === JSON_TYPE) {
    const body = partial ? { partialSuccess: { ...partial, [spec.rejectedField]: String(rejected) } } : {};
    return { status: 200, contentType: JSON_TYPE, body: JSON.stringify(body) };
  }
  const type = otlpRoot().lookupType(spec.response);
  const msg = type.fromObject(partial ? { partialSuccess: partial } : {});
  return { status: 200, contentType: PROTOBUF, body: type.encode(msg).finish() };
}

/** gRPC status codes for the HTTP statuses the ingest path produces (OTLP/HTTP spec mapping). */
function grpcCode(status: number): number {
  if (status === 400 || status === 415) return 3; // INVALID_ARGUMENT
  if (status === 401) return 16; // UNAUTHENTICATED
  if (status === 403) return 7; // PERMISSION_DENIED
  if (status === 404) return 5; // NOT_FOUND
  if (status === 413 || status === 429) return 8; // RESOURCE_EXHAUSTED
  if (status === 503) return 14; // UNAVAILABLE
  return 13; // INTERNAL
}

/** google.rpc.Status {code=1 int32, message=2 string}; details are never sent. */
export function formatStatus(status: number, message: string, req: { contentType: string }): IngestResponse {
  const code = grpcCode(status);
  if (req.contentType === JSON_TYPE) {
    return { status, contentType: JSON_TYPE, body: JSON.stringify({ code, message }) };
  }
  const w = protobuf.Writer.create();
  w.uint32(8).int32(code);
  w.uint32(18).string(message);
  return { status, contentType: PROTOBUF, body: w.finish() };
}
