/**
 * Deterministic data for the differential test against real Prometheus: counters with resets,
 * gauges, classic histograms, a series with a gap longer than the lookback, a series with a
 * staleness marker, and an info-style series for joins. Every sample timestamp has a non-zero
 * millisecond part while queries use whole seconds, so no sample ever sits on a window
 * boundary (Prometheus 2.x closes range windows on the left, 3.x leaves them open).
 */
import { STALE_NAN } from '../../kernel/models.js';
import type { RWSeries } from '../helpers/remote-write.js';

export const SCRAPE_MS = 15_000;
export const SPAN_MS = 2 * 3_600_000;

/** Small deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Sample times of one series: every 15 s from `base`, shifted by `offMs` (100..900). */
function times(base: number, offMs: number, fromMs = 0, toMs = SPAN_MS): number[] {
  const out: number[] = [];
  for (let t = fromMs; t < toMs; t += SCRAPE_MS) out.push(base + t + offMs);
  return out;
}

export function generate(base: number): RWSeries[] {
  const rnd = prng(42);
  const out: RWSeries[] = [];
  const off = () => 100 + Math.floor(rnd() * 800);

  // Counters; instance i1 and i3 reset.
  for (let i = 0; i < 4; i++) {
    let v = rnd() * 100;
    const o = off();
    const samples = times(base, o).map((t, k) => {
      if ((i === 1 && k === 200) || (i === 3 && (k === 150 || k === 400))) v = rnd() * 5;
      else v += rnd() * 10 * (i + 1);
      return { t, v };
    });
    out.push({ labels: { __name__: 'test_counter_total', job: i < 2 ? 'a' : 'b', instance: `i${i}` }, samples });
  }

  // Gauges around different levels, some negative.
  for (let i = 0; i < 4; i++) {
    const o = off();
    const phase = rnd() * 6;
    const samples = times(base, o).map((t, k) => ({
      t,
      v: (i - 1.5) * 20 + 30 * Math.sin(phase + k / 37) + rnd() * 3,
    }));
    out.push({ labels: { __name__: 'test_gauge', instance: `i${i}`, zone: i % 2 ? 'z1' : 'z2' }, samples });
  }

  // Classic histograms: cumulative buckets that grow monotonically.
  const les = ['0.05', '0.1', '0.25', '0.5', '1', '2.5', '+Inf'];
  for (let h = 0; h < 2; h++) {
    const o = off();
    const ts = times(base, o);
    const counts = les.map(() => 0);
    const series = les.map(() => [] as { t: number; v: number }[]);
    const sum: { t: number; v: number }[] = [];
    const count: { t: number; v: number }[] = [];
    let s = 0;
    // Observations before the first sample: the buckets' zero points lie far before the data,
    // away from the rate-extrapolation rule Prometheus changed in 2.51 (PR #13725).
    const observe = (n: number) => {
      for (let j = 0; j < n; j++) {
        const x = Math.pow(rnd(), 2 + h) * 3;
        s += x;
        for (let b = 0; b < les.length; b++) if (les[b] === '+Inf' || x <= Number(les[b])) counts[b]!++;
      }
    };
    observe(500);
    for (const t of ts) {
      observe(1 + Math.floor(rnd() * 20));
      les.forEach((_, b) => series[b]!.push({ t, v: counts[b]! }));
      sum.push({ t, v: s });
      count.push({ t, v: counts[les.length - 1]! });
    }
    les.forEach((le, b) =>
      out.push({ labels: { __name__: 'test_hist_bucket', instance: `h${h}`, le }, samples: series[b]! }),
    );
    out.push({ labels: { __name__: 'test_hist_sum', instance: `h${h}` }, samples: sum });
    out.push({ labels: { __name__: 'test_hist_count', instance: `h${h}` }, samples: count });
  }

  // A gap of 20 minutes (longer than the 5 m lookback) from 40 m to 60 m.
  {
    const o = off();
    const samples = [...times(base, o, 0, 40 * 60_000), ...times(base, o, 60 * 60_000)].map((t) => ({
      t,
      v: Math.round(rnd() * 1000) / 10,
    }));
    out.push({ labels: { __name__: 'test_gap', instance: 'g0' }, samples });
  }

  // A staleness marker at 50 m, samples again from 70 m.
  {
    const o = off();
    const before = times(base, o, 0, 50 * 60_000).map((t) => ({ t, v: rnd() * 50 }));
    const after = times(base, o, 70 * 60_000).map((t) => ({ t, v: rnd() * 50 }));
    out.push({
      labels: { __name__: 'test_stale', instance: 's0' },
      samples: [...before, { t: base + 50 * 60_000 + o, v: STALE_NAN }, ...after],
    });
  }

  // Info-style series for group_left joins.
  for (let i = 0; i < 4; i++) {
    const o = off();
    out.push({
      labels: { __name__: 'test_info', instance: `i${i}`, version: `v${i % 2}.${i}`, owner: `team-${i % 2}` },
      samples: times(base, o).map((t) => ({ t, v: 1 })),
    });
  }
  return out;
}
