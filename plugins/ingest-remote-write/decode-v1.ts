/**
 * Prometheus remote write 1.0: `prometheus.WriteRequest` (proto/prometheus/remote.proto) read
 * field by field into MetricSeriesInput. Samples keep their float bits exactly, so staleness
 * markers (a specific NaN) survive. Exemplars are skipped.
 */
import type { Labels, MetricMetadata, MetricSeriesInput, MetricType, Sample } from '../../kernel/models.js';
import { readHistogram } from './histogram.js';
import { LabelSetCache } from './label-cache.js';
import { Reader, WireError } from './wire.js';

export const RW1_METRIC_TYPES: MetricType[] = [
  'unknown', 'counter', 'gauge', 'histogram', 'gaugehistogram', 'summary', 'info', 'stateset',
];

export interface DecodedWrite {
  series: MetricSeriesInput[];
  metadata: MetricMetadata[];
  samples: number;
  histograms: number;
  exemplars: number;
}

/** Label sets are validated as Prometheus' handler does: a name, no duplicates, no empty names. */
export function checkLabels(labels: Record<string, string>, count: number): void {
  if (count === 0) throw new WireError('series without labels');
  if (labels.__name__ === undefined) throw new WireError('series without a metric name (__name__ label)');
}

/** Decodes one Label message into `into`; false when its value is empty (an absent label). */
export function readLabel(r: Reader, end: number, into: Record<string, string>): boolean {
  let name = '';
  let value = '';
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 10) name = r.string();
    else if (tag === 18) value = r.string();
    else r.skipField(tag, 0b110);
  }
  if (name === '') throw new WireError('label with an empty name');
  if (name in into) throw new WireError(`duplicate label name "${name}"`);
  if (value === '') return false; // Prometheus treats an empty value as an absent label
  into[name] = value;
  return true;
}

/**
 * Decodes the run of Label fields (tag 10) at buf[start, end) into a validated label set, with
 * `extraLabels` added where the series has no such label. Leaves `r.pos` at `end`.
 */
export function decodeLabelFields(r: Reader, start: number, end: number, extraLabels: Labels | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  let nLabels = 0;
  r.pos = start;
  while (r.pos < end) {
    r.pos++; // tag 10
    const e = r.delimited();
    if (readLabel(r, e, labels)) nLabels++;
    if (r.pos !== e) throw new WireError('nested message overruns its length');
  }
  checkLabels(labels, nLabels);
  if (extraLabels) for (const k in extraLabels) if (labels[k] === undefined) labels[k] = extraLabels[k]!;
  return labels;
}

function readSample(r: Reader, end: number): Sample {
  let v = 0;
  let t = 0;
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 9) v = r.double();
    else if (tag === 16) t = r.int64();
    else r.skipField(tag, 0b110);
  }
  return { t, v };
}

export function readMetadata(r: Reader, end: number): MetricMetadata {
  let type = 0;
  let metric = '';
  let help = '';
  let unit = '';
  while (r.pos < end) {
    const tag = r.varint();
    switch (tag) {
      case 8: type = r.varint(); break;
      case 18: metric = r.string(); break;
      case 34: help = r.string(); break;
      case 42: unit = r.string(); break;
      default: r.skipField(tag, 0b110110);
    }
  }
  return { metric, type: RW1_METRIC_TYPES[type] ?? 'unknown', help, unit };
}

/**
 * Reads one Sample message at `p` when it has the layout every known sender uses (tag 0x12,
 * one length byte, `value` then `timestamp`, timestamp a varint of at most 8 bytes) and returns
 * the position after it, or -1 to let the general reader handle it.
 */
function fastSample(buf: Uint8Array, view: DataView, p: number, end: number, out: Sample[]): number {
  const len = buf[p + 1]!;
  const e = p + 2 + len;
  if (len >= 0x80 || e > end || len < 11 || buf[p + 2] !== 9 || buf[p + 11] !== 16) return -1;
  // Reading through a DataView keeps NaN payloads (the staleness marker) intact.
  const v = view.getFloat64(p + 3, true);
  let q = p + 12;
  let t = 0;
  let mul = 1;
  for (;;) {
    if (q >= e || mul > 2 ** 49) return -1; // truncated, or 9+ bytes (negative or huge): general path
    const b = buf[q++]!;
    t += (b & 0x7f) * mul;
    if (b < 0x80) break;
    mul *= 128;
  }
  if (q !== e) return -1;
  out.push({ t, v });
  return e;
}

export function decodeWriteRequestV1(buf: Uint8Array, extraLabels?: Labels, cache?: LabelSetCache): DecodedWrite {
  const r = new Reader(buf);
  const view = LabelSetCache.view(buf);
  const series: MetricSeriesInput[] = [];
  const metadata: MetricMetadata[] = [];
  let nSamples = 0;
  let nHist = 0;
  let nEx = 0;
  while (r.pos < r.end) {
    const tag = r.varint();
    if (tag === 10) {
      const end = r.delimited();
      // Senders put all labels first: find that run, then reuse its decoded form when cached.
      const labelsStart = r.pos;
      while (r.pos < end && buf[r.pos] === 10) {
        r.pos++;
        r.pos = r.delimited();
      }
      const labelsEnd = r.pos;
      let labels: Record<string, string> | undefined;
      let cached: Labels | undefined;
      let hash = 0;
      if (cache && labelsEnd > labelsStart) {
        hash = LabelSetCache.hash(view, labelsStart, labelsEnd);
        cached = cache.get(hash, view, labelsStart, labelsEnd)?.labels;
      }
      if (!cached) {
        labels = decodeLabelFields(r, labelsStart, labelsEnd, extraLabels);
        if (cache && labelsEnd > labelsStart) cache.set(hash, buf, labelsStart, labelsEnd, labels);
      }
      const samples: Sample[] = [];
      while (r.pos < end) {
        if (buf[r.pos] === 18) {
          const next = fastSample(buf, view, r.pos, end, samples);
          if (next >= 0) {
            r.pos = next;
            continue;
          }
        }
        const t2 = r.varint();
        if (t2 === 18) {
          const e = r.delimited();
          samples.push(readSample(r, e));
          if (r.pos !== e) throw new WireError('nested message overruns its length');
        } else if (t2 === 34) {
          const e = r.delimited();
          const { t, h } = readHistogram(r, e);
          samples.push({ t, v: 0, h });
          nHist++;
          if (r.pos !== e) throw new WireError('nested message overruns its length');
        } else if (t2 === 26) {
          nEx++;
          r.skip(2);
        } else if (t2 === 10) {
          // A label after samples (legal protobuf, unusual sender): decode into a private copy.
          labels = { ...(labels ?? cached!) };
          cached = undefined;
          const e = r.delimited();
          readLabel(r, e, labels);
          if (r.pos !== e) throw new WireError('nested message overruns its length');
        } else r.skipField(t2, 0b11110);
      }
      if (r.pos !== end) throw new WireError('time series overruns its message');
      if (labelsEnd === labelsStart && !labels) checkLabels({}, 0);
      nSamples += samples.length;
      if (samples.length) series.push({ labels: cached ?? labels!, samples });
    } else if (tag === 26) {
      const end = r.delimited();
      metadata.push(readMetadata(r, end));
      if (r.pos !== end) throw new WireError("metadata overruns its length");
    } else r.skipField(tag, 0b1010);
  }
  if (r.pos !== r.end) throw new WireError('truncated message');
  return { series, metadata, samples: nSamples - nHist, histograms: nHist, exemplars: nEx };
}
