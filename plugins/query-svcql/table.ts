/** The tabular result of a full SvcQL query (getLogMetricsResultWithSvcQl). */
export type Cell = string | number | boolean | null;

export interface SvcQLTable {
  /** All columns in cell order. */
  columns: string[];
  /** The last aggregation's `by` columns (`[]` without aggregation). */
  groupKeys: string[];
  /** The last aggregation's aggregate columns (`[]` without aggregation). */
  aggrValues: string[];
  rows: Cell[][];
}
