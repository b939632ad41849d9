/**
 * A stored trace in OTLP's JSON mapping, as Tempo's trace-by-id answers: spans grouped by
 * resource and instrumentation scope, ids as base64 bytes, 64-bit integers as strings, enums by
 * name and default values omitted (protojson). The same object encodes to protobuf for clients
 * that ask for `application/protobuf` (Grafana's Tempo datasource backend does).
 */
import type { AttributeValue, Attributes, Span } from '../../kernel/models.js';

export interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}

export type OtlpAnyValue =
  | { stringValue: string }
  | { intValue: string }
  | { doubleValue: number }
  | { boolValue: boolean }
  | { arrayValue: { values: OtlpAnyValue[] } }
  | { kvlistValue: { values: OtlpKeyValue[] } }
  | Record<string, never>;

export interface OtlpSpanJson {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  name: string;
  kind: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpKeyValue[];
  droppedAttributesCount?: number;
  events: { timeUnixNano: string; name: string; attributes: OtlpKeyValue[]; droppedAttributesCount?: number }[];
  droppedEventsCount?: number;
  links: { traceId: string; spanId: string; traceState?: string; attributes: OtlpKeyValue[]; droppedAttributesCount?: number }[];
  droppedLinksCount?: number;
  status: { code?: string; message?: string };
}

export interface OtlpTraceJson {
  resourceSpans: {
    resource: { attributes: OtlpKeyValue[] };
    scopeSpans: { scope: { name: string; version?: string; attributes?: OtlpKeyValue[] }; spans: OtlpSpanJson[] }[];
  }[];
}

export function anyValue(v: AttributeValue): OtlpAnyValue {
  if (v === null) return {};
  switch (typeof v) {
    case 'string':
      return { stringValue: v };
    case 'boolean':
      return { boolValue: v };
    case 'number':
      return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
    default:
      if (Array.isArray(v)) return { arrayValue: { values: v.map(anyValue) } };
      return { kvlistValue: { values: keyValues(v as Attributes) } };
  }
}

export function keyValues(attrs: Attributes | undefined): OtlpKeyValue[] {
  if (!attrs) return [];
  return Object.entries(attrs).map(([key, value]) => ({ key, value: anyValue(value) }));
}

/** Lowercase hex id → base64 of its bytes (protojson's encoding of `bytes`). */
export function hexToBase64(hex: string): string {
  return Buffer.from(hex.length % 2 ? '0' + hex : hex, 'hex').toString('base64');
}

const KIND: Record<Span['kind'], string> = {
  unspecified: 'SPAN_KIND_UNSPECIFIED',
  internal: 'SPAN_KIND_INTERNAL',
  server: 'SPAN_KIND_SERVER',
  client: 'SPAN_KIND_CLIENT',
  producer: 'SPAN_KIND_PRODUCER',
  consumer: 'SPAN_KIND_CONSUMER',
};
const STATUS: Record<Span['status']['code'], string | undefined> = {
  unset: undefined,
  ok: 'STATUS_CODE_OK',
  error: 'STATUS_CODE_ERROR',
};

export function spanJson(s: Span): OtlpSpanJson {
  const out: OtlpSpanJson = {
    traceId: hexToBase64(s.traceId),
    spanId: hexToBase64(s.spanId),
    name: s.name,
    kind: KIND[s.kind] ?? 'SPAN_KIND_UNSPECIFIED',
    startTimeUnixNano: s.startTimeUnixNano.toString(),
    endTimeUnixNano: s.endTimeUnixNano.toString(),
    attributes: keyValues(s.attributes),
    events: s.events.map((e) => ({
      timeUnixNano: e.timeUnixNano.toString(),
      name: e.name,
      attributes: keyValues(e.attributes),
      ...(e.droppedAttributesCount ? { droppedAttributesCount: e.droppedAttributesCount } : {}),
    })),
    links: s.links.map((l) => ({
      traceId: hexToBase64(l.traceId),
      spanId: hexToBase64(l.spanId),
      ...(l.traceState ? { traceState: l.traceState } : {}),
      attributes: keyValues(l.attributes),
      ...(l.droppedAttributesCount ? { droppedAttributesCount: l.droppedAttributesCount } : {}),
    })),
    status: {},
  };
  if (s.parentSpanId && !/^0*$/.test(s.parentSpanId)) out.parentSpanId = hexToBase64(s.parentSpanId);
  if (s.traceState) out.traceState = s.traceState;
  const code = STATUS[s.status.code];
  if (code) out.status.code = code;
  if (s.status.message) out.status.message = s.status.message;
  if (s.droppedAttributesCount) out.droppedAttributesCount = s.droppedAttributesCount;
  if (s.droppedEventsCount) out.droppedEventsCount = s.droppedEventsCount;
  if (s.droppedLinksCount) out.droppedLinksCount = s.droppedLinksCount;
  return out;
}

/** Groups spans by resource, then by scope, keeping first-seen order; spans sorted by start. */
export function traceJson(spans: readonly Span[]): OtlpTraceJson {
  const sorted = [...spans].sort((a, b) => (a.startTimeUnixNano < b.startTimeUnixNano ? -1 : a.startTimeUnixNano > b.startTimeUnixNano ? 1 : 0));
  const resources = new Map<string, { resource: Attributes; scopes: Map<string, { scope: Span['scope']; spans: Span[] }> }>();
  for (const s of sorted) {
    const rk = stableKey(s.resource);
    let r = resources.get(rk);
    if (!r) resources.set(rk, (r = { resource: s.resource, scopes: new Map() }));
    const sk = `${s.scope.name}\u0000${s.scope.version ?? ''}\u0000${stableKey(s.scope.attributes ?? {})}`;
    let sc = r.scopes.get(sk);
    if (!sc) r.scopes.set(sk, (sc = { scope: s.scope, spans: [] }));
    sc.spans.push(s);
  }
  return {
    resourceSpans: [...resources.values()].map((r) => ({
      resource: { attributes: keyValues(r.resource) },
      scopeSpans: [...r.scopes.values()].map((sc) => ({
        scope: {
          name: sc.scope.name,
          ...(sc.scope.version ? { version: sc.scope.version } : {}),
          ...(sc.scope.attributes && Object.keys(sc.scope.attributes).length ? { attributes: keyValues(sc.scope.attributes) } : {}),
        },
        spans: sc.spans.map(spanJson),
      })),
    })),
  };
}

function stableKey(a: Attributes): string {
  return JSON.stringify(Object.keys(a).sort().map((k) => [k, a[k]]));
}
