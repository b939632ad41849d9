/** The embedded EventStore: events in ingestion order in memory, persisted by a DocLog. */
import { compileAlternatives, compileMatchers } from '../../kernel/matchers.js';
import type { EventRecord } from '../../kernel/models.js';
import type { EventScanQuery, EventStore } from '../../kernel/storage.js';
import { DocLog, type DocEntry, type DocStoreOptions } from './docs.js';

export class EmbeddedEventStore implements EventStore {
  private entries: DocEntry<EventRecord>[] = [];
  readonly log: DocLog<EventRecord>;

  constructor(opts: DocStoreOptions) {
    this.log = new DocLog<EventRecord>(
      opts,
      (e) => e.timestampNs,
      (e) => void this.entries.push(e),
      (es) => {
        const gone = new Set(es);
        this.entries = this.entries.filter((e) => !gone.has(e));
      },
    );
  }

  append(events: readonly EventRecord[]): Promise<void> {
    return this.log.append(events);
  }

  async *scan(q: EventScanQuery): AsyncIterable<{ events: EventRecord[]; seqs: number[]; position: string }> {
    const match = compileMatchers(q.matchers ?? []);
    const inScope = compileAlternatives(q.scope);
    const desc = (q.order ?? 'desc') === 'desc';
    let afterTs: bigint | undefined;
    let afterSeq = 0;
    if (q.after) {
      const [a, b] = q.after.split(':');
      try {
        afterTs = BigInt(a ?? '');
        afterSeq = Number(b);
      } catch {
        afterTs = undefined;
      }
    }
    const rows = this.entries.filter((e) => {
      const t = e.doc.timestampNs;
      if (t < q.startNs || t >= q.endNs) return false;
      if (afterTs !== undefined) {
        if (desc ? t > afterTs || (t === afterTs && e.seq >= afterSeq) : t < afterTs || (t === afterTs && e.seq <= afterSeq)) return false;
      }
      return match(e.doc.labels) && inScope(e.doc.labels);
    });
    rows.sort((a, b) => {
      const ta = a.doc.timestampNs;
      const tb = b.doc.timestampNs;
      if (ta !== tb) return desc ? (ta > tb ? -1 : 1) : ta < tb ? -1 : 1;
      return desc ? b.seq - a.seq : a.seq - b.seq;
    });
    for (let i = 0; i < rows.length; i += 1024) {
      const slice = rows.slice(i, i + 1024);
      const last = slice[slice.length - 1]!;
      yield { events: slice.map((e) => e.doc), seqs: slice.map((e) => e.seq), position: `${last.doc.timestampNs}:${last.seq}` };
    }
  }
}
