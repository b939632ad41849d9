/**
 * OTLP log records to LogRecord. Labels (indexed): svc_stream="logs", service (service.name),
 * host (host.name), level (from severity), source, and every other resource attribute under a
 * sanitised name. Log attributes become facets: scalars keep their type, structures are JSON.
 */
import type { FacetValue, LogRecord } from '../../kernel/models.js';
import { sanitizeLabelName } from './naming.js';
import { anyValue, attributes, hex, isZero, toBigInt, valueText, type AnyValueMsg, type Int64, type KeyValueMsg } from './values.js';

export interface LogRecordMsg {
  timeUnixNano?: Int64;
  observedTimeUnixNano?: Int64;
  severityNumber?: number | null;
  severityText?: string | null;
  body?: AnyValueMsg | null;
  attributes?: KeyValueMsg[] | null;
  traceId?: Uint8Array | null;
  spanId?: Uint8Array | null;
  eventName?: string | null;
}
export interface ResourceLogsMsg {
  resource?: { attributes?: KeyValueMsg[] | null } | null;
  scopeLogs?: { scope?: { name?: string | null; version?: string | null } | null; logRecords?: LogRecordMsg[] | null }[] | null;
}
export interface ExportLogsRequest {
  resourceLogs?: ResourceLogsMsg[] | null;
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
const TEXT_LEVELS: Record<string, string> = {
  trace: 'trace', debug: 'debug', info: 'info', information: 'info', informational: 'info', notice: 'info', normal: 'info',
  warn: 'warn', warning: 'warn', error: 'error', err: 'error', fatal: 'fatal', critical: 'fatal', crit: 'fatal',
  alert: 'fatal', emerg: 'fatal', emergency: 'fatal', panic: 'fatal',
};

/** SeverityNumber ranges 1-4 TRACE … 21-24 FATAL; otherwise the text (e.g. "WARNING", "Warning2"). */
export function levelOf(num: number | null | undefined, text: string | null | undefined): string | undefined {
  if (num && num >= 1 && num <= 24) return LEVELS[Math.floor((num - 1) / 4)];
  if (text) {
    const t = text.trim().toLowerCase().replace(/[0-9]+$/, '');
    return TEXT_LEVELS[t];
  }
  return undefined;
}

/** Labels every record of a resource shares. */
export function resourceLabels(rattrs: Record<string, unknown>): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(rattrs)) {
    const text = valueText(v as Parameters<typeof valueText>[0]);
    if (text === '') continue;
    if (k === 'service.name') labels.service = text;
    else if (k === 'host.name') labels.host = text;
    else {
      const n = sanitizeLabelName(k);
      if (n && labels[n] === undefined) labels[n] = text;
    }
  }
  return labels;
}

export function facetValue(v: ReturnType<typeof anyValue>): FacetValue | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return JSON.stringify(v);
}

export function mapLogs(req: ExportLogsRequest, nowNs: bigint): { logs: LogRecord[]; rejected: number; errors: string[] } {
  const logs: LogRecord[] = [];
  for (const rl of req.resourceLogs ?? []) {
    const rattrs = attributes(rl.resource?.attributes);
    const base = resourceLabels(rattrs);
    const source = base.source ?? 'otlp';
    // Records of one resource share label objects per level (labels are immutable downstream).
    const byLevel = new Map<string | undefined, Record<string, string>>();
    for (const sl of rl.scopeLogs ?? []) {
      for (const r of sl.logRecords ?? []) {
        const level = levelOf(r.severityNumber, r.severityText);
        let labels = byLevel.get(level);
        if (!labels) {
          labels = { ...base, svc_stream: 'logs', source };
          if (level) labels.level = level;
          byLevel.set(level, labels);
        }
        const facets: Record<string, FacetValue> = {};
        if (r.attributes) {
          for (const kv of r.attributes) {
            if (!kv.key) continue;
            const fv = facetValue(anyValue(kv.value));
            if (fv !== undefined) facets[kv.key] = fv;
          }
        }
        const traceId = hex(r.traceId);
        if (traceId) facets.trace_id = traceId;
        const spanId = hex(r.spanId);
        if (spanId) facets.span_id = spanId;
        if (r.severityText) facets.severity_text = r.severityText;
        if (r.eventName) facets.event_name = r.eventName;
        const ts = !isZero(r.timeUnixNano) ? toBigInt(r.timeUnixNano) : !isZero(r.observedTimeUnixNano) ? toBigInt(r.observedTimeUnixNano) : nowNs;
        logs.push({ timestampNs: ts, message: valueText(anyValue(r.body)), labels, facets });
      }
    }
  }
  return { logs, rejected: 0, errors: [] };
}
