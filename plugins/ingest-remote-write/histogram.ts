/**
 * Remote-write native histograms (prompb.Histogram, identical in RW 1.0 and 2.0) to the
 * normalized FloatHistogram: integer histograms carry bucket counts as deltas to the previous
 * bucket; they are summed into absolute counts here so every backend stores one shape.
 */
import type { BucketSpan, FloatHistogram } from '../../kernel/models.js';
import { Reader, WireError, readPackedDoubles, readPackedSint } from './wire.js';

/** Expected wire type per Histogram field; -1: repeated (packed or not, checked by the reader). */
const FIELD_WIRE = [-1, 0, 1, 1, 0, 1, 0, 1, 2, -1, -1, 2, -1, -1, 0, 0, -1];

const RESET_HINTS: FloatHistogram['counterResetHint'][] = ['unknown', 'reset', 'not_reset', 'gauge'];

export interface DecodedHistogram {
  t: number;
  h: FloatHistogram;
}

function readSpan(r: Reader, end: number): BucketSpan {
  let offset = 0;
  let length = 0;
  while (r.pos < end) {
    const tag = r.varint();
    const f = tag >>> 3;
    if (f === 1 && (tag & 7) === 0) offset = r.sint();
    else if (f === 2 && (tag & 7) === 0) length = r.varint();
    else r.skipField(tag, 0b110);
  }
  return { offset, length };
}

function deltasToCounts(deltas: number[]): number[] {
  const out = new Array<number>(deltas.length);
  let acc = 0;
  for (let i = 0; i < deltas.length; i++) {
    acc += deltas[i]!;
    out[i] = acc;
  }
  return out;
}

function spanBucketCount(spans: BucketSpan[]): number {
  let n = 0;
  for (const s of spans) n += s.length;
  return n;
}

/** Reads one Histogram message ending at `end`. */
export function readHistogram(r: Reader, end: number): DecodedHistogram {
  let countInt: number | undefined;
  let countFloat: number | undefined;
  let sum = 0;
  let schema = 0;
  let zeroThreshold = 0;
  let zeroInt: number | undefined;
  let zeroFloat: number | undefined;
  const negativeSpans: BucketSpan[] = [];
  const positiveSpans: BucketSpan[] = [];
  const negDeltas: number[] = [];
  const posDeltas: number[] = [];
  const negCounts: number[] = [];
  const posCounts: number[] = [];
  const customValues: number[] = [];
  let hint = 0;
  let t = 0;
  while (r.pos < end) {
    const tag = r.varint();
    const wt = tag & 7;
    const f = tag >>> 3;
    const want = FIELD_WIRE[f];
    if (want !== undefined && want >= 0 && want !== wt) throw new WireError(`histogram field ${f} has the wrong wire type ${wt}`);
    switch (f) {
      case 1: countInt = r.varint(); break;
      case 2: countFloat = r.double(); break;
      case 3: sum = r.double(); break;
      case 4: schema = r.sint(); break;
      case 5: zeroThreshold = r.double(); break;
      case 6: zeroInt = r.varint(); break;
      case 7: zeroFloat = r.double(); break;
      case 8: { const e = r.delimited(); negativeSpans.push(readSpan(r, e)); if (r.pos !== e) throw new WireError('nested message overruns its length'); break; }
      case 9: readPackedSint(r, wt, negDeltas); break;
      case 10: readPackedDoubles(r, wt, negCounts); break;
      case 11: { const e = r.delimited(); positiveSpans.push(readSpan(r, e)); if (r.pos !== e) throw new WireError('nested message overruns its length'); break; }
      case 12: readPackedSint(r, wt, posDeltas); break;
      case 13: readPackedDoubles(r, wt, posCounts); break;
      case 14: hint = r.varint(); break;
      case 15: t = r.int64(); break;
      case 16: readPackedDoubles(r, wt, customValues); break;
      default: r.skipField(tag);
    }
  }
  if (r.pos !== end) throw new WireError('histogram overruns its message');
  const isFloat = countFloat !== undefined || zeroFloat !== undefined || posCounts.length > 0 || negCounts.length > 0;
  const positiveBuckets = isFloat ? posCounts : deltasToCounts(posDeltas);
  const negativeBuckets = isFloat ? negCounts : deltasToCounts(negDeltas);
  if (spanBucketCount(positiveSpans) !== positiveBuckets.length || spanBucketCount(negativeSpans) !== negativeBuckets.length) {
    throw new WireError('native histogram spans do not match the number of buckets');
  }
  if (schema < -4 && schema !== -53) throw new WireError(`native histogram schema ${schema} is not supported`);
  if (schema > 8) throw new WireError(`native histogram schema ${schema} is not supported`);
  const h: FloatHistogram = {
    counterResetHint: RESET_HINTS[hint] ?? 'unknown',
    schema,
    zeroThreshold,
    zeroCount: zeroFloat ?? zeroInt ?? 0,
    count: countFloat ?? countInt ?? 0,
    sum,
    positiveSpans,
    positiveBuckets,
    negativeSpans,
    negativeBuckets,
  };
  if (customValues.length) h.customValues = customValues;
  return { t, h };
}
