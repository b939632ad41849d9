/**
 * The embedded TraceStore. Recent spans live in a head (trace id → spans) backed by a WAL; a
 * head flush writes them into an immutable `.tseg` segment (see trace-segment.ts) and drops
 * them from memory. Only the head, the segment indexes and a bounded block cache are in
 * memory; blocks are read from disk on demand.
 *
 * Trace by id: the head map, then per segment a bloom probe and, where it may hold the trace,
 * one id-table search and one block read. Search walks the head, then segments newest first,
 * skipping segments and blocks whose time bounds, duration bounds, statuses or attribute bloom
 * filters rule out every span the query asks for.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { compileAlternatives, type LabelsPredicate, type MatcherAlternatives } from '../../kernel/matchers.js';
import type { Span } from '../../kernel/models.js';
import type { TraceSearchQuery, TraceStore } from '../../kernel/storage.js';
import { spanLabels } from '../memory/index.js';
import type { DocStoreOptions } from './docs.js';
import { SegmentedDocStore } from './segmented-doc-store.js';
import { bloomHas } from './hash-bloom.js';
import type { DocSegmentWriter } from './doc-segment-file.js';
import { mergeTraceSegments } from './doc-merge.js';
import type { GenRanges } from './segment-merge.js';
import { attrMatches, spanDuration, STATUS_BIT, TRACE_MAGIC, TraceSegment, UNSUMMARIZED, writeTraceSegment, type BlockSummary, type TraceBlockMeta } from './trace-segment.js';

export interface TraceStoreOptions extends DocStoreOptions {
  /** Spans in the head before it is flushed into a segment (default 100,000). */
  maxHeadSpans?: number;
  /** Bytes (estimated, decoded) of the block cache (default 64 MiB). */
  cacheBytes?: number;
}


/** Groups a span under its (lowercase) trace id. */
function addToTraceMap(m: Map<string, Span[]>, s: Span): void {
  const id = s.traceId.toLowerCase();
  const list = m.get(id);
  if (list) list.push(s);
  else m.set(id, [s]);
}

export class EmbeddedTraceStore
  extends SegmentedDocStore<Span, TraceSegment, BlockSummary | Uint32Array | Buffer>
  implements TraceStore
{
  readonly searchesWholeTraces = true;
  private head = new Map<string, Span[]>();
  private headSpans = 0;

  constructor(opts: TraceStoreOptions) {
    super(opts, { ext: 'tseg', kind: 'trace', maxHead: opts.maxHeadSpans ?? 100_000, cacheBytes: opts.cacheBytes ?? 64 << 20 });
  }

  protected addToHead(s: Span): void {
    addToTraceMap(this.head, s);
    this.headSpans++;
  }
  protected headSize(): number {
    return this.headSpans;
  }
  protected writeHead(path: string, lastSeq: number): void {
    writeTraceSegment(path, this.head, lastSeq);
  }
  protected writeLegacy(path: string, docs: readonly [number, Span][], lastSeq: number): void {
    const traces = new Map<string, Span[]>();
    for (const [, s] of docs) addToTraceMap(traces, s);
    writeTraceSegment(path, traces, lastSeq);
  }
  protected clearHead(): void {
    this.head = new Map();
    this.headSpans = 0;
  }
  protected openSegment(gen: number, path: string): TraceSegment {
    return new TraceSegment(gen, path, this.cache);
  }
  protected newestNs(seg: TraceSegment): bigint {
    return seg.index.maxEnd;
  }
  protected readonly magic = TRACE_MAGIC;
  protected writeMerged(inputs: readonly TraceSegment[], w: DocSegmentWriter, lastSeq: number, covers: GenRanges, tick: () => Promise<void>): Promise<void> {
    return mergeTraceSegments(inputs, w, lastSeq, covers, tick);
  }

  append(spans: readonly Span[]): Promise<void> {
    return this.appendDocs(spans);
  }

  async getTrace(traceId: string, scope?: MatcherAlternatives): Promise<Span[]> {
    const inScope = compileAlternatives(scope);
    return this.collect(traceId.toLowerCase(), (s) => inScope(spanLabels(s)));
  }

  /**
   * Spans of one trace from every segment and the head that pass `keep`; `known` supplies the
   * spans of one segment already decoded by the caller.
   */
  private collect(id: string, keep: (s: Span) => boolean, known?: { seg: TraceSegment; spans: readonly Span[] }): Span[] {
    const out: Span[] = [];
    for (const seg of this.segments) for (const s of seg === known?.seg ? known.spans : seg.lookup(id)) if (keep(s)) out.push(s);
    for (const s of this.head.get(id) ?? []) if (keep(s)) out.push(s);
    return out;
  }

  async *search(q: TraceSearchQuery): AsyncIterable<Span[]> {
    if (q.scope !== undefined && q.scope.length === 0) return;
    const m = compileSearch(q);
    const segments = this.segments;
    const seen = new Set<string>();
    const max = q.limit !== undefined ? q.limit * 10 : Infinity;
    let found = 0;
    // A trace qualifies through one span; its group then has every visible span of the trace.
    const qualify = (id: string, spans: readonly Span[], seg?: TraceSegment): Span[] | undefined => {
      if (seen.has(id)) return undefined;
      let hit = false;
      for (const s of spans) if (m.visible(s) && m.cond(s)) { hit = true; break; }
      if (!hit) return undefined;
      seen.add(id);
      return this.collect(id, q.wholeTraces ? m.inScope : m.visible, seg && { seg, spans });
    };

    for (const [id, spans] of [...this.head]) {
      if (q.signal?.aborted) return;
      const g = qualify(id, spans);
      if (!g) continue;
      yield g;
      if (++found >= max) return;
    }
    let blocksRead = 0;
    for (let k = segments.length - 1; k >= 0; k--) {
      const seg = segments[k]!;
      const ix = seg.index;
      if (ix.maxEnd < q.startNs || ix.minStart >= q.endNs) continue;
      for (let b = ix.blocks.length - 1; b >= 0; b--) {
        if (!m.blockMayMatch(ix.blocks[b]!, ix.elemKeys === true)) continue;
        if (q.signal?.aborted) return;
        // Reads are synchronous: let other requests run between blocks.
        if (++blocksRead % 16 === 0) await yieldToLoop();
        const sum = seg.summary(b);
        const mayMatch = m.summaryTest(sum);
        for (let t = 0; t < sum.traces; t++) {
          // Time, status, duration, service and name from the summary: decode only candidates.
          if (!mayMatch(t)) continue;
          const spans = seg.trace(b, sum, t);
          const g = qualify(spans[0]!.traceId.toLowerCase(), spans, seg);
          if (!g) continue;
          yield g;
          if (++found >= max) return;
        }
      }
    }
  }

  stats(): { headSpans: number; headTraces: number; segments: number; segmentSpans: number; segmentBytes: number; walBytes: number; cacheBytes: number } {
    let segmentSpans = 0;
    let segmentBytes = 0;
    for (const s of this.segments) {
      segmentSpans += s.index.spans;
      segmentBytes += s.file.size;
    }
    return {
      headSpans: this.headSpans,
      headTraces: this.head.size,
      segments: this.segments.length,
      segmentSpans,
      segmentBytes,
      walBytes: this.wal.walBytes,
      cacheBytes: this.cache.bytes,
    };
  }
}

