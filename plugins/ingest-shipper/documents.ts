/**
 * A shipper document (Filebeat, Logstash, Fluent Bit/Vector `es` outputs, the search engine's
 * clients) to a LogRecord. ECS fields: `@timestamp`, `message`, `log.level`, `service.name`,
 * `host.name`, `kubernetes.*`; nested objects and dotted keys are flattened alike into facets.
 */
import type { FacetValue, LogRecord } from '../../kernel/models.js';
import { anyTimestampNs, flattenInto, normalizeLevel, nowNs, take, takeString } from '../ingest-forwarder/log-fields.js';

export function documentToLog(doc: Record<string, unknown>, index: string | undefined, now: bigint): LogRecord {
  const flat: Record<string, FacetValue> = {};
  flattenInto(flat, '', doc);
  const ts = take(flat, '@timestamp', 'timestamp');
  const message = takeString(flat, 'message', 'log', 'msg', 'event.original', 'log.original') ?? JSON.stringify(doc);
  const labels: Record<string, string> = { svc_stream: 'logs' };
  const level = normalizeLevel(take(flat, 'log.level', 'level', 'severity'));
  if (level) labels.level = level;
  const service = takeString(flat, 'service.name', 'service');
  if (service) labels.service = service;
  const host = takeString(flat, 'host.name', 'host.hostname', 'hostname', 'host');
  if (host) labels.host = host;
  const namespace = takeString(flat, 'kubernetes.namespace', 'kubernetes.namespace_name');
  if (namespace) labels.namespace = namespace;
  const pod = takeString(flat, 'kubernetes.pod.name', 'kubernetes.pod_name');
  if (pod) labels.pod = pod;
  const container = takeString(flat, 'kubernetes.container.name', 'kubernetes.container_name');
  if (container) labels.container = container;
  if (index !== undefined) flat._index = index;
  return { timestampNs: ts === undefined ? now : anyTimestampNs(ts, '@timestamp'), message, labels, facets: flat };
}

export { nowNs };
