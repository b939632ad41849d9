/** The embedded TraceStore: spans by trace id in memory (trace-by-id is one lookup), persisted by a DocLog. */
import { compileAlternatives, type MatcherAlternatives } from '../../kernel/matchers.js';
import type { AttributeValue, Span } from '../../kernel/models.js';
import type { TraceSearchQuery, TraceStore } from '../../kernel/storage.js';
import { spanLabels } from '../memory/index.js';
import { DocLog, type DocEntry, type DocStoreOptions } from './docs.js';

export class EmbeddedTraceStore implements TraceStore {
  private readonly byTrace = new Map<string, DocEntry<Span>[]>();
  readonly log: DocLog<Span>;

  constructor(opts: DocStoreOptions) {
    this.log = new DocLog<Span>(
      opts,
      (s) => s.endTimeUnixNano,
      (e) => {
        const list = this.byTrace.get(e.doc.traceId);
        if (list) list.push(e);
        else this.byTrace.set(e.doc.traceId, [e]);
      },
      (es) => {
        const gone = new Set(es);
        for (const e of es) {
          const list = this.byTrace.get(e.doc.traceId);
          if (!list) continue;
          const keep = list.filter((x) => !gone.has(x));
          if (keep.length) this.byTrace.set(e.doc.traceId, keep);
          else this.byTrace.delete(e.doc.traceId);
        }
      },
    );
  }

  append(spans: readonly Span[]): Promise<void> {
    return this.log.append(spans);
  }

  async getTrace(traceId: string, scope?: MatcherAlternatives): Promise<Span[]> {
    const inScope = compileAlternatives(scope);
    return (this.byTrace.get(traceId.toLowerCase()) ?? []).map((e) => e.doc).filter((s) => inScope(spanLabels(s)));
  }

  async *search(q: TraceSearchQuery): AsyncIterable<Span[]> {
    const inScope = compileAlternatives(q.scope);
    const attrs = q.attributes ? Object.entries(q.attributes) : [];
    const attrOk = (s: Span) =>
      attrs.every(([k, v]) => str(s.attributes[k]) === v || str(s.resource[k]) === v || (k === 'name' && s.name === v));
    let n = 0;
    for (const entries of this.byTrace.values()) {
      if (q.signal?.aborted) return;
      const visible: Span[] = [];
      let anyAttr = attrs.length === 0;
      for (const { doc: s } of entries) {
        if (s.startTimeUnixNano < q.endNs && s.endTimeUnixNano >= q.startNs && inScope(spanLabels(s))) {
          visible.push(s);
          if (!anyAttr && attrOk(s)) anyAttr = true;
        }
      }
      if (visible.length === 0 || !anyAttr) continue;
      yield visible;
      if (q.limit !== undefined && ++n >= q.limit * 10) return;
    }
  }
}

function str(v: AttributeValue | undefined): string | undefined {
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
}
