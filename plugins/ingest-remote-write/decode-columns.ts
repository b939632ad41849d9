/**
 * Remote write 1.0 straight into the columnar batch form (MetricColumns): the hot path for what
 * Prometheus sends every interval (float samples for label sets it sent before). A series whose
 * label bytes are in the LabelSetCache costs a hash and a byte comparison; its samples go into
 * typed arrays, no object per sample or per series. Sample values are copied as raw 32-bit
 * words, so NaN payloads (staleness markers) cannot be canonicalised on the way.
 *
 * Anything the columnar form does not carry (native histograms, a label after the samples)
 * makes this decoder return undefined, and the caller decodes the request with
 * decodeWriteRequestV1 instead. Malformed input throws WireError exactly where the general
 * decoder would, and nothing is returned, so a bad request is rejected whole.
 */
import type { Labels, MetricColumns, MetricMetadata, SeriesHandle } from '../../kernel/models.js';
import { decodeLabelFields, readMetadata } from './decode-v1.js';
import { LabelSetCache, type LabelSetEntry } from './label-cache.js';
import { Reader, WireError } from './wire.js';

export interface DecodedColumns {
  columns: MetricColumns;
  metadata: MetricMetadata[];
  samples: number;
}

/**
 * Growable columns for one request. Timestamps, values and offsets start out in one
 * ArrayBuffer sized for one sample per series (Prometheus' usual request): each request costs
 * one external allocation, which also keeps V8's external-memory GC triggers quiet.
 */
class ColumnsBuilder {
  t: Float64Array;
  v: Float64Array;
  /** `v` as 32-bit words: value bits are copied, never passed through a JS number. */
  vw: Int32Array;
  n = 0;
  /** Filled by index and trimmed in finish: pushing 2,000 handles reallocated it ~20 times. */
  readonly series: SeriesHandle[];
  nSeries = 0;
  offsets: Uint32Array;

  constructor(seriesEstimate: number) {
    this.series = new Array<SeriesHandle>(seriesEstimate);
    const cap = Math.max(16, seriesEstimate);
    const ab = new ArrayBuffer(cap * 16 + (seriesEstimate + 2) * 4);
    this.t = new Float64Array(ab, 0, cap);
    this.v = new Float64Array(ab, cap * 8, cap);
    this.vw = new Int32Array(ab, cap * 8, cap * 2);
    this.offsets = new Uint32Array(ab, cap * 16, seriesEstimate + 2);
  }

  grow(): void {
    const t = new Float64Array(this.t.length * 2);
    t.set(this.t);
    const v = new Float64Array(this.v.length * 2);
    v.set(this.v);
    this.t = t;
    this.v = v;
    this.vw = new Int32Array(v.buffer);
  }

  endSeries(h: SeriesHandle, from: number): void {
    if (this.n === from) return; // a series without samples stores nothing
    const k = this.nSeries;
    if (k + 2 > this.offsets.length) {
      const o = new Uint32Array(this.offsets.length * 2);
      o.set(this.offsets);
      this.offsets = o;
    }
    this.offsets[k] = from;
    this.series[k] = h;
    this.nSeries = k + 1;
    this.offsets[k + 1] = this.n;
  }

  finish(): MetricColumns {
    const k = this.nSeries;
    this.series.length = k;
    return {
      series: this.series,
      offsets: this.offsets.subarray(0, k + 1),
      timestamps: this.t.subarray(0, this.n),
      values: this.v.subarray(0, this.n),
    };
  }
}

/** Decodes (and caches) the label run buf[start, end), after validating it as decodeWriteRequestV1 does. */
function decodeLabelRun(
  r: Reader,
  buf: Uint8Array,
  start: number,
  end: number,
  hash: number,
  cache: LabelSetCache,
  extraLabels: Labels | undefined,
): LabelSetEntry {
  return cache.set(hash, buf, start, end, decodeLabelFields(r, start, end, extraLabels));
}

export function decodeWriteRequestV1Columns(buf: Uint8Array, extraLabels: Labels | undefined, cache: LabelSetCache): DecodedColumns | undefined {
  const r = new Reader(buf);
  const cols = new ColumnsBuilder(countTopLevelSeries(buf));
  const metadata: MetricMetadata[] = [];
  // The checks after the loop stay out of the loop's function: a call entering the loop's
  // optimized (on-stack-replacement) code would otherwise reach them compiled without type
  // feedback and deoptimise at the end of the request.
  if (!decodeFields(r, buf, cols, metadata, extraLabels, cache)) return undefined;
  if (r.pos !== r.end) throw new WireError('truncated message');
  return { columns: cols.finish(), metadata, samples: cols.n };
}

