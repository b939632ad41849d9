/**
 * Agent-compatible trace intake (`/api/v0.2/traces`): the trace agent's AgentPayload protobuf
 * (and the legacy TracePayload of older agents) to OTLP-shaped spans.
 *
 * Mapping: trace id = `_dd.p.tid` (high 64 bits, hex; else the high half of `otel.trace_id` when
 * its low half matches) + traceID (low 64 bits) as 32 hex digits;
 * span/parent ids as 16 hex digits (parent 0 = root). Span name = resource (falling back to the
 * operation name); the operation name, resource and type are kept as attributes `operation.name`,
 * `resource.name`, `span.type`. `meta` and `metrics` → attributes; service, env, version, host,
 * language, container id → resource attributes; error ≠ 0 → status error with `error.message`.
 */
import { badRequest } from '../../kernel/errors.js';
import type { AttributeValue, Attributes, Span, SpanEvent, SpanKind, SpanLink } from '../../kernel/models.js';
import { agentTypes, decodeStrict, int64Big, isZero64, uint64Hex, type Int64 } from './proto.js';

interface PbAttrValue {
  type: number;
  string_value: string;
  bool_value: boolean;
  int_value: Int64;
  double_value: number;
  array_value?: { values: PbAttrValue[] } | null;
}

interface PbSpan {
  service: string;
  name: string;
  resource: string;
  traceID: Int64;
  spanID: Int64;
  parentID: Int64;
  start: Int64;
  duration: Int64;
  error: number;
  meta: Record<string, string>;
  metrics: Record<string, number>;
  type: string;
  spanLinks: { traceID: Int64; traceID_high: Int64; spanID: Int64; attributes: Record<string, string>; tracestate: string }[];
  spanEvents: { time_unix_nano: Int64; name: string; attributes: Record<string, PbAttrValue> }[];
}

interface PbTracerPayload {
  containerID: string;
  languageName: string;
  languageVersion: string;
  tracerVersion: string;
  runtimeID: string;
  chunks: { priority: number; origin: string; spans: PbSpan[]; tags: Record<string, string> }[];
  tags: Record<string, string>;
  env: string;
  hostname: string;
  appVersion: string;
}

interface PbIntake {
  hostName: string;
  env: string;
  traces: { spans: PbSpan[] }[];
  transactions: PbSpan[];
  tracerPayloads: PbTracerPayload[];
  tags: Record<string, string>;
  agentVersion: string;
}

function attrValue(v: PbAttrValue): AttributeValue {
  switch (v.type) {
    case 1:
      return v.bool_value;
    case 2:
      return Number(int64Big(v.int_value));
    case 3:
      return v.double_value;
    case 4:
      return (v.array_value?.values ?? []).map(attrValue);
    default:
      return v.string_value;
  }
}

const KIND_BY_META: Readonly<Record<string, SpanKind>> = {
  server: 'server',
  client: 'client',
  producer: 'producer',
  consumer: 'consumer',
  internal: 'internal',
};

/** The tracer's span type when no `span.kind` tag says more. */
const KIND_BY_TYPE: Readonly<Record<string, SpanKind>> = {
  web: 'server',
  http: 'client',
  grpc: 'client',
  sql: 'client',
  db: 'client',
  cache: 'client',
  redis: 'client',
  memcached: 'client',
  mongodb: 'client',
  cassandra: 'client',
  elasticsearch: 'client',
  queue: 'producer',
  worker: 'consumer',
};

interface Context {
  hostname: string;
  env: string;
  tracer?: PbTracerPayload;
  chunkTags?: Record<string, string>;
}

/** The high 64 bits of the trace id, as 16 hex digits (zeros when the span carries none). */
function traceIdHigh(s: PbSpan): string {
  const tid = s.meta['_dd.p.tid'];
  if (tid && /^[0-9a-fA-F]{16}$/.test(tid)) return tid.toLowerCase();
  // The vendor's OTLP conversion (its collector exporter, the agent's OTLP ingest) keeps the full
  // 128-bit id in `otel.trace_id` instead of `_dd.p.tid`; trust it only when its low half is
  // this span's traceID.
  const otel = s.meta['otel.trace_id'];
  if (otel && /^[0-9a-fA-F]{32}$/.test(otel) && otel.slice(16).toLowerCase() === uint64Hex(s.traceID)) {
    return otel.slice(0, 16).toLowerCase();
  }
  return '0000000000000000';
}

