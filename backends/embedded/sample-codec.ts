/**
 * Binary encoding of samples that do not go into float chunks (native histograms, samples with
 * start timestamps, out-of-order samples) and of label sets. Floats are written as raw IEEE-754
 * so NaN payloads (staleness markers) survive.
 */
import type { BucketSpan, FloatHistogram, Labels, Sample } from '../../kernel/models.js';
import type { ByteReader, ByteWriter } from './bytes.js';

const HINTS = ['unknown', 'reset', 'not_reset', 'gauge'] as const;

export function writeLabels(w: ByteWriter, labels: Labels): void {
  const names = Object.keys(labels);
  w.uvar(names.length);
  for (const n of names) {
    w.str(n);
    w.str(labels[n]!);
  }
}

export function readLabels(r: ByteReader): Labels {
  const n = r.uvar();
  const out: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    const k = r.str();
    out[k] = r.str();
  }
  return Object.freeze(out);
}

function writeSpans(w: ByteWriter, spans: readonly BucketSpan[]): void {
  w.uvar(spans.length);
  for (const s of spans) {
    w.svar(s.offset);
    w.uvar(s.length);
  }
}

function readSpans(r: ByteReader): BucketSpan[] {
  const n = r.uvar();
  const out: BucketSpan[] = [];
  for (let i = 0; i < n; i++) out.push({ offset: r.svar(), length: r.uvar() });
  return out;
}

function writeFloats(w: ByteWriter, xs: readonly number[]): void {
  w.uvar(xs.length);
  for (const x of xs) w.f64(x);
}

function readFloats(r: ByteReader): number[] {
  const n = r.uvar();
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(r.f64());
  return out;
}

export function writeHistogram(w: ByteWriter, h: FloatHistogram): void {
  w.u8(Math.max(0, HINTS.indexOf(h.counterResetHint)));
  w.svar(h.schema);
  w.f64(h.zeroThreshold);
  w.f64(h.zeroCount);
  w.f64(h.count);
  w.f64(h.sum);
  writeSpans(w, h.positiveSpans);
  writeFloats(w, h.positiveBuckets);
  writeSpans(w, h.negativeSpans);
  writeFloats(w, h.negativeBuckets);
  if (h.customValues) {
    w.u8(1);
    writeFloats(w, h.customValues);
  } else w.u8(0);
}

export function readHistogram(r: ByteReader): FloatHistogram {
  const h: FloatHistogram = {
    counterResetHint: HINTS[r.u8()] ?? 'unknown',
    schema: r.svar(),
    zeroThreshold: r.f64(),
    zeroCount: r.f64(),
    count: r.f64(),
    sum: r.f64(),
    positiveSpans: readSpans(r),
    positiveBuckets: readFloats(r),
    negativeSpans: readSpans(r),
    negativeBuckets: readFloats(r),
  };
  if (r.u8() === 1) h.customValues = readFloats(r);
  return h;
}

/** flags: 1 = histogram, 2 = start timestamp. */
export function writeSample(w: ByteWriter, s: Sample): void {
  const flags = (s.h ? 1 : 0) | (s.st !== undefined ? 2 : 0);
  w.u8(flags);
  w.f64(s.t);
  w.f64(s.v);
  if (flags & 2) w.f64(s.st!);
  if (flags & 1) writeHistogram(w, s.h!);
}

export function readSample(r: ByteReader): Sample {
  const flags = r.u8();
  const s: Sample = { t: r.f64(), v: r.f64() };
  if (flags & 2) s.st = r.f64();
  if (flags & 1) s.h = readHistogram(r);
  return s;
}
