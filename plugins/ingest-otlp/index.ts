/**
 * OTLP/HTTP receiver: metrics, logs, traces and Kubernetes events/objects, protobuf or JSON,
 * at the paths of SPEC.md's ingestion table. Answers Export*ServiceResponse in the request's
 * encoding (with partialSuccess when records were rejected) and errors as google.rpc.Status.
 */
import type { IngestDecoded, IngestRequest, ReceiverRoute } from '../../kernel/extension-points.js';
import type { IngestBatch } from '../../kernel/models.js';
import { definePlugin } from '../../kernel/plugin.js';
import { badRequest } from '../../kernel/errors.js';
import { OTLP_CONTENT_TYPES, PROTOBUF, decodeRequest, encodeResponse, formatStatus, otlpRoot, type Signal } from './codec.js';
import { mapK8s } from './k8s.js';
import { mapLogs, type ExportLogsRequest } from './logs.js';
import { decodeLogsProtobuf } from './logs-decode.js';
import { mapMetrics, type ExportMetricsRequest } from './metrics.js';
import { mapTraces, type ExportTraceRequest } from './traces.js';

interface Mapped {
  batch: IngestBatch;
  rejected: number;
  errors: string[];
}

/** Protobuf logs through the hand-written decoder (the hot path); same mapping as mapLogs. */
function decodeLogs(body: Buffer) {
  try {
    return decodeLogsProtobuf(body, nowNs());
  } catch (e) {
    throw badRequest(`malformed OTLP protobuf ExportLogsServiceRequest: ${(e as Error).message}`);
  }
}

function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

const MAPPERS: Record<'metrics' | 'logs' | 'traces' | 'k8s', { signal: Signal; map(req: IngestRequest): Mapped }> = {
  metrics: {
    signal: 'metrics',
    map(req) {
      const r = mapMetrics(decodeRequest<ExportMetricsRequest>('metrics', req.contentType, req.body));
      return { batch: { metrics: r.series, metadata: r.metadata }, rejected: r.rejected, errors: r.errors };
    },
  },
  logs: {
    signal: 'logs',
    map(req) {
      if (req.contentType === PROTOBUF) return { batch: { logs: decodeLogs(req.body) }, rejected: 0, errors: [] };
      const r = mapLogs(decodeRequest<ExportLogsRequest>('logs', req.contentType, req.body), nowNs());
      return { batch: { logs: r.logs }, rejected: r.rejected, errors: r.errors };
    },
  },
  traces: {
    signal: 'traces',
    map(req) {
      const r = mapTraces(decodeRequest<ExportTraceRequest>('traces', req.contentType, req.body));
      return { batch: { spans: r.spans }, rejected: r.rejected, errors: r.errors };
    },
  },
  k8s: {
    signal: 'logs',
    map(req) {
      const r = mapK8s(decodeRequest<ExportLogsRequest>('logs', req.contentType, req.body), nowNs());
      return { batch: { events: r.events }, rejected: r.rejected, errors: r.errors };
    },
  },
};

function route(path: string[], kind: keyof typeof MAPPERS): ReceiverRoute {
  const m = MAPPERS[kind];
  return {
    path,
    auth: 'svc',
    contentTypes: OTLP_CONTENT_TYPES,
    decode(req): IngestDecoded {
      const r = m.map(req);
      const message = r.errors.join('; ');
      return {
        batch: r.batch,
        rejected: r.rejected,
        rejectedReason: message || undefined,
        respond: () => encodeResponse(m.signal, req.contentType, r.rejected, message),
      };
    },
    formatError: formatStatus,
  };
}

export default definePlugin({
  name: 'ingest-otlp',
  description: 'OTLP/HTTP metrics, logs, traces and Kubernetes events/objects (protobuf and JSON)',
  register(ctx) {
    otlpRoot(); // load the .proto files at startup so a broken install fails fast
    ctx.extensions.receiver({
      name: 'otlp',
      routes: [
        route(['/otlp/metrics', '/otlp/v1/metrics'], 'metrics'),
        route(['/otlp/v1/logs', '/otlp/logs'], 'logs'),
        route(['/otlp/traces', '/otlp/v1/traces'], 'traces'),
        route(['/otlp/k8s_events', '/otlp/k8s_objects'], 'k8s'),
      ],
    });
  },
});