function toSpan(s: PbSpan, c: Context, where: string): Span {
  if (isZero64(s.traceID) || isZero64(s.spanID)) throw badRequest(`${where}: traceID and spanID must be non-zero`);
  const highHex = traceIdHigh(s);
  const startNs = int64Big(s.start);
  const durationNs = int64Big(s.duration);
  if (startNs < 0n || durationNs < 0n) throw badRequest(`${where}: start and duration must not be negative`);
  const attributes: Record<string, AttributeValue> = {};
  for (const [k, v] of Object.entries(s.meta)) attributes[k] = v;
  for (const [k, v] of Object.entries(s.metrics)) attributes[k] = v;
  if (c.chunkTags) for (const [k, v] of Object.entries(c.chunkTags)) attributes[k] ??= v;
  attributes['operation.name'] = s.name;
  if (s.resource) attributes['resource.name'] = s.resource;
  if (s.type) attributes['span.type'] = s.type;
  const resource: Record<string, AttributeValue> = {};
  if (s.service) resource['service.name'] = s.service;
  const env = s.meta.env || c.tracer?.env || c.env;
  if (env) resource['deployment.environment'] = env;
  const version = s.meta.version || c.tracer?.appVersion;
  if (version) resource['service.version'] = version;
  const host = c.tracer?.hostname || c.hostname;
  if (host) resource['host.name'] = host;
  if (c.tracer?.languageName) resource['telemetry.sdk.language'] = c.tracer.languageName;
  if (c.tracer?.containerID) resource['container.id'] = c.tracer.containerID;
  if (c.tracer?.runtimeID) resource['runtime-id'] = c.tracer.runtimeID;
  if (c.tracer) for (const [k, v] of Object.entries(c.tracer.tags)) resource[k] ??= v;
  const kind = KIND_BY_META[s.meta['span.kind'] ?? ''] ?? KIND_BY_TYPE[s.type] ?? 'internal';
  const events: SpanEvent[] = s.spanEvents.map((e) => {
    const attrs: Record<string, AttributeValue> = {};
    for (const [k, v] of Object.entries(e.attributes)) attrs[k] = attrValue(v);
    return { timeUnixNano: int64Big(e.time_unix_nano), name: e.name, attributes: attrs };
  });
  const links: SpanLink[] = s.spanLinks.map((l) => ({
    traceId: uint64Hex(l.traceID_high) + uint64Hex(l.traceID),
    spanId: uint64Hex(l.spanID),
    ...(l.tracestate ? { traceState: l.tracestate } : {}),
    attributes: { ...l.attributes } as Attributes,
  }));
  const errMsg = s.meta['error.message'] ?? s.meta['error.msg'];
  return {
    traceId: highHex + uint64Hex(s.traceID),
    spanId: uint64Hex(s.spanID),
    parentSpanId: isZero64(s.parentID) ? '' : uint64Hex(s.parentID),
    name: s.resource || s.name,
    kind,
    startTimeUnixNano: startNs,
    endTimeUnixNano: startNs + durationNs,
    status: s.error !== 0 ? { code: 'error', ...(errMsg ? { message: errMsg } : {}) } : { code: 'unset' },
    attributes,
    resource,
    scope: {
      name: c.tracer?.languageName ? `dd-trace-${c.tracer.languageName}` : 'datadog-agent',
      ...(c.tracer?.tracerVersion ? { version: c.tracer.tracerVersion } : {}),
    },
    events,
    links,
  };
}

export function decodeTracePayload(body: Buffer): Span[] {
  let msg: PbIntake;
  try {
    msg = decodeStrict(agentTypes().traceIntake, body) as unknown as PbIntake;
  } catch (e) {
    throw badRequest(`malformed trace payload protobuf: ${(e as Error).message}`);
  }
  const spans: Span[] = [];
  const base: Context = { hostname: msg.hostName, env: msg.env };
  msg.tracerPayloads.forEach((tp, i) =>
    tp.chunks.forEach((chunk, j) =>
      chunk.spans.forEach((s, k) =>
        spans.push(toSpan(s, { ...base, tracer: tp, chunkTags: chunk.tags }, `tracerPayload ${i + 1} chunk ${j + 1} span ${k + 1}`)),
      ),
    ),
  );
  msg.traces.forEach((t, i) => t.spans.forEach((s, k) => spans.push(toSpan(s, base, `trace ${i + 1} span ${k + 1}`))));
  msg.transactions.forEach((s, k) => spans.push(toSpan(s, base, `transaction ${k + 1}`)));
  return spans;
}
