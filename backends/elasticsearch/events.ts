/** Events on Elasticsearch: one document per event in a daily index, sequenced like logs. */
import type { Attributes, EventRecord, Labels } from '../../kernel/models.js';
import type { EventScanQuery, EventStore } from '../../kernel/storage.js';
import type { Es } from './es.js';
import { nsToMs, orderedScan } from './ordered-scan.js';
import { SequenceCounter, SequencedWriter } from './sequence.js';

interface EventDoc {
  ts: string;
  seq: number;
  id: string;
  labels: Labels;
  p: { title: string; text: string; attributes: Attributes };
}

export class EsEventStore implements EventStore {
  readonly writer: SequencedWriter<EventRecord>;

  constructor(private readonly es: Es) {
    const counter = new SequenceCounter(es, 'seq-events');
    this.writer = new SequencedWriter<EventRecord>(es, counter, (e, seq) => [
      { index: { _index: es.dailyIndex('events', nsToMs(e.timestampNs)) } },
      { ts: e.timestampNs.toString(), seq, id: e.id, labels: e.labels, p: { title: e.title, text: e.text, attributes: e.attributes } } satisfies EventDoc,
    ]);
  }

  async open(): Promise<void> {
    await this.writer.counter.load();
  }

  append(events: readonly EventRecord[]): Promise<void> {
    return this.writer.append(events);
  }

  async *scan(q: EventScanQuery): AsyncIterable<{ events: EventRecord[]; seqs: number[]; position: string }> {
    for await (const { docs, position } of orderedScan<EventDoc>(this.es, 'events', q)) {
      yield {
        events: docs.map((d) => ({ id: d.id, timestampNs: BigInt(d.ts), title: d.p.title, text: d.p.text, labels: d.labels, attributes: d.p.attributes })),
        seqs: docs.map((d) => d.seq),
        position,
      };
    }
  }
}
