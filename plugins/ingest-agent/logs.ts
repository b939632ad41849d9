/**
 * Agent-compatible log intake (`/v1/input`, `/api/v2/logs`): a JSON array (or one object) of
 * `{message, status, hostname, service, ddsource, ddtags, timestamp, ...}`. `ddtags`
 * (`k:v,k2:v2`) become labels, `status` the level label, other fields facets. A `message` holding
 * a JSON object is parsed into the record (as the vendor's intake does).
 */
import { badRequest } from '../../kernel/errors.js';
import type { FacetValue, LogRecord } from '../../kernel/models.js';
import {
  anyTimestampNs,
  flattenInto,
  isRecord,
  normalizeLevel,
  nowNs,
  parseJsonRecords,
  take,
  takeString,
} from '../ingest-forwarder/log-fields.js';

/** Labels a tag may not overwrite: they come from the record's own fields. */
const RESERVED = new Set(['svc_stream', 'service', 'host', 'level', 'source']);

/**
 * Parses a `k:v,k2:v2` tag list (the agent's `ddtags`, the `ddtags` query parameter) into
 * `labels`. A tag without a value (`prod`) becomes `prod="true"`; for a repeated key the
 * first value is kept.
 */
export function tagsToLabels(tags: string | readonly string[], labels: Record<string, string>, reserved = RESERVED): void {
  const list = typeof tags === 'string' ? tags.split(',') : tags;
  for (const raw of list) {
    const t = raw.trim();
    if (t === '') continue;
    const i = t.indexOf(':');
    const k = i < 0 ? t : t.slice(0, i);
    const v = i < 0 ? 'true' : t.slice(i + 1);
    if (k === '' || v === '' || reserved.has(k) || k in labels) continue;
    labels[k] = v;
  }
}

/**
 * A `message` that is itself a JSON object is parsed, as the vendor's intake does: its fields
 * join the record (the record's own fields win) and its `message` becomes the message. The
 * agent's logs pipeline sends OpenTelemetry logs this way (the vendor's collector exporter:
 * `"message": "{\"message\":\"...\",\"status\":\"WARN\",\"disk.free_mb\":12,...}"`).
 */
function withJsonMessage(rec: Record<string, unknown>): Record<string, unknown> {
  const m = rec.message;
  if (typeof m !== 'string' || m.length < 2 || m.charCodeAt(0) !== 123 /* { */ || !m.trimEnd().endsWith('}')) return rec;
  let inner: unknown;
  try {
    inner = JSON.parse(m);
  } catch {
    return rec; // not JSON after all: an ordinary message
  }
  if (!isRecord(inner)) return rec;
  const { message: _outer, ...own } = rec;
  return { ...inner, ...own, message: typeof inner.message === 'string' ? inner.message : m };
}

function agentLogToRecord(rec: unknown, index: number, extraTags: string | null): LogRecord {
  if (!isRecord(rec)) throw badRequest(`log ${index + 1} is not a JSON object`);
  if (rec.ddtags !== undefined && typeof rec.ddtags !== 'string') {
    throw badRequest(`log ${index + 1}: "ddtags" must be a comma-separated string`);
  }
  const flat: Record<string, FacetValue> = {};
  flattenInto(flat, '', withJsonMessage(rec));
  const ts = take(flat, 'timestamp', 'date', '@timestamp');
  const message = takeString(flat, 'message', 'msg', 'log') ?? '';
  const labels: Record<string, string> = { svc_stream: 'logs' };
  const service = takeString(flat, 'service');
  if (service) labels.service = service;
  const host = takeString(flat, 'hostname', 'host');
  if (host) labels.host = host;
  const level = normalizeLevel(take(flat, 'status', 'level', 'severity'));
  if (level) labels.level = level;
  const source = takeString(flat, 'ddsource', 'source');
  if (source) labels.source = source;
  const ddtags = take(flat, 'ddtags');
  if (typeof ddtags === 'string') tagsToLabels(ddtags, labels);
  if (extraTags) tagsToLabels(extraTags, labels);
  return { timestampNs: ts === undefined ? nowNs() : anyTimestampNs(ts, 'timestamp'), message, labels, facets: flat };
}

/** Decodes an agent log body; text/plain (v1 intake) is one message per line. */
export function decodeAgentLogs(body: Buffer, contentType: string, query: URLSearchParams): LogRecord[] {
  const extraTags = query.get('ddtags');
  if (contentType === 'text/plain') {
    const now = nowNs();
    const out: LogRecord[] = [];
    for (const line of body.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      const labels: Record<string, string> = { svc_stream: 'logs' };
      for (const [q, l] of [['service', 'service'], ['hostname', 'host'], ['ddsource', 'source']] as const) {
        const v = query.get(q);
        if (v) labels[l] = v;
      }
      if (extraTags) tagsToLabels(extraTags, labels);
      out.push({ timestampNs: now, message: line.replace(/\r$/, ''), labels, facets: {} });
    }
    return out;
  }
  return parseJsonRecords(body, 'logs').map((r, i) => agentLogToRecord(r, i, extraTags));
}
