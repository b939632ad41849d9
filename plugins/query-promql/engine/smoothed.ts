/**
 * `metric smoothed`: an instant vector selector whose value at T is interpolated linearly between
 * the last sample at or before T (within the lookback) and the next one after T (within the
 * lookback). Without a later sample the last value is carried forward. Floats interpolate as
 * gauges; histograms as counters unless they carry the gauge hint (a reset restarts from zero).
 */
import type { FloatHistogram } from '../../../kernel/models.js';
import { isStaleMarker } from '../../../kernel/models.js';
import type { VectorSelector } from '../parser/ast.js';
import type { Evaluator, Steps } from './engine.js';
import { interpolateHist } from './extended.js';
import { CUSTOM_SCHEMA } from './histogram.js';
import { METRIC_NAME } from './labels.js';
import { FLOAT, newSeries, setHist, type StepSeries, type VectorValue } from './values.js';

export async function evalSmoothedSelector(ev: Evaluator, vs: VectorSelector, steps: Steps): Promise<VectorValue> {
  const offset = ev.durationMs(vs.offset, vs.offsetExpr);
  const times = ev.selectorTimes(vs.at, offset, steps);
  const n = times.length;
  const lookback = ev.engine.lookback;
  let mint = Infinity;
  let maxt = -Infinity;
  for (let i = 0; i < n; i++) {
    mint = Math.min(mint, times[i]!);
    maxt = Math.max(maxt, times[i]!);
  }
  const out: StepSeries[] = [];
  await ev.eachSelected(vs.matchers, mint - lookback + 1, maxt + lookback, (ss) => {
    ev.check();
    const ts = ss.timestamps;
    const vals = ss.values;
    const hs = ss.histograms;
    const name = ss.labels[METRIC_NAME] ?? '';
    const s = newSeries(ss.labels, n);
    let cnt = 0;
    let j = 0;
    for (let i = 0; i < n; i++) {
      const T = times[i]!;
      if (i > 0 && T < times[i - 1]!) j = 0;
      while (j < ts.length && ts[j]! <= T) j++;
      const k = j - 1;
      if (k < 0 || ts[k]! <= T - lookback) continue;
      const h1 = hs?.[k];
      const v1 = vals[k]!;
      if (!h1 && isStaleMarker(v1)) continue;
      const nx = ts[k]! === T || j >= ts.length || ts[j]! > T + lookback ? -1 : j;
      const h2 = nx >= 0 ? hs?.[nx] : undefined;
      if (nx >= 0 && !h2 && isStaleMarker(vals[nx]!)) {
        // The series ends here: carry the last value forward.
      } else if (nx >= 0) {
        if (!!h1 !== !!h2) {
          ev.warn(`encountered a mix of histograms and floats for metric name ${JSON.stringify(name)}`, vs.pos);
          continue;
        }
        const t1 = ts[k]!;
        const t2 = ts[nx]!;
        if (h1 && h2) {
          if ((h1.schema === CUSTOM_SCHEMA) !== (h2.schema === CUSTOM_SCHEMA)) {
            ev.warn(`vector contains a mix of histograms with exponential and custom buckets schemas for metric name ${JSON.stringify(name)}`, vs.pos);
            continue;
          }
          const h = interpolateHist(h1, t1, h2, t2, T, h2.counterResetHint !== 'gauge', () =>
            ev.info('mismatched custom buckets were reconciled during subtraction', vs.pos),
          );
          if (!h) continue;
          setHist(s, i, h);
        } else {
          s.vals[i] = v1 + ((vals[nx]! - v1) * (T - t1)) / (t2 - t1);
          s.has[i] = FLOAT;
        }
        cnt++;
        continue;
      }
      if (h1) setHist(s, i, h1 as FloatHistogram);
      else {
        s.vals[i] = v1;
        s.has[i] = FLOAT;
      }
      cnt++;
    }
    if (cnt > 0) {
      ev.addSamples(cnt);
      out.push(s);
    }
  });
  return { kind: 'vector', series: out };
}
