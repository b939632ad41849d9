/**
 * Lookout's own metrics, exposed at /metrics in the Prometheus text format (version 0.0.4).
 */
type LabelValues = Record<string, string>;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}
function fmtLabels(l: LabelValues, extra?: [string, string]): string {
  const parts = Object.entries(l).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}
function fmtNum(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}
const keyOf = (l: LabelValues) => JSON.stringify(Object.entries(l).sort(([a], [b]) => (a < b ? -1 : 1)));

interface Metric {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  expose(): string;
}

export class Counter implements Metric {
  readonly type = 'counter' as const;
  private readonly values = new Map<string, { labels: LabelValues; v: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: LabelValues = {}, by = 1): void {
    const k = keyOf(labels);
    const e = this.values.get(k);
    if (e) e.v += by;
    else this.values.set(k, { labels, v: by });
  }
  get(labels: LabelValues = {}): number {
    return this.values.get(keyOf(labels))?.v ?? 0;
  }
  /** Reads monotonic totals kept elsewhere (e.g. inside a storage backend) at scrape time. */
  collect(fn: () => Array<[LabelValues, number]>): void {
    this.collector = fn;
  }
  private collector?: () => Array<[LabelValues, number]>;
  expose(): string {
    let s = '';
    if (this.collector) for (const [l, v] of this.collector()) this.values.set(keyOf(l), { labels: l, v });
    for (const { labels, v } of this.values.values()) s += `${this.name}${fmtLabels(labels)} ${fmtNum(v)}\n`;
    return s;
  }
}

export class Gauge implements Metric {
  readonly type = 'gauge' as const;
  private readonly values = new Map<string, { labels: LabelValues; v: number }>();
  private collector?: () => Array<[LabelValues, number]>;
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  set(labels: LabelValues, v: number): void {
    this.values.set(keyOf(labels), { labels, v });
  }
  /** Computes values at scrape time instead of storing them. */
  collect(fn: () => Array<[LabelValues, number]>): void {
    this.collector = fn;
  }
  expose(): string {
    let s = '';
    if (this.collector) for (const [l, v] of this.collector()) this.values.set(keyOf(l), { labels: l, v });
    for (const { labels, v } of this.values.values()) s += `${this.name}${fmtLabels(labels)} ${fmtNum(v)}\n`;
    return s;
  }
}

export class Histogram implements Metric {
  readonly type = 'histogram' as const;
  private readonly series = new Map<string, { labels: LabelValues; counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  ) {}
  observe(labels: LabelValues, v: number): void {
    const k = keyOf(labels);
    let e = this.series.get(k);
    if (!e) this.series.set(k, (e = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    for (let i = 0; i < this.buckets.length; i++) if (v <= this.buckets[i]!) e.counts[i]!++;
    e.sum += v;
    e.count++;
  }
  expose(): string {
    let s = '';
    for (const { labels, counts, sum, count } of this.series.values()) {
      this.buckets.forEach((b, i) => {
        s += `${this.name}_bucket${fmtLabels(labels, ['le', fmtNum(b)])} ${counts[i]}\n`;
      });
      s += `${this.name}_bucket${fmtLabels(labels, ['le', '+Inf'])} ${count}\n`;
      s += `${this.name}_sum${fmtLabels(labels)} ${fmtNum(sum)}\n`;
      s += `${this.name}_count${fmtLabels(labels)} ${count}\n`;
    }
    return s;
  }
}

export class MetricsRegistry {
  private readonly metrics = new Map<string, Metric>();
  private register<M extends Metric>(m: M): M {
    const existing = this.metrics.get(m.name);
    if (existing) {
      if (existing.type !== m.type) throw new Error(`metric ${m.name} already registered as ${existing.type}`);
      return existing as M;
    }
    this.metrics.set(m.name, m);
    return m;
  }
  counter(name: string, help: string): Counter {
    return this.register(new Counter(name, help));
  }
  gauge(name: string, help: string): Gauge {
    return this.register(new Gauge(name, help));
  }
  histogram(name: string, help: string, buckets?: readonly number[]): Histogram {
    return this.register(new Histogram(name, help, buckets));
  }
  expose(): string {
    let s = '';
    for (const m of this.metrics.values()) {
      s += `# HELP ${m.name} ${m.help}\n# TYPE ${m.name} ${m.type}\n${m.expose()}`;
    }
    return s;
  }
}
