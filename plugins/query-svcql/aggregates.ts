/**
 * Aggregate accumulators. A group holds one accumulator per aggregate: O(1) state except
 * count_distinct (distinct keys) and pct (the group's numeric values, needed for an exact
 * nearest rank).
 */
import type { AggSpec } from './ast.js';
import type { Row } from './row.js';
import { toNumber, valueKey, type Value } from './values.js';

export interface Accumulator {
  add(r: Row): void;
  /** Bare `count` only: adds n rows at once. */
  addN?(n: number): void;
  result(): Value;
}

export type AccumulatorFactory = () => Accumulator;

export function accumulatorFactory(a: AggSpec): AccumulatorFactory {
  const ref = a.arg;
  switch (a.fn) {
    case 'count':
      if (ref === null)
        return () => {
          let n = 0;
          return { add: () => void n++, addN: (k: number) => void (n += k), result: () => n };
        };
      return () => {
        let n = 0;
        return {
          add: (r) => {
            if (r.get(ref) !== null) n++;
          },
          result: () => n,
        };
      };
    case 'count_distinct':
      return () => {
        const seen = new Set<string>();
        return {
          add: (r) => {
            const v = r.get(ref!);
            if (v !== null) seen.add(valueKey(v));
          },
          result: () => seen.size,
        };
      };
    case 'sum':
    case 'avg':
      return () => {
        let sum = 0;
        let n = 0;
        const avg = a.fn === 'avg';
        return {
          add: (r) => {
            const x = toNumber(r.get(ref!));
            if (x === undefined) return;
            sum += x;
            n++;
          },
          result: () => (n === 0 ? null : avg ? sum / n : sum),
        };
      };
    case 'min':
    case 'max':
      return () => {
        let best: number | null = null;
        const max = a.fn === 'max';
        return {
          add: (r) => {
            const x = toNumber(r.get(ref!));
            if (x === undefined) return;
            if (best === null || (max ? x > best : x < best)) best = x;
          },
          result: () => best,
        };
      };
    case 'pct': {
      const { num, den } = a.pct!;
      return () => {
        const vals: number[] = [];
        return {
          add: (r) => {
            const x = toNumber(r.get(ref!));
            if (x !== undefined) vals.push(x);
          },
          result: () => {
            if (vals.length === 0) return null;
            vals.sort((x, y) => x - y);
            return vals[nearestRank(num, den, vals.length) - 1]!;
          },
        };
      };
    }
    case 'first':
    case 'last':
      return () => {
        let best: Value = null;
        let ts = 0n;
        let seq = 0;
        let have = false;
        const last = a.fn === 'last';
        return {
          add: (r) => {
            const v = r.get(ref!);
            if (v === null) return;
            // earliest: smallest (timestamp, ingestion order); latest: largest.
            const better = !have
              ? true
              : last
                ? r.ts > ts || (r.ts === ts && r.seq > seq)
                : r.ts < ts || (r.ts === ts && r.seq < seq);
            if (better) {
              best = v;
              ts = r.ts;
              seq = r.seq;
              have = true;
            }
          },
          result: () => best,
        };
      };
  }
}

/** ⌈p·n/100⌉ for p = num/den, exactly. */
export function nearestRank(num: bigint, den: bigint, n: number): number {
  const top = num * BigInt(n);
  const bottom = 100n * den;
  const rank = Number((top + bottom - 1n) / bottom);
  return Math.min(Math.max(rank, 1), n);
}
