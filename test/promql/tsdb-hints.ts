/**
 * The counter-reset hints Prometheus' TSDB reports for loaded native histograms.
 *
 * Prometheus' promqltest loads series through a TSDB appender, and its chunk iterator does not
 * return the hints that were appended: a gauge chunk reports "gauge"; in a counter chunk the first
 * histogram reports "unknown" and every later one "not_reset". A new chunk starts whenever the
 * appender sees a counter reset (explicit hint, lower count, lower zero bucket, a shrinking or
 * vanished bucket, changed custom bounds), a schema or zero-threshold change, a switch between
 * float / counter / gauge samples, or a 2 h chunk-range boundary. Our stores keep the hint as
 * written, so the runner loads samples with the hints Prometheus' storage would hand its engine.
 * (Prometheus also cuts histogram chunks by byte size; the test data never gets that large.)
 */
import type { FloatHistogram, Sample } from '../../kernel/models.js';
import { expand } from '../../plugins/query-promql/engine/histogram.js';

const CHUNK_RANGE = 2 * 3600_000;

type Kind = 'float' | 'counter' | 'gauge';

function sameLayout(a: FloatHistogram, b: FloatHistogram): boolean {
  if (a.schema !== b.schema || a.zeroThreshold !== b.zeroThreshold) return false;
  return true;
}

function sameBounds(a: FloatHistogram, b: FloatHistogram): boolean {
  const x = a.customValues ?? [];
  const y = b.customValues ?? [];
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** Some bucket of `prev` is missing or smaller in `cur` (same schema). */
function bucketsShrank(prev: FloatHistogram, cur: FloatHistogram): boolean {
  const cmp = (p: Map<number, number>, c: Map<number, number>) => {
    for (const [i, v] of p) if (v !== 0 && (c.get(i) ?? 0) < v) return true;
    return false;
  };
  return (
    cmp(expand(prev.positiveSpans, prev.positiveBuckets), expand(cur.positiveSpans, cur.positiveBuckets)) ||
    cmp(expand(prev.negativeSpans, prev.negativeBuckets), expand(cur.negativeSpans, cur.negativeBuckets))
  );
}

/** Returns the samples with the hints a Prometheus TSDB would report for them (in time order). */
export function withTsdbHints(samples: Sample[]): Sample[] {
  let kind: Kind | null = null;
  let rangeEnd = -Infinity;
  let prev: FloatHistogram | null = null;
  return samples.map((smp) => {
    const h = smp.h;
    if (!h) {
      kind = 'float';
      prev = null;
      return smp;
    }
    const want: Kind = h.counterResetHint === 'gauge' ? 'gauge' : 'counter';
    let newChunk = kind !== want || prev === null || smp.t >= rangeEnd;
    if (!newChunk && prev) {
      if (!sameLayout(prev, h)) newChunk = true;
      else if (h.schema === -53 && !sameBounds(prev, h)) newChunk = true;
      else if (want === 'counter') {
        newChunk =
          h.counterResetHint === 'reset' || h.count < prev.count || h.zeroCount < prev.zeroCount || bucketsShrank(prev, h);
      }
    }
    if (newChunk) {
      kind = want;
      rangeEnd = Math.floor(smp.t / CHUNK_RANGE) * CHUNK_RANGE + CHUNK_RANGE;
    }
    prev = h;
    const hint: FloatHistogram['counterResetHint'] = want === 'gauge' ? 'gauge' : newChunk ? 'unknown' : 'not_reset';
    return hint === h.counterResetHint ? smp : { ...smp, h: { ...h, counterResetHint: hint } };
  });
}
