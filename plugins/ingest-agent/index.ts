/**
 * Agent-compatible intake: logs (`/v1/input`, `/api/v2/logs`), metrics (`/api/v2/series`,
 * protobuf MetricPayload or the API client's JSON), distributions (`/api/beta/sketches`), traces
 * (`/api/v0.2/traces`) and the
 * agent's API key check (`GET /api/v1/validate`). Keys come in Compat-Api-Key or DD-API-KEY
 * (what the vendor's agent and API client send).
 */
import { definePlugin } from '../../kernel/plugin.js';
import { INGEST_BASE } from '../../kernel/ingest.js';
import type { IngestDecoded } from '../../kernel/extension-points.js';
import { decodeAgentLogs } from './logs.js';
import { decodeSeriesJson, decodeSeriesProtobuf } from './series.js';
import { decodeSketchPayload } from './sketches.js';
import { decodeTracePayload } from './traces.js';

const JSON_TYPES = ['application/json', 'text/json'];
const PROTOBUF_TYPES = ['application/x-protobuf', 'application/protobuf', 'application/vnd.google.protobuf'];

const json = (status: number, body: unknown) => () => ({
  status,
  contentType: 'application/json',
  body: JSON.stringify(body),
});

/** The vendor's intake answers errors as `{"errors": [...]}`; agents log the text. */
const formatError = (status: number, message: string) => ({
  status,
  contentType: 'application/json',
  body: JSON.stringify({ errors: [message] }),
});

export default definePlugin({
  name: 'ingest-agent',
  description: 'Agent-compatible logs, series and traces intake.',
  register(ctx) {
    ctx.extensions.receiver({
      name: 'agent',
      routes: [
        {
          // The v1 intake answers 200, the v2 intake 202, both with `{}`.
          path: '/v1/input',
          auth: 'compat',
          contentTypes: [...JSON_TYPES, 'text/plain'],
          formatError,
          decode: (req): IngestDecoded => ({
            batch: { logs: decodeAgentLogs(req.body, req.contentType, req.query) },
            respond: json(200, {}),
          }),
        },
        {
          path: '/api/v2/logs',
          auth: 'compat',
          contentTypes: JSON_TYPES,
          formatError,
          decode: (req): IngestDecoded => ({
            batch: { logs: decodeAgentLogs(req.body, req.contentType, req.query) },
            respond: json(202, {}),
          }),
        },
        {
          path: '/api/v2/series',
          auth: 'compat',
          contentTypes: [...PROTOBUF_TYPES, ...JSON_TYPES],
          formatError,
          decode(req): IngestDecoded {
            const { metrics, metadata } = PROTOBUF_TYPES.includes(req.contentType)
              ? decodeSeriesProtobuf(req.body)
              : decodeSeriesJson(req.body);
            return { batch: { metrics, metadata }, respond: json(202, { errors: [] }) };
          },
        },
        {
          // Distributions: the agent sends a (possibly empty) SketchPayload on every flush.
          path: '/api/beta/sketches',
          auth: 'compat',
          contentTypes: PROTOBUF_TYPES,
          formatError,
          decode(req): IngestDecoded {
            const { metrics, metadata } = decodeSketchPayload(req.body);
            return { batch: { metrics, metadata }, respond: json(202, {}) };
          },
        },
        {
          path: '/api/v0.2/traces',
          auth: 'compat',
          contentTypes: PROTOBUF_TYPES,
          formatError,
          decode: (req): IngestDecoded => ({ batch: { spans: decodeTracePayload(req.body) }, respond: json(202, {}) }),
        },
      ],
    });
    // The agent checks its API key at startup before sending anything.
    ctx.route({
      method: 'GET',
      path: `${INGEST_BASE}/api/v1/validate`,
      family: 'json',
      auth: { ingest: 'compat' },
      handler: () => ({ valid: true }),
    });
  },
});
