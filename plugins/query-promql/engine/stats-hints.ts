/**
 * Prometheus reads a selector whose histograms only feed histogram_count/sum/avg through its
 * HistogramStatsIterator, which detects counter resets on the fly: a histogram with hint
 * "unknown" gets "reset" or "not_reset" from a comparison with the histogram read just before
 * it. That changes which counter-reset collisions `sum`/`avg`/`sum_over_time`/`avg_over_time`
 * report, so the evaluator marks such selectors (as Prometheus' detectHistogramStatsDecoding does)
 * and derives the same hints.
 */
import type { FloatHistogram } from '../../../kernel/models.js';
import type { Expr } from '../parser/ast.js';
import { histIsReset } from './histogram.js';

const STATS_FUNCS = new Set(['histogram_count', 'histogram_sum', 'histogram_avg']);
const BUCKET_FUNCS = new Set(['histogram_quantile', 'histogram_quantiles', 'histogram_fraction']);

/**
 * Marks vector selectors below histogram_count/sum/avg unless a subquery, a whole-bucket
 * histogram function or a trim operator sits anywhere above them.
 */
export function markStatsOnlySelectors(e: Expr, stats = false, blocked = false): void {
  switch (e.type) {
    case 'VectorSelector':
      e.statsOnly = stats && !blocked;
      return;
    case 'MatrixSelector':
      markStatsOnlySelectors(e.vector, stats, blocked);
      return;
    case 'SubqueryExpr':
      markStatsOnlySelectors(e.expr, stats, true);
      return;
    case 'Call': {
      const s = stats || STATS_FUNCS.has(e.func);
      const b = blocked || BUCKET_FUNCS.has(e.func);
      for (const a of e.args) markStatsOnlySelectors(a, s, b);
      return;
    }
    case 'AggregateExpr':
      markStatsOnlySelectors(e.expr, stats, blocked);
      if (e.param) markStatsOnlySelectors(e.param, stats, blocked);
      return;
    case 'BinaryExpr': {
      const b = blocked || e.op === '</' || e.op === '>/';
      markStatsOnlySelectors(e.lhs, stats, b);
      markStatsOnlySelectors(e.rhs, stats, b);
      return;
    }
    case 'UnaryExpr':
    case 'ParenExpr':
      markStatsOnlySelectors(e.expr, stats, blocked);
      return;
    default:
      return;
  }
}

/**
 * The hints the stats iterator reports for one series' samples in read order: an "unknown"
 * histogram after another histogram becomes "reset" or "not_reset". Returns the input array when
 * nothing changes; otherwise a copy (stored histograms are never mutated).
 */
export function statsIteratorHints(hs: readonly (FloatHistogram | undefined)[]): (FloatHistogram | undefined)[] {
  let out: (FloatHistogram | undefined)[] | null = null;
  let prev: FloatHistogram | undefined;
  for (let i = 0; i < hs.length; i++) {
    const h = hs[i];
    if (!h) continue;
    if (h.counterResetHint === 'unknown' && prev) {
      const hint = histIsReset(prev, h) ? 'reset' : 'not_reset';
      if (!out) out = hs.slice();
      out[i] = { ...h, counterResetHint: hint };
    }
    prev = h;
  }
  return out ?? (hs as (FloatHistogram | undefined)[]);
}
