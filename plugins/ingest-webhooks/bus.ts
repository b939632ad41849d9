/**
 * Event-bus deliveries (EventBridge-style envelope, one object or an array):
 * `{version, id, "detail-type", source, account, time, region, resources, detail}` →
 * EventRecord with labels svc_stream="events", source="bus", event_source (the envelope's
 * `source`, e.g. `aws.ec2`), detail_type, region, account; title "<detail-type> from <source>";
 * text: `detail.message`/`detail.summary` or the detail as JSON; attributes: detail, resources,
 * version, time.
 */
import { randomUUID } from 'node:crypto';
import { badRequest } from '../../kernel/errors.js';
import type { AttributeValue, EventRecord } from '../../kernel/models.js';
import { isRecord, nowNs, parseIsoNs } from '../ingest-forwarder/log-fields.js';

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function envelopeToEvent(e: unknown, index: number): EventRecord {
  const where = `event ${index + 1}`;
  if (!isRecord(e)) throw badRequest(`${where} is not a JSON object`);
  const source = str(e.source);
  const detailType = str(e['detail-type']) ?? str(e.detailType) ?? str(e.DetailType);
  if (!source) throw badRequest(`${where}: "source" is required`);
  if (!detailType) throw badRequest(`${where}: "detail-type" is required`);
  let timestampNs = nowNs();
  if (e.time !== undefined) {
    const t = typeof e.time === 'string' ? parseIsoNs(e.time) : undefined;
    if (t === undefined) throw badRequest(`${where}: "time" must be an RFC 3339 timestamp`);
    timestampNs = t;
  }
  if (e.resources !== undefined && !Array.isArray(e.resources)) throw badRequest(`${where}: "resources" must be an array`);
  const labels: Record<string, string> = { svc_stream: 'events', source: 'bus', event_source: source, detail_type: detailType };
  const region = str(e.region);
  if (region) labels.region = region;
  const account = str(e.account);
  if (account) labels.account = account;
  const detail = e.detail;
  const text = isRecord(detail)
    ? (str(detail.message) ?? str(detail.summary) ?? str(detail.description) ?? JSON.stringify(detail))
    : detail === undefined
      ? ''
      : typeof detail === 'string'
        ? detail
        : JSON.stringify(detail);
  const attributes: Record<string, AttributeValue> = {};
  if (detail !== undefined) attributes.detail = detail as AttributeValue;
  attributes.resources = (e.resources ?? []) as AttributeValue;
  if (e.version !== undefined) attributes.version = e.version as AttributeValue;
  if (typeof e.time === 'string') attributes.time = e.time;
  for (const [k, v] of Object.entries(e)) {
    if (!['id', 'source', 'detail-type', 'detailType', 'DetailType', 'time', 'region', 'account', 'detail', 'resources', 'version'].includes(k)) {
      attributes[k] = v as AttributeValue;
    }
  }
  return {
    id: str(e.id) ?? randomUUID(),
    timestampNs,
    title: `${detailType} from ${source}`,
    text,
    labels,
    attributes,
  };
}

export function decodeBusEvents(body: Buffer): EventRecord[] {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw badRequest(`malformed JSON: ${(e as Error).message}`);
  }
  const list = Array.isArray(doc) ? doc : [doc];
  return list.map(envelopeToEvent);
}
