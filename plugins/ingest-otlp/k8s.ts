/**
 * Kubernetes events and objects as the OpenTelemetry Collector sends them (as OTLP logs) to
 * EventRecord. Two producers are understood on both paths:
 * - k8seventsreceiver: body = the event message, attributes k8s.event.* and k8s.namespace.name,
 *   resource k8s.object.kind/name/uid, severity text = the event type (Normal/Warning);
 * - k8sobjectsreceiver: body = the object as a map (pull mode) or `{type, object}` (watch mode);
 *   core/v1 and events.k8s.io/v1 Event objects are read like the events receiver's output,
 *   other objects become "<ACTION>: <kind>/<name>" events carrying the object.
 * Labels: svc_stream="events", source="kubernetes", namespace, kind, reason, type.
 */
import { createHash } from 'node:crypto';
import type { AttributeValue, Attributes, EventRecord } from '../../kernel/models.js';
import type { ExportLogsRequest } from './logs.js';
import { anyValue, attributes, isZero, toBigInt, valueText } from './values.js';

type Obj = { readonly [key: string]: AttributeValue };

function asObj(v: AttributeValue | undefined): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}
function str(v: AttributeValue | undefined): string {
  return typeof v === 'string' ? v : v === null || v === undefined ? '' : valueText(v);
}

function isoToNs(s: string): bigint | undefined {
  const ms = Date.parse(s);
  return Number.isFinite(ms) ? BigInt(ms) * 1_000_000n : undefined;
}

function idFor(parts: string[]): string {
  return createHash('sha256').update(parts.join('\x00')).digest('hex').slice(0, 32);
}

function fromEventObject(obj: Obj, action: string | undefined, logAttrs: Attributes): Omit<EventRecord, 'timestampNs'> & { eventTime?: bigint } {
  const md = asObj(obj.metadata) ?? {};
  const involved = asObj(obj.involvedObject) ?? asObj(obj.regarding) ?? {};
  const reason = str(obj.reason);
  const kind = str(involved.kind);
  const name = str(involved.name);
  const namespace = str(md.namespace) || str(involved.namespace);
  const type = str(obj.type);
  const message = str(obj.message) || str(obj.note);
  const labels: Record<string, string> = { svc_stream: 'events', source: 'kubernetes' };
  if (namespace) labels.namespace = namespace;
  if (kind) labels.kind = kind;
  if (reason) labels.reason = reason;
  if (type) labels.type = type;
  const attrs: Record<string, AttributeValue> = { ...logAttrs };
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'message' || k === 'note' || k === 'reason' || k === 'type') continue;
    attrs[k] = v;
  }
  if (action) attrs.action = action;
  const uid = str(md.uid);
  const when = str(obj.lastTimestamp) || str(obj.eventTime) || str(md.creationTimestamp);
  return {
    id: uid ? `${uid}:${str(md.resourceVersion)}${action ? ':' + action : ''}` : idFor([reason, kind, name, message, when]),
    title: reason ? `${reason}: ${kind}/${name}` : `${kind}/${name}`,
    text: message,
    labels,
    attributes: attrs,
    eventTime: when ? isoToNs(when) : undefined,
  };
}

function fromObject(obj: Obj, action: string | undefined, logAttrs: Attributes): Omit<EventRecord, 'timestampNs'> & { eventTime?: bigint } {
  const md = asObj(obj.metadata) ?? {};
  const kind = str(obj.kind);
  const name = str(md.name);
  const namespace = str(md.namespace);
  const labels: Record<string, string> = { svc_stream: 'events', source: 'kubernetes' };
  if (namespace) labels.namespace = namespace;
  if (kind) labels.kind = kind;
  if (action) labels.reason = action;
  const uid = str(md.uid);
  return {
    id: uid ? `${uid}:${str(md.resourceVersion)}${action ? ':' + action : ''}` : idFor([kind, namespace, name, JSON.stringify(obj)]),
    title: `${action ?? 'Object'}: ${kind}/${name}`,
    text: '',
    labels,
    attributes: { ...logAttrs, object: obj },
  };
}

export function mapK8s(req: ExportLogsRequest, nowNs: bigint): { events: EventRecord[]; rejected: number; errors: string[] } {
  const events: EventRecord[] = [];
  let rejected = 0;
  const errors: string[] = [];
  for (const rl of req.resourceLogs ?? []) {
    const res = attributes(rl.resource?.attributes);
    for (const sl of rl.scopeLogs ?? []) {
      for (const r of sl.logRecords ?? []) {
        const logAttrs = attributes(r.attributes);
        const body = anyValue(r.body);
        const bodyObj = asObj(body);
        let ev: (Omit<EventRecord, 'timestampNs'> & { eventTime?: bigint }) | undefined;
        if (bodyObj) {
          // Watch mode wraps the object: {type: ADDED|MODIFIED|DELETED, object}.
          const inner = asObj(bodyObj.object);
          const action = inner && typeof bodyObj.type === 'string' ? bodyObj.type : undefined;
          const obj = inner ?? bodyObj;
          ev = str(obj.kind) === 'Event' || obj.involvedObject || obj.regarding ? fromEventObject(obj, action, logAttrs) : fromObject(obj, action, logAttrs);
        } else if (logAttrs['k8s.event.reason'] !== undefined || res['k8s.object.kind'] !== undefined) {
          const reason = str(logAttrs['k8s.event.reason']);
          const kind = str(res['k8s.object.kind']);
          const name = str(res['k8s.object.name']);
          const namespace = str(logAttrs['k8s.namespace.name']) || str(res['k8s.namespace.name']);
          const type = r.severityText ?? '';
          const labels: Record<string, string> = { svc_stream: 'events', source: 'kubernetes' };
          if (namespace) labels.namespace = namespace;
          if (kind) labels.kind = kind;
          if (reason) labels.reason = reason;
          if (type) labels.type = type;
          const message = str(body);
          const attrs: Record<string, AttributeValue> = { ...res, ...logAttrs };
          delete attrs['k8s.event.reason'];
          const uid = str(logAttrs['k8s.event.uid']);
          ev = {
            id: uid ? `${uid}:${str(logAttrs['k8s.event.count'])}` : idFor([reason, kind, name, message, String(toBigInt(r.timeUnixNano))]),
            title: reason ? `${reason}: ${kind}/${name}` : `${kind}/${name}`,
            text: message,
            labels,
            attributes: attrs,
          };
        } else {
          rejected++;
          const why = 'log record is neither a Kubernetes event nor a Kubernetes object';
          if (!errors.includes(why)) errors.push(why);
          continue;
        }
        const ts = !isZero(r.timeUnixNano)
          ? toBigInt(r.timeUnixNano)
          : ev.eventTime ?? (!isZero(r.observedTimeUnixNano) ? toBigInt(r.observedTimeUnixNano) : nowNs);
        const { eventTime: _unused, ...rest } = ev;
        events.push({ ...rest, timestampNs: ts });
      }
    }
  }
  return { events, rejected, errors };
}
