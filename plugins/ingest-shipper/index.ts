/**
 * Shipper bulk intake: the search engine's `_bulk` API at `/api/v1/shipper/_bulk` (and
 * `/api/v1/shipper/<index>/_bulk`), answering in its bulk-response format, plus the probes
 * shippers and the official client make first (see probes.ts). Keys: `Svc-Api-Key` (the
 * `<ignored>:<API_KEY>` form too) or `Authorization: ApiKey base64(<id>:<API_KEY>)`.
 */
import { definePlugin } from '../../kernel/plugin.js';
import type { IngestDecoded, IngestRequest } from '../../kernel/extension-points.js';
import { parseBulk } from './bulk.js';
import { registerProbes } from './probes.js';
import { PRODUCT_HEADERS, bulkResponse } from './response.js';

/**
 * What the shippers send (Filebeat, Fluent Bit, Vector: x-ndjson; Logstash: json); the 8.x
 * client sends `application/vnd.elasticsearch+x-ndjson; compatible-with=8` (parameters are
 * ignored by the pipeline). Anything else is 400 unsupported content type.
 */
const BULK_TYPES = [
  'application/x-ndjson',
  'application/json',
  'application/vnd.elasticsearch+x-ndjson',
  'application/vnd.elasticsearch+json',
];

const ERROR_TYPE: Record<number, string> = {
  400: 'illegal_argument_exception',
  413: 'content_too_long_exception',
  429: 'es_rejected_execution_exception',
  503: 'unavailable_exception',
};

/** Errors in the search engine's shape, so clients show the reason (and retry 429/503). */
function formatError(status: number, message: string) {
  const type = /^malformed (document|action\/metadata line) on line/.test(message)
    ? 'parse_exception'
    : (ERROR_TYPE[status] ?? (status >= 500 ? 'exception' : 'illegal_argument_exception'));
  return {
    status,
    contentType: 'application/json',
    headers: { ...PRODUCT_HEADERS },
    body: JSON.stringify({ error: { root_cause: [{ type, reason: message }], type, reason: message }, status }),
  };
}

export default definePlugin({
  name: 'ingest-shipper',
  description: 'Search-engine bulk API for log shippers (Filebeat, Logstash, the official clients).',
  register(ctx) {
    const decode = (req: IngestRequest): IngestDecoded => {
      const start = performance.now();
      const m = /\/api\/v1\/shipper\/([^/]+)\/_bulk$/.exec(req.path);
      const defaultIndex = m && m[1] !== '_bulk' ? decodeURIComponent(m[1]!) : undefined;
      const { logs, items, nextId } = parseBulk(req.body, defaultIndex);
      return {
        batch: { logs },
        rejected: items.length - logs.length,
        respond: () => ({
          status: 200,
          contentType: 'application/json',
          headers: { ...PRODUCT_HEADERS },
          body: bulkResponse(items, Math.round(performance.now() - start), req.query.get('filter_path'), nextId),
        }),
      };
    };
    const path = ['/api/v1/shipper/_bulk', '/api/v1/shipper/:index/_bulk'];
    ctx.extensions.receiver({
      name: 'shipper',
      routes: (['POST', 'PUT'] as const).map((method) => ({ path, method, auth: 'svc' as const, contentTypes: BULK_TYPES, formatError, decode })),
    });
    registerProbes(ctx);
  },
});
