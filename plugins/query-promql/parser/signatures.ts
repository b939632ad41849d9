/** Function signatures for type checking at parse time (as Prometheus' parser.Functions). */
import type { ValueType } from './ast.js';

export interface FunctionSignature {
  args: ValueType[];
  /** Number of trailing optional args (-1 = the last arg repeats without bound). */
  variadic: number;
  ret: ValueType;
}

const v: ValueType = 'vector';
const m: ValueType = 'matrix';
const s: ValueType = 'scalar';
const str: ValueType = 'string';

const sig = (args: ValueType[], ret: ValueType, variadic = 0): FunctionSignature => ({ args, ret, variadic });

export const FUNCTIONS: Record<string, FunctionSignature> = {
  abs: sig([v], v),
  absent: sig([v], v),
  absent_over_time: sig([m], v),
  acos: sig([v], v),
  acosh: sig([v], v),
  asin: sig([v], v),
  asinh: sig([v], v),
  atan: sig([v], v),
  atanh: sig([v], v),
  avg_over_time: sig([m], v),
  ceil: sig([v], v),
  changes: sig([m], v),
  clamp: sig([v, s, s], v),
  clamp_max: sig([v, s], v),
  clamp_min: sig([v, s], v),
  cos: sig([v], v),
  cosh: sig([v], v),
  count_over_time: sig([m], v),
  days_in_month: sig([v], v, 1),
  day_of_month: sig([v], v, 1),
  day_of_week: sig([v], v, 1),
  day_of_year: sig([v], v, 1),
  deg: sig([v], v),
  delta: sig([m], v),
  deriv: sig([m], v),
  double_exponential_smoothing: sig([m, s, s], v),
  exp: sig([v], v),
  first_over_time: sig([m], v),
  floor: sig([v], v),
  histogram_avg: sig([v], v),
  histogram_count: sig([v], v),
  histogram_fraction: sig([s, s, v], v),
  histogram_quantile: sig([s, v], v),
  histogram_quantiles: sig([v, str, s, s], v, -1),
  histogram_sum: sig([v], v),
  histogram_stddev: sig([v], v),
  histogram_stdvar: sig([v], v),
  hour: sig([v], v, 1),
  idelta: sig([m], v),
  increase: sig([m], v),
  info: sig([v, v], v, 1),
  irate: sig([m], v),
  label_replace: sig([v, str, str, str, str], v),
  label_join: sig([v, str, str, str], v, -1),
  last_over_time: sig([m], v),
  ln: sig([v], v),
  log10: sig([v], v),
  log2: sig([v], v),
  mad_over_time: sig([m], v),
  max_over_time: sig([m], v),
  max_of: sig([s, s], s),
  min_of: sig([s, s], s),
  min_over_time: sig([m], v),
  minute: sig([v], v, 1),
  month: sig([v], v, 1),
  pi: sig([], s),
  predict_linear: sig([m, s], v),
  present_over_time: sig([m], v),
  quantile_over_time: sig([s, m], v),
  rad: sig([v], v),
  rate: sig([m], v),
  resets: sig([m], v),
  round: sig([v, s], v, 1),
  scalar: sig([v], s),
  sgn: sig([v], v),
  sin: sig([v], v),
  sinh: sig([v], v),
  sort: sig([v], v),
  sort_desc: sig([v], v),
  sort_by_label: sig([v, str], v, -1),
  sort_by_label_desc: sig([v, str], v, -1),
  sqrt: sig([v], v),
  start_timestamp: sig([v], v),
  stddev_over_time: sig([m], v),
  stdvar_over_time: sig([m], v),
  sum_over_time: sig([m], v),
  tan: sig([v], v),
  tanh: sig([v], v),
  time: sig([], s),
  timestamp: sig([v], v),
  ts_of_first_over_time: sig([m], v),
  ts_of_last_over_time: sig([m], v),
  ts_of_max_over_time: sig([m], v),
  ts_of_min_over_time: sig([m], v),
  vector: sig([s], v),
  year: sig([v], v, 1),
};

export const AGGREGATORS = new Set([
  'sum',
  'avg',
  'min',
  'max',
  'count',
  'group',
  'stddev',
  'stdvar',
  'topk',
  'bottomk',
  'quantile',
  'count_values',
  'limitk',
  'limit_ratio',
]);

/** Aggregations taking a parameter before the vector. */
export const PARAM_AGGREGATORS = new Set(['topk', 'bottomk', 'quantile', 'count_values', 'limitk', 'limit_ratio']);
