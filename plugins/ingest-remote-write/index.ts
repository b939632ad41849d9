/**
 * Prometheus remote write receiver: 1.0 (`prometheus.WriteRequest`) and 2.0
 * (`io.prometheus.write.v2.Request`) at `/write`, and the same formats at `/cloud_metrics`, whose
 * series are labelled `svc_origin="cloud_metrics"` so cloud metric streams stay distinguishable.
 * The kernel has already checked the bearer key and snappy-decoded the body.
 */
import { LookoutError } from '../../kernel/errors.js';
import type { IngestDecoded, IngestRequest, IngestResponse, ReceiverRoute } from '../../kernel/extension-points.js';
import type { Labels } from '../../kernel/models.js';
import { definePlugin } from '../../kernel/plugin.js';
import { decodeWriteRequestV1Columns } from './decode-columns.js';
import { decodeWriteRequestV1, type DecodedWrite } from './decode-v1.js';
import { decodeWriteRequestV2 } from './decode-v2.js';
import { LabelSetCache } from './label-cache.js';

export const RW1_PROTO = 'prometheus.WriteRequest';
export const RW2_PROTO = 'io.prometheus.write.v2.Request';
export const CLOUD_ORIGIN_LABEL = 'svc_origin';
const CLOUD_LABELS: Labels = { [CLOUD_ORIGIN_LABEL]: 'cloud_metrics' };

/** The `proto=` parameter of the Content-Type (RW 2.0 negotiation); RW 1.0 when absent. */
export function protoParam(contentTypeHeader: string): string {
  for (const part of contentTypeHeader.split(';').slice(1)) {
    const [k, v] = part.split('=');
    if (k?.trim().toLowerCase() === 'proto') return (v ?? '').trim().replace(/^"|"$/g, '');
  }
  return RW1_PROTO;
}

function decodeRequest(req: IngestRequest, cache: LabelSetCache, extra?: Labels): IngestDecoded {
  const proto = protoParam(req.contentTypeHeader);
  let d: DecodedWrite;
  let v2 = false;
  try {
    if (proto === RW1_PROTO) {
      // Float samples (the usual request) decode into columns; anything else the general way.
      const c = decodeWriteRequestV1Columns(req.body, extra, cache);
      if (c) return { batch: { metricColumns: c.columns, metadata: c.metadata }, respond: () => ({ status: 204 }) };
      d = decodeWriteRequestV1(req.body, extra, cache);
    } else if (proto === RW2_PROTO) {
      d = decodeWriteRequestV2(req.body, extra);
      v2 = true;
    } else {
      throw new LookoutError('bad_request', `unsupported remote write protobuf message "${proto}"; expected ${RW1_PROTO} or ${RW2_PROTO}`, {
        status: 415,
      });
    }
  } catch (e) {
    if (e instanceof LookoutError) throw e;
    throw new LookoutError('bad_request', `malformed remote write request: ${(e as Error).message}`);
  }
  return {
    batch: { metrics: d.series, metadata: d.metadata },
    respond: (): IngestResponse => ({
      status: 204,
      headers: v2
        ? {
            'x-prometheus-remote-write-samples-written': String(d.samples),
            'x-prometheus-remote-write-histograms-written': String(d.histograms),
            'x-prometheus-remote-write-exemplars-written': '0',
          }
        : ({} as Record<string, string>),
    }),
  };
}

function route(path: string, extra?: Labels): ReceiverRoute {
  // One cache per route: cached label sets already include the route's extra labels.
  const cache = new LabelSetCache();
  return {
    path,
    auth: 'remote-write',
    // Prometheus' own receiver treats a missing Content-Type as 1.0 protobuf; so do we.
    contentTypes: ['application/x-protobuf', ''],
    requiredEncoding: 'snappy',
    // The decoders copy what they keep (strings, typed arrays): the body's memory can be reused.
    transientBody: true,
    decode: (req) => decodeRequest(req, cache, extra),
  };
}

export default definePlugin({
  name: 'ingest-remote-write',
  description: 'Prometheus remote write 1.0 and 2.0 at /ingester/write and /ingester/cloud_metrics',
  register(ctx) {
    ctx.extensions.receiver({
      name: 'remote_write',
      routes: [route('/write'), route('/cloud_metrics', CLOUD_LABELS)],
    });
  },
});
