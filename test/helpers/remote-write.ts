/**
 * Encodes Prometheus remote-write 1.0 requests (prometheus.WriteRequest protobuf, snappy block
 * compressed) so tests and benchmarks can send identical data to Lookout and to a real
 * Prometheus. The encoder writes the wire format directly (it is tiny and hot in benchmarks);
 * staleness markers keep their exact NaN bit pattern.
 */
import protobuf from 'protobufjs/minimal.js';
import snappy from 'snappyjs';
import { isStaleMarker, STALE_NAN_BITS_HI, STALE_NAN_BITS_LO, type MetricMetadata } from '../../kernel/models.js';

export interface RWSeries {
  labels: Record<string, string>;
  samples: { t: number; v: number }[];
}

const METRIC_TYPES: Record<string, number> = {
  unknown: 0,
  counter: 1,
  gauge: 2,
  histogram: 3,
  gaugehistogram: 4,
  summary: 5,
  info: 6,
  stateset: 7,
};

/** Encodes a WriteRequest. Labels are sorted by name, as Prometheus requires. */
export function encodeWriteRequest(series: readonly RWSeries[], metadata: readonly MetricMetadata[] = []): Uint8Array {
  const w = protobuf.Writer.create();
  for (const s of series) {
    w.uint32((1 << 3) | 2).fork();
    for (const name of Object.keys(s.labels).sort()) {
      w.uint32((1 << 3) | 2).fork();
      w.uint32((1 << 3) | 2).string(name);
      w.uint32((2 << 3) | 2).string(s.labels[name]!);
      w.ldelim();
    }
    for (const smp of s.samples) {
      w.uint32((2 << 3) | 2).fork();
      w.uint32((1 << 3) | 1);
      if (isStaleMarker(smp.v)) w.fixed32(STALE_NAN_BITS_LO).fixed32(STALE_NAN_BITS_HI);
      else w.double(smp.v);
      w.uint32((2 << 3) | 0).int64(smp.t);
      w.ldelim();
    }
    w.ldelim();
  }
  for (const m of metadata) {
    w.uint32((3 << 3) | 2).fork();
    w.uint32((1 << 3) | 0).int32(METRIC_TYPES[m.type] ?? 0);
    w.uint32((2 << 3) | 2).string(m.metric);
    w.uint32((4 << 3) | 2).string(m.help);
    w.uint32((5 << 3) | 2).string(m.unit);
    w.ldelim();
  }
  return w.finish();
}

/** Snappy block-compressed WriteRequest, ready to POST. */
export function encodeRemoteWriteBody(series: readonly RWSeries[], metadata: readonly MetricMetadata[] = []): Uint8Array {
  return snappy.compress(encodeWriteRequest(series, metadata));
}

/**
 * POSTs one remote-write request; throws with the response text unless 2xx. `headers` carries
 * auth (Lookout wants `Authorization: Bearer <ingest key>`).
 */
export async function remoteWrite(
  url: string,
  series: readonly RWSeries[],
  opts: { headers?: Record<string, string>; metadata?: readonly MetricMetadata[] } = {},
): Promise<void> {
  const body = encodeRemoteWriteBody(series, opts.metadata);
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-protobuf',
      'content-encoding': 'snappy',
      'x-prometheus-remote-write-version': '0.1.0',
      ...(opts.headers ?? {}),
    },
    body,
  });
  if (res.status < 200 || res.status >= 300) {
    throw new Error(`remote write to ${url} failed: ${res.status} ${await res.text()}`);
  }
  await res.arrayBuffer();
}

/**
 * Splits series into requests by time slices (every series' samples within each slice, oldest
 * slice first). Prometheus' head only accepts samples within an hour of its newest sample, so
 * multi-hour data must arrive in time order across all series.
 */
export function sliceByTime(series: readonly RWSeries[], sliceMs: number): RWSeries[][] {
  let min = Infinity;
  let max = -Infinity;
  for (const s of series) {
    for (const p of s.samples) {
      if (p.t < min) min = p.t;
      if (p.t > max) max = p.t;
    }
  }
  if (min > max) return [];
  const n = Math.floor((max - min) / sliceMs) + 1;
  const slices: RWSeries[][] = Array.from({ length: n }, () => []);
  for (const s of series) {
    const parts: { t: number; v: number }[][] = Array.from({ length: n }, () => []);
    for (const p of s.samples) parts[Math.floor((p.t - min) / sliceMs)]!.push(p);
    parts.forEach((samples, i) => {
      if (samples.length) slices[i]!.push({ labels: s.labels, samples });
    });
  }
  return slices;
}
