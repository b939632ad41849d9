/**
 * A shipper document (Filebeat, Logstash, Fluent Bit/Vector `es` outputs, the search engine's
 * clients) to a LogRecord. ECS fields: `@timestamp`, `message`, `log.level`, `service.name`,
 * `host.name`, `kubernetes.*`; nested objects and dotted keys are flattened alike into facets.
 */
import type { FacetValue, LogRecord } from '../../kernel/models.js';
import { FieldPlan, anyTimestampNs, normalizeLevel, nowNs } from '../ingest-forwarder/log-fields.js';

const plan = new FieldPlan(
  {
    ts: ['@timestamp', 'timestamp'],
    message: ['message', 'log', 'msg', 'event.original', 'log.original'],
    level: ['log.level', 'level', 'severity'],
    service: ['service.name', 'service'],
    host: ['host.name', 'host.hostname', 'hostname', 'host'],
    namespace: ['kubernetes.namespace', 'kubernetes.namespace_name'],
    pod: ['kubernetes.pod.name', 'kubernetes.pod_name'],
    container: ['kubernetes.container.name', 'kubernetes.container_name'],
  },
  ['message', 'service', 'host', 'namespace', 'pod', 'container'],
);

const LABEL_SLOTS = [
  [3, 'service'],
  [4, 'host'],
  [5, 'namespace'],
  [6, 'pod'],
  [7, 'container'],
] as const;

export function documentToLog(doc: Record<string, unknown>, index: string | undefined, now: bigint): LogRecord {
  const v: (FacetValue | undefined)[] = [];
  const facets = plan.apply(doc, v);
  const labels: Record<string, string> = { svc_stream: 'logs' };
  const level = normalizeLevel(v[2]);
  if (level) labels.level = level;
  for (const [i, name] of LABEL_SLOTS) if (v[i] !== undefined) labels[name] = String(v[i]);
  if (index !== undefined) facets._index = index;
  return {
    timestampNs: v[0] === undefined ? now : anyTimestampNs(v[0], '@timestamp'),
    message: v[1] === undefined ? JSON.stringify(doc) : String(v[1]),
    labels,
    facets,
  };
}

export { nowNs };
