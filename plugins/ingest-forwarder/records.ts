/**
 * One forwarder record (Fluent Bit, Vector, Logstash HTTP outputs) to a LogRecord:
 * `log`/`message`/`msg` → message, `level`/`severity` → level label, Kubernetes metadata
 * (Fluent Bit's kubernetes filter, Vector's kubernetes_logs source) → namespace/pod/container
 * labels, host and service when present; every other field → a facet (nested keys dotted).
 */
import { badRequest } from '../../kernel/errors.js';
import type { FacetValue, LogRecord } from '../../kernel/models.js';
import { anyTimestampNs, flattenInto, isRecord, normalizeLevel, nowNs, take, takeString } from './log-fields.js';

/** Date keys tried after the configured one: Fluent Bit, Logstash/ECS, Vector, generic. */
export const DEFAULT_DATE_KEYS = ['date', '@timestamp', 'timestamp', 'time', 'ts'];

export interface RecordOptions {
  /** Keys holding the record time, first match wins. */
  dateKeys: readonly string[];
}

export function forwarderRecordToLog(rec: unknown, index: number, opts: RecordOptions, tsNs?: bigint): LogRecord {
  if (!isRecord(rec)) throw badRequest(`record ${index + 1} is not a JSON object`);
  const flat: Record<string, FacetValue> = {};
  flattenInto(flat, '', rec);
  let timestampNs = tsNs;
  for (const k of opts.dateKeys) {
    const v = take(flat, k);
    if (v !== undefined && timestampNs === undefined) timestampNs = anyTimestampNs(v, k);
  }
  const message = takeString(flat, 'log', 'message', 'msg') ?? JSON.stringify(rec);
  const labels: Record<string, string> = { svc_stream: 'logs' };
  const level = normalizeLevel(take(flat, 'level', 'severity', 'log.level', 'loglevel', 'lvl', 'severity_text'));
  if (level) labels.level = level;
  const namespace = takeString(flat, 'kubernetes.namespace_name', 'kubernetes.namespace', 'kubernetes.pod_namespace');
  if (namespace) labels.namespace = namespace;
  const pod = takeString(flat, 'kubernetes.pod_name', 'kubernetes.pod.name');
  if (pod) labels.pod = pod;
  const container = takeString(flat, 'kubernetes.container_name', 'kubernetes.container.name');
  if (container) labels.container = container;
  const host = takeString(flat, 'host', 'hostname', 'host.name', 'kubernetes.host', 'kubernetes.pod_node_name');
  if (host) labels.host = host;
  const service =
    takeString(flat, 'service', 'service.name', 'service_name') ??
    str(flat['kubernetes.labels.app.kubernetes.io/name']) ??
    str(flat['kubernetes.labels.app']) ??
    str(flat['kubernetes.pod_labels.app']);
  if (service) labels.service = service;
  return { timestampNs: timestampNs ?? nowNs(), message, labels, facets: flat };
}

const str = (v: FacetValue | undefined): string | undefined => (v === undefined || v === '' ? undefined : String(v));
