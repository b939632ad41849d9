/**
 * OPTIONAL storage extension for label-only aggregations (`* | count by service, level`,
 * `* | timeslice 1m | count by _timeslice`): a backend that can hand back dictionary-coded label
 * columns and millisecond timestamps lets the executor count tens of millions of records per
 * second without materializing a LogRecord per line. Feature-checked: when a LogStore has no
 * `scanColumns`, queries run through `scan` as usual.
 */
import type { LabelColumn, LogColumnBatch, LogColumnScanQuery, LogStore } from '../../kernel/storage.js';

// The types live with the LogStore interface (kernel/storage.ts); re-exported for callers.
export type { LabelColumn, LogColumnBatch, LogColumnScanQuery };

/** A LogStore that implements the optional columnar scan. Order of records is unspecified. */
export interface ColumnarLogStore extends LogStore {
  /** Required here (optional on LogStore). */
  scanColumns(q: LogColumnScanQuery): AsyncIterable<LogColumnBatch>;
}

export function hasColumnarScan(s: LogStore): s is ColumnarLogStore {
  return typeof (s as Partial<ColumnarLogStore>).scanColumns === 'function';
}

/**
 * A reference implementation of `scanColumns` over a plain `scan` (no speed-up): used by tests to
 * check the fast path against the row path, and usable by a backend as a starting point.
 */
export function columnarOverScan(store: LogStore): ColumnarLogStore {
  return Object.assign(Object.create(store) as LogStore, {
    async *scanColumns(q: LogColumnScanQuery): AsyncIterable<LogColumnBatch> {
      for await (const b of store.scan({
        startNs: q.startNs,
        endNs: q.endNs,
        matchers: q.matchers,
        scope: q.scope,
        signal: q.signal,
      })) {
        const n = b.records.length;
        const labels: LabelColumn[] = q.labels.map((name) => {
          const dict: string[] = [];
          const index = new Map<string, number>();
          const codes = new Int32Array(n);
          b.records.forEach((r, i) => {
            const v = r.labels[name];
            if (v === undefined) codes[i] = -1;
            else {
              let c = index.get(v);
              if (c === undefined) index.set(v, (c = dict.push(v) - 1));
              codes[i] = c;
            }
          });
          return { dict, codes };
        });
        const batch: LogColumnBatch = q.timestampsMs
          ? { length: n, labels, timestampsMs: Float64Array.from(b.records, (r) => Number(r.timestampNs / 1_000_000n)) }
          : { length: n, labels };
        yield batch;
      }
    },
  }) as ColumnarLogStore;
}