interface CompiledSearch {
  /** In the scope (any time). */
  inScope: (s: Span) => boolean;
  /** In the time range and the scope. */
  visible: (s: Span) => boolean;
  /** Meets every prefilter. */
  cond: (s: Span) => boolean;
  /** False when no span of the block can be both visible and meet the prefilters. */
  blockMayMatch: (b: TraceBlockMeta, elemKeys: boolean) => boolean;
  /**
   * For a block's summary: a test that is false when no span of trace `t` is in range with a
   * wanted status, duration, service name and span name.
   */
  summaryTest: (b: BlockSummary) => (t: number) => boolean;
}

function compileSearch(q: TraceSearchQuery): CompiledSearch {
  const inScope: LabelsPredicate = compileAlternatives(q.scope);
  const attrs = Object.entries(q.attributes ?? {});
  const bloomKeys = attrs.map(([k, v]) => k + '=' + v);
  const statusMask = q.statuses ? q.statuses.reduce((a, c) => a | (STATUS_BIT[c] ?? 0), 0) : 7;
  const minDur = q.minDurationNs !== undefined ? Number(q.minDurationNs) : -Infinity;
  const maxDur = q.maxDurationNs !== undefined ? Number(q.maxDurationNs) : Infinity;
  const filter = q.spanFilter;
  const wantSvc = q.attributes?.['service.name'];
  const wantName = q.attributes?.['name'];
  const scoped = q.scope !== undefined;
  return {
    inScope: scoped ? (s) => inScope(spanLabels(s)) : () => true,
    visible: (s) => s.startTimeUnixNano < q.endNs && s.endTimeUnixNano >= q.startNs && (!scoped || inScope(spanLabels(s))),
    cond: (s) => {
      for (const [k, v] of attrs) {
        if (!attrMatches(s.attributes[k], v) && !attrMatches(s.resource[k], v) && !(k === 'name' && s.name === v)) return false;
      }
      if (((STATUS_BIT[s.status.code] ?? 7) & statusMask) === 0) return false;
      const d = spanDuration(s);
      if (d < minDur || d > maxDur) return false;
      return filter ? filter(s) : true;
    },
    blockMayMatch: (b, elemKeys) => {
      if (b.maxEnd < q.startNs || b.minStart >= q.endNs) return false;
      if ((b.status & statusMask) === 0) return false;
      if (b.maxDur < minDur || b.minDur > maxDur) return false;
      // Segments written before array elements were indexed only prune on whole values.
      if (elemKeys) for (const k of bloomKeys) if (!bloomHas(b.bloom, k)) return false;
      return true;
    },
    summaryTest: (b) => {
      // Dictionary index each span must have (-1: no span of the block has the value; only
      // unsummarized spans can match), or undefined when the query does not constrain it.
      const svc = wantSvc === undefined ? undefined : b.services.indexOf(wantSvc);
      const name = wantName === undefined ? undefined : b.names.indexOf(wantName);
      return (t) => {
        for (let j = b.first[t]!, e = b.first[t + 1]!; j < e; j++) {
          const st = b.start[j]!;
          const en = b.end[j]!;
          if (st >= q.endNs || en < q.startNs || (b.status[j]! & statusMask) === 0) continue;
          if (svc !== undefined && b.service[j] !== svc && b.service[j] !== UNSUMMARIZED) continue;
          if (name !== undefined && b.name[j] !== name && b.name[j] !== UNSUMMARIZED) continue;
          const d = Number(en - st);
          if (d >= minDur && d <= maxDur) return true;
        }
        return false;
      };
    },
  };
}
