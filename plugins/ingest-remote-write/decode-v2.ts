/**
 * Prometheus remote write 2.0: `io.prometheus.write.v2.Request`
 * (proto/prometheus/io/prometheus/write/v2/types.proto). Strings are interned in `symbols`
 * and referenced by index; metadata travels per series; `created_timestamp` becomes each
 * sample's start timestamp.
 */
import type { Labels, MetricMetadata, MetricSeriesInput, Sample } from '../../kernel/models.js';
import { RW1_METRIC_TYPES, checkLabels, type DecodedWrite } from './decode-v1.js';
import { readHistogram } from './histogram.js';
import { Reader, WireError, readPackedUint } from './wire.js';

interface RawSeries {
  refs: number[];
  samples: Sample[];
  created: number;
  md?: { type: number; help: number; unit: number };
  exemplars: number;
  histograms: number;
}

function readSeries(r: Reader, end: number): RawSeries {
  const s: RawSeries = { refs: [], samples: [], created: 0, exemplars: 0, histograms: 0 };
  while (r.pos < end) {
    const tag = r.varint();
    const wt = tag & 7;
    const f = tag >>> 3;
    if (f >= 2 && f <= 5 && wt !== 2) throw new WireError(`time series field ${f} has the wrong wire type ${wt}`);
    if (f === 6 && wt !== 0) throw new WireError(`time series field 6 has the wrong wire type ${wt}`);
    switch (f) {
      case 1:
        readPackedUint(r, wt, s.refs);
        break;
      case 2: {
        const e = r.delimited();
        let v = 0;
        let t = 0;
        let st = 0;
        while (r.pos < e) {
          const t2 = r.varint();
          if (t2 === 9) v = r.double();
          else if (t2 === 16) t = r.int64();
          else if (t2 === 24) st = r.int64(); // start_timestamp in newer revisions of the spec
          else r.skipField(t2, 0b1110);
        }
        if (r.pos !== e) throw new WireError('sample overruns its length');
        s.samples.push(st ? { t, v, st } : { t, v });
        break;
      }
      case 3: {
        const e = r.delimited();
        const { t, h } = readHistogram(r, e);
        s.samples.push({ t, v: 0, h });
        s.histograms++;
        if (r.pos !== e) throw new WireError('histogram overruns its length');
        break;
      }
      case 4:
        s.exemplars++;
        r.skip(wt);
        break;
      case 5: {
        const e = r.delimited();
        const md = { type: 0, help: 0, unit: 0 };
        while (r.pos < e) {
          const t2 = r.varint();
          if (t2 === 8) md.type = r.varint();
          else if (t2 === 24) md.help = r.varint();
          else if (t2 === 32) md.unit = r.varint();
          else r.skipField(t2, 0b11010);
        }
        if (r.pos !== e) throw new WireError('metadata overruns its length');
        s.md = md;
        break;
      }
      case 6:
        s.created = r.int64();
        break;
      default:
        r.skipField(tag);
    }
  }
  if (r.pos !== end) throw new WireError('time series overruns its length');
  return s;
}

export function decodeWriteRequestV2(buf: Uint8Array, extraLabels?: Labels): DecodedWrite {
  const r = new Reader(buf);
  const symbols: string[] = [];
  const raw: RawSeries[] = [];
  while (r.pos < r.end) {
    const tag = r.varint();
    if (tag === 34) symbols.push(r.string());
    else if (tag === 42) raw.push(readSeries(r, r.delimited()));
    else r.skipField(tag, 0b110000);
  }
  const sym = (i: number): string => {
    const s = symbols[i];
    if (s === undefined) throw new WireError(`symbol reference ${i} out of range (${symbols.length} symbols)`);
    return s;
  };
  const series: MetricSeriesInput[] = [];
  const metadata: MetricMetadata[] = [];
  let samples = 0;
  let histograms = 0;
  let exemplars = 0;
  for (const s of raw) {
    if (s.refs.length % 2 !== 0) throw new WireError('labels_refs has an odd length');
    const labels: Record<string, string> = {};
    let n = 0;
    for (let i = 0; i < s.refs.length; i += 2) {
      const name = sym(s.refs[i]!);
      const value = sym(s.refs[i + 1]!);
      if (name === '') throw new WireError('label with an empty name');
      if (name in labels) throw new WireError(`duplicate label name "${name}"`);
      if (value !== '') {
        labels[name] = value;
        n++;
      }
    }
    checkLabels(labels, n);
    if (extraLabels) for (const k in extraLabels) if (labels[k] === undefined) labels[k] = extraLabels[k]!;
    if (s.created) for (const smp of s.samples) if (smp.st === undefined) smp.st = s.created;
    if (s.md && (s.md.type || s.md.help || s.md.unit)) {
      metadata.push({
        metric: labels.__name__!,
        type: RW1_METRIC_TYPES[s.md.type] ?? 'unknown',
        help: sym(s.md.help),
        unit: sym(s.md.unit),
      });
    }
    samples += s.samples.length - s.histograms;
    histograms += s.histograms;
    exemplars += s.exemplars;
    if (s.samples.length) series.push({ labels, samples: s.samples });
  }
  return { series, metadata, samples, histograms, exemplars };
}
