/**
 * The segment-merge section of `npm run bench -- storage` (`--only merge`): 200 small log
 * segments (one per head flush, as a quiet server writes them) and 200 small span segments,
 * queried before and after the background merge; the merge time and the worst event-loop delay
 * during it (what an append or query waiting behind it would see).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { openEmbeddedBackend, type EmbeddedBackend } from '../../../backends/embedded/index.js';
import { mergePolicy } from '../../../backends/embedded/segment-merge.js';
import { createLogger } from '../../../kernel/logger.js';
import type { LogRecord, Span } from '../../../kernel/models.js';

export interface MergeFigures {
  segments: number;
  logRecords: number;
  /** Per signal: merge time and the event-loop delay (max, p99) during it. */
  logs: { mergeMs: number; loopDelayMaxMs: number; loopDelayP99Ms: number };
  traces: { mergeMs: number; loopDelayMaxMs: number; loopDelayP99Ms: number };
  segmentsAfter: number;
  /** Median ms per query, before → after: term search in one stream, count by label, first page, trace by id, trace search. */
  before: Record<string, number>;
  after: Record<string, number>;
}

const T0 = Date.UTC(2024, 0, 1);
const ns = (ms: number) => BigInt(ms) * 1_000_000n;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timed(runs: number, f: () => Promise<unknown>): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await f();
    xs.push(performance.now() - t);
  }
  return median(xs);
}

function logs(f: number, n: number): LogRecord[] {
  return Array.from({ length: n }, (_, i) => {
    const k = f * n + i;
    return {
      timestampNs: ns(T0 + k * 170),
      message: `GET /api/v1/items/${k % 500} status=${k % 13 ? 200 : 500} took ${k % 97}ms user=u${k % 1000}`,
      labels: { service: `svc-${k % 8}`, level: k % 13 ? 'info' : 'error' },
      facets: k % 4 ? {} : ({ status: k % 13 ? 200 : 500 } as Record<string, number>),
    };
  });
}

function spans(f: number, n: number): Span[] {
  return Array.from({ length: n }, (_, i) => {
    const k = f * n + i;
    const st = ns(T0 + k * 400);
    return {
      traceId: (Math.floor(k / 4) + 1).toString(16).padStart(32, '0'),
      spanId: (k + 1).toString(16).padStart(16, '0'),
      parentSpanId: '',
      name: `op-${k % 7}`,
      kind: 'server',
      startTimeUnixNano: st,
      endTimeUnixNano: st + BigInt(1 + (k % 50)) * 1_000_000n,
      status: { code: k % 17 ? 'ok' : 'error' },
      attributes: { 'http.status_code': k % 17 ? 200 : 500 },
      resource: { 'service.name': `svc-${k % 8}` },
      scope: { name: 'bench' },
      events: [],
      links: [],
    };
  });
}

async function queries(b: EmbeddedBackend, runs: number): Promise<Record<string, number>> {
  const end = ns(T0 + 2 * 86_400_000);
  const drain = async (it: AsyncIterable<unknown>) => {
    for await (const _ of it) void _;
  };
  return {
    logTermsMs: await timed(runs, () => drain(b.logs.scan({ startNs: 0n, endNs: end, terms: ['status=500'], matchers: [{ name: 'service', op: '=', value: 'svc-3' }] }))),
    logCountByMs: await timed(runs, () => drain(b.logs.scanColumns!({ startNs: 0n, endNs: end, labels: ['service'], weighted: true }))),
    logFirstPageMs: await timed(runs, async () => {
      for await (const _ of b.logs.scan({ startNs: 0n, endNs: end, limit: 100 })) break;
    }),
    traceByIdMs: await timed(runs, async () => {
      for (let k = 1; k <= 20; k++) await b.traces.getTrace((k * 997).toString(16).padStart(32, '0'));
    }),
    traceSearchMs: await timed(runs, () => drain(b.traces.search({ startNs: 0n, endNs: end, statuses: ['error'], attributes: { 'service.name': 'svc-5' } }))),
  };
}

export async function benchSegmentMerge(opts: { small: boolean; runs: number }): Promise<MergeFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-bench-merge-'));
  const segments = 200;
  const perFlush = opts.small ? 200 : 2000;
  const b = openEmbeddedBackend({ dir, logger: createLogger('error'), fsync: 'interval', fsyncIntervalMs: 100, maintenanceIntervalMs: 0 });
  try {
    for (let f = 0; f < segments; f++) {
      await b.logs.append(logs(f, perFlush));
      await b.traces.append(spans(f, perFlush / 4));
      await b.logs.serial(() => b.logs.flushHead());
      await b.traces.wal.serial(() => b.traces.flushHead());
    }
    const before = await queries(b, opts.runs);
    const p = mergePolicy(0, { maxInputs: segments });
    const measure = async (f: () => Promise<number>) => {
      const h = monitorEventLoopDelay({ resolution: 5 });
      h.enable();
      const t = performance.now();
      await f();
      const mergeMs = performance.now() - t;
      h.disable();
      return { mergeMs, loopDelayMaxMs: h.max / 1e6, loopDelayP99Ms: h.percentile(99) / 1e6 };
    };
    const logsFig = await measure(() => b.logs.mergeSegments(p));
    const tracesFig = await measure(() => b.traces.mergeSegments(p));
    const after = await queries(b, opts.runs);
    return {
      segments,
      logRecords: segments * perFlush,
      logs: logsFig,
      traces: tracesFig,
      segmentsAfter: b.logs.stats().segments + b.traces.stats().segments,
      before,
      after,
    };
  } finally {
    await b.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
