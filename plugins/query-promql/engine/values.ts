/**
 * Evaluator values. Every node is evaluated for all steps of the query at once: an instant
 * vector is a list of series, each with one slot per step (typed arrays, labels shared across
 * steps), so range queries select each series once and never allocate label sets per step.
 */
import type { FloatHistogram, Labels } from '../../../kernel/models.js';

/** Slot states in {@link StepSeries.has}. */
export const ABSENT = 0;
export const FLOAT = 1;
export const HIST = 2;

export interface StepSeries {
  labels: Labels;
  vals: Float64Array;
  /** ABSENT / FLOAT / HIST per step. */
  has: Uint8Array;
  /** Histogram per step where has[i] === HIST (allocated lazily). */
  hists: (FloatHistogram | undefined)[] | null;
  /** Delayed `__name__` removal: the name goes at the end of the query. */
  dropName: boolean;
}

export interface VectorValue {
  kind: 'vector';
  series: StepSeries[];
}

export interface ScalarValue {
  kind: 'scalar';
  vals: Float64Array;
}

export interface StringValue {
  kind: 'string';
  value: string;
}

/** Raw points of one series (a matrix selector's samples or a subquery's steps). */
export interface RangeSeries {
  labels: Labels;
  ts: Float64Array;
  vals: Float64Array;
  hists: (FloatHistogram | undefined)[] | null;
  dropName: boolean;
  /** Start timestamps (ms, NaN = none) of raw selector samples; subqueries carry none. */
  sts?: Float64Array;
}

/** A range vector: raw points plus, per step, the window (times[i] - range, times[i]]. */
export interface MatrixValue {
  kind: 'matrix';
  series: RangeSeries[];
  /** Window end per step (evaluation time after `@` and offset). */
  times: Float64Array;
  range: number;
}

export type Value = VectorValue | ScalarValue | StringValue | MatrixValue;

export function newSeries(labels: Labels, n: number, dropName = false): StepSeries {
  return { labels, vals: new Float64Array(n), has: new Uint8Array(n), hists: null, dropName };
}

export function setHist(s: StepSeries, i: number, h: FloatHistogram): void {
  if (!s.hists) s.hists = new Array(s.vals.length);
  s.hists[i] = h;
  s.has[i] = HIST;
}

export function anyPresent(s: StepSeries): boolean {
  const h = s.has;
  for (let i = 0; i < h.length; i++) if (h[i] !== ABSENT) return true;
  return false;
}