/** The WriteRequest's fields into `cols` and `metadata`; false: the general decoder must take it. */
function decodeFields(
  r: Reader,
  buf: Uint8Array,
  cols: ColumnsBuilder,
  metadata: MetricMetadata[],
  extraLabels: Labels | undefined,
  cache: LabelSetCache,
): boolean {
  const view = LabelSetCache.view(buf);
  let prev: LabelSetEntry | null = null;
  while (r.pos < r.end) {
    const tag = r.varint();
    if (tag === 26) {
      const end = r.delimited();
      metadata.push(readMetadata(r, end));
      if (r.pos !== end) throw new WireError('metadata overruns its length');
      continue;
    }
    if (tag !== 10) {
      r.skipField(tag, 0b1010);
      continue;
    }
    const end = r.delimited();
    // Senders put all labels first: find that run and look its bytes up.
    const labelsStart = r.pos;
    const guess = prev === null ? null : prev.next;
    let handle: LabelSetEntry;
    let labelsEnd: number;
    // The usual case: the series that followed the previous one last time. Its cached bytes are
    // a complete run of label fields, so when they are found here and no label field follows,
    // scanning the run would end exactly there: the scan is skipped.
    if (
      guess !== null &&
      guess.len > 0 &&
      (labelsEnd = labelsStart + guess.len) <= end &&
      (labelsEnd === end || buf[labelsEnd] !== 10) &&
      cache.matches(guess, view, labelsStart, labelsEnd)
    ) {
      handle = guess;
    } else {
      while (r.pos < end && buf[r.pos] === 10) {
        r.pos++;
        r.pos = r.delimited();
      }
      labelsEnd = r.pos;
      if (labelsEnd > end) throw new WireError('time series overruns its message');
      if (labelsEnd === labelsStart) return false; // labels after samples, or none: general path
      const hash = LabelSetCache.hash(view, labelsStart, labelsEnd);
      handle = cache.get(hash, view, labelsStart, labelsEnd) ?? decodeLabelRun(r, buf, labelsStart, labelsEnd, hash, cache, extraLabels);
      if (prev !== null) prev.next = handle;
    }
    prev = handle;
    const from = cols.n;
    let p = labelsEnd;
    while (p < end) {
      if (cols.n === cols.t.length) cols.grow();
      // Fast layout (every known sender): tag 0x12, 1-byte length, value, then a timestamp
      // varint of at most 8 bytes (non-negative, below 2^56).
      if (buf[p] === 18) {
        const len = buf[p + 1]!;
        const e = p + 2 + len;
        if (len < 0x80 && e <= end && len >= 11 && buf[p + 2] === 9 && buf[p + 11] === 16) {
          let q = p + 12;
          let t = 0;
          let mul = 1;
          let ok = false;
          while (q < e && mul <= 2 ** 49) {
            const b = buf[q++]!;
            t += (b & 0x7f) * mul;
            if (b < 0x80) {
              ok = q === e;
              break;
            }
            mul *= 128;
          }
          if (ok) {
            const n = cols.n;
            cols.vw[2 * n] = view.getInt32(p + 3, true);
            cols.vw[2 * n + 1] = view.getInt32(p + 7, true);
            cols.t[n] = t;
            cols.n = n + 1;
            p = e;
            continue;
          }
        }
      }
      r.pos = p;
      const t2 = r.varint();
      if (t2 === 18) {
        const e = r.delimited();
        readSampleInto(r, e, view, cols);
        if (r.pos !== e) throw new WireError('nested message overruns its length');
      } else if (t2 === 26) {
        r.skip(2); // exemplar
      } else if (t2 === 34 || t2 === 10) {
        return false; // a native histogram, or a label after samples: general path
      } else r.skipField(t2, 0b11110);
      p = r.pos;
    }
    if (p !== end) throw new WireError('time series overruns its message');
    r.pos = end;
    cols.endSeries(handle, from);
  }
  return true;
}

/**
 * Counts the top-level TimeSeries fields (tag 1, one byte, then a length) so the handle array
 * is allocated once at its size. Stops quietly at anything unexpected: the real decode reports it.
 */
function countTopLevelSeries(buf: Uint8Array): number {
  let n = 0;
  let p = 0;
  const end = buf.length;
  while (p < end) {
    const tag = buf[p++]!;
    if (tag !== 10 && tag !== 26) break;
    let len = 0;
    let mul = 1;
    for (;;) {
      if (p >= end || mul > 2 ** 28) return n;
      const b = buf[p++]!;
      len += (b & 0x7f) * mul;
      if (b < 0x80) break;
      mul *= 128;
    }
    p += len;
    if (tag === 10) n++;
  }
  return n;
}

/** A Sample message in any field order or encoding (the general path of the fast loop above). */
function readSampleInto(r: Reader, end: number, view: DataView, cols: ColumnsBuilder): void {
  let t = 0;
  let lo = 0;
  let hi = 0;
  while (r.pos < end) {
    const tag = r.varint();
    if (tag === 9) {
      if (r.pos + 8 > end) throw new WireError('truncated double');
      lo = view.getInt32(r.pos, true);
      hi = view.getInt32(r.pos + 4, true);
      r.pos += 8;
    } else if (tag === 16) t = r.int64();
    else r.skipField(tag, 0b110);
  }
  const n = cols.n;
  cols.vw[2 * n] = lo;
  cols.vw[2 * n + 1] = hi;
  cols.t[n] = t;
  cols.n = n + 1;
}
