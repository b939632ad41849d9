/**
 * A source-control webhook delivery (GitHub-style: event type in `X-GitHub-Event`, delivery id
 * in `X-GitHub-Delivery`, JSON or form-encoded `payload=` body) to an EventRecord.
 * Labels: svc_stream="events", source="webhook", repository, event, action (when present).
 * Title: "push to org/repo", "pull_request opened on org/repo: #12 Fix the bug".
 * Attributes: the payload, with the repository, sender and organization objects reduced to
 * their names, plus `delivery`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { badRequest } from '../../kernel/errors.js';
import type { AttributeValue, EventRecord } from '../../kernel/models.js';
import { isRecord, nowNs } from '../ingest-forwarder/log-fields.js';

const header = (h: IncomingHttpHeaders, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The event type header of the common source-control hosts. */
function eventType(h: IncomingHttpHeaders): string | undefined {
  const gitlab = header(h, 'x-gitlab-event');
  return (
    header(h, 'x-github-event') ??
    header(h, 'x-gitea-event') ??
    header(h, 'x-gogs-event') ??
    header(h, 'x-event-key') ?? // Bitbucket
    (gitlab ? gitlab.toLowerCase().replace(/ hook$/, '').replace(/ /g, '_') : undefined)
  );
}

function parsePayload(body: Buffer, contentType: string): Record<string, unknown> {
  let text = body.toString('utf8');
  if (contentType === 'application/x-www-form-urlencoded') {
    const p = new URLSearchParams(text).get('payload');
    if (p === null) throw badRequest('form-encoded webhook body has no "payload" field');
    text = p;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw badRequest(`malformed webhook JSON payload: ${(e as Error).message}`);
  }
  if (!isRecord(doc)) throw badRequest('webhook payload must be a JSON object');
  return doc;
}

function title(event: string, action: string | undefined, repo: string | undefined, p: Record<string, unknown>): string {
  const where = repo ?? 'unknown repository';
  if (event === 'push') {
    const ref = str(p.ref);
    return `push to ${where}${ref ? ` (${ref.replace(/^refs\/heads\//, '')})` : ''}`;
  }
  const subject = (isRecord(p.pull_request) && p.pull_request) || (isRecord(p.issue) && p.issue) || undefined;
  const head = `${event}${action ? ` ${action}` : ''} on ${where}`;
  if (subject) {
    const num = subject.number;
    const t = str(subject.title);
    return `${head}${num !== undefined ? `: #${num}` : ''}${t ? ` ${t}` : ''}`;
  }
  if (isRecord(p.release) && str(p.release.name ?? p.release.tag_name)) return `${head}: ${str(p.release.name) ?? str(p.release.tag_name)}`;
  return head;
}

function text(p: Record<string, unknown>): string {
  if (Array.isArray(p.commits) && p.commits.length) {
    return p.commits
      .map((c) => (isRecord(c) ? `${String(c.id ?? '').slice(0, 7)} ${String(c.message ?? '')}`.trim() : ''))
      .filter(Boolean)
      .join('\n');
  }
  for (const k of ['comment', 'review', 'pull_request', 'issue', 'release'] as const) {
    const o = p[k];
    if (isRecord(o) && typeof o.body === 'string') return o.body;
  }
  return str(p.zen) ?? '';
}

/** Large nested objects repeated in every delivery are reduced to what identifies them. */
function compactAttributes(p: Record<string, unknown>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [k, v] of Object.entries(p)) {
    if ((k === 'repository' || k === 'organization' || k === 'enterprise') && isRecord(v)) {
      out[k] = str(v.full_name) ?? str(v.login) ?? str(v.name) ?? String(v.id ?? '');
    } else if ((k === 'sender' || k === 'pusher') && isRecord(v)) {
      out[k] = str(v.login) ?? str(v.name) ?? String(v.id ?? '');
    } else if (k === 'installation' && isRecord(v)) {
      out[k] = Number(v.id ?? 0);
    } else if (v !== undefined) {
      out[k] = v as AttributeValue;
    }
  }
  return out;
}

export function deliveryToEvent(body: Buffer, contentType: string, headers: IncomingHttpHeaders): EventRecord {
  const event = eventType(headers);
  if (!event) throw badRequest('missing X-GitHub-Event header (the webhook event type)');
  const p = parsePayload(body, contentType);
  const repoObj = isRecord(p.repository) ? p.repository : isRecord(p.project) ? p.project : undefined;
  const repository = repoObj ? (str(repoObj.full_name) ?? str(repoObj.path_with_namespace) ?? str(repoObj.name)) : undefined;
  const action = str(p.action) ?? (isRecord(p.object_attributes) ? str(p.object_attributes.action) : undefined);
  const delivery =
    header(headers, 'x-github-delivery') ?? header(headers, 'x-gitea-delivery') ?? header(headers, 'x-request-uuid') ?? header(headers, 'x-gitlab-event-uuid');
  const labels: Record<string, string> = { svc_stream: 'events', source: 'webhook', event };
  if (repository) labels.repository = repository;
  if (action) labels.action = action;
  const attributes = compactAttributes(p);
  if (delivery) attributes.delivery = delivery;
  const hookId = header(headers, 'x-github-hook-id');
  if (hookId) attributes.hook_id = hookId;
  return {
    id: delivery ?? randomUUID(),
    timestampNs: nowNs(),
    title: title(event, action, repository, p),
    text: text(p),
    labels,
    attributes,
  };
}
