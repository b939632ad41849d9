/** OTLP spans to the complete Span model (events, links, status, resource, scope). */
import type { Span, SpanKind, SpanStatusCode } from '../../kernel/models.js';
import { attributes, hex, toBigInt, type Int64, type KeyValueMsg } from './values.js';

interface SpanMsg {
  traceId?: Uint8Array | null;
  spanId?: Uint8Array | null;
  traceState?: string | null;
  parentSpanId?: Uint8Array | null;
  name?: string | null;
  kind?: number | null;
  startTimeUnixNano?: Int64;
  endTimeUnixNano?: Int64;
  attributes?: KeyValueMsg[] | null;
  droppedAttributesCount?: number | null;
  events?: { timeUnixNano?: Int64; name?: string | null; attributes?: KeyValueMsg[] | null; droppedAttributesCount?: number | null }[] | null;
  droppedEventsCount?: number | null;
  links?: { traceId?: Uint8Array | null; spanId?: Uint8Array | null; traceState?: string | null; attributes?: KeyValueMsg[] | null; droppedAttributesCount?: number | null }[] | null;
  droppedLinksCount?: number | null;
  status?: { message?: string | null; code?: number | null } | null;
}
export interface ExportTraceRequest {
  resourceSpans?:
    | {
        resource?: { attributes?: KeyValueMsg[] | null } | null;
        scopeSpans?: { scope?: { name?: string | null; version?: string | null; attributes?: KeyValueMsg[] | null } | null; spans?: SpanMsg[] | null }[] | null;
      }[]
    | null;
}

const KINDS: SpanKind[] = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const CODES: SpanStatusCode[] = ['unset', 'ok', 'error'];

export function mapTraces(req: ExportTraceRequest): { spans: Span[]; rejected: number; errors: string[] } {
  const spans: Span[] = [];
  let rejected = 0;
  const errors: string[] = [];
  for (const rs of req.resourceSpans ?? []) {
    const resource = attributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      const scope: Span['scope'] = { name: ss.scope?.name ?? '' };
      if (ss.scope?.version) scope.version = ss.scope.version;
      if (ss.scope?.attributes?.length) scope.attributes = attributes(ss.scope.attributes);
      for (const s of ss.spans ?? []) {
        const traceId = hex(s.traceId);
        const spanId = hex(s.spanId);
        if (traceId.length !== 32 || /^0+$/.test(traceId) || spanId.length !== 16 || /^0+$/.test(spanId)) {
          rejected++;
          const why = 'span with an invalid trace id (16 bytes) or span id (8 bytes)';
          if (!errors.includes(why)) errors.push(why);
          continue;
        }
        const span: Span = {
          traceId,
          spanId,
          parentSpanId: hex(s.parentSpanId),
          name: s.name ?? '',
          kind: KINDS[s.kind ?? 0] ?? 'unspecified',
          startTimeUnixNano: toBigInt(s.startTimeUnixNano),
          endTimeUnixNano: toBigInt(s.endTimeUnixNano),
          status: { code: CODES[s.status?.code ?? 0] ?? 'unset' },
          attributes: attributes(s.attributes),
          resource,
          scope,
          events: (s.events ?? []).map((e) => ({
            timeUnixNano: toBigInt(e.timeUnixNano),
            name: e.name ?? '',
            attributes: attributes(e.attributes),
            ...(e.droppedAttributesCount ? { droppedAttributesCount: e.droppedAttributesCount } : {}),
          })),
          links: (s.links ?? []).map((l) => ({
            traceId: hex(l.traceId),
            spanId: hex(l.spanId),
            ...(l.traceState ? { traceState: l.traceState } : {}),
            attributes: attributes(l.attributes),
            ...(l.droppedAttributesCount ? { droppedAttributesCount: l.droppedAttributesCount } : {}),
          })),
        };
        if (s.status?.message) span.status.message = s.status.message;
        if (s.traceState) span.traceState = s.traceState;
        if (s.droppedAttributesCount) span.droppedAttributesCount = s.droppedAttributesCount;
        if (s.droppedEventsCount) span.droppedEventsCount = s.droppedEventsCount;
        if (s.droppedLinksCount) span.droppedLinksCount = s.droppedLinksCount;
        spans.push(span);
      }
    }
  }
  return { spans, rejected, errors };
}
