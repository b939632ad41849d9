/**
 * Ingestion sequence numbers for logs and events, shared by every Lookout process on the same
 * indices: a counter document in the state index advanced with optimistic concurrency control
 * (`if_seq_no` / `if_primary_term`), so two processes never hand out the same number.
 *
 * Writes go through a group commit: appends that arrive while a bulk request is in flight are
 * coalesced into the next one, which takes one block of numbers and one bulk request. Within a
 * process, records therefore become searchable in sequence order (a live tail never skips one).
 */
import { errors } from '@elastic/elasticsearch';
import { LookoutError } from '../../kernel/errors.js';
import { toLookoutError, type Es } from './es.js';

interface CounterDoc {
  value: number;
}

export class SequenceCounter {
  private value = 0;
  private seqNo: number | undefined;
  private primaryTerm: number | undefined;

  constructor(
    private readonly es: Es,
    private readonly id: string,
  ) {}

  /** The last number handed out (as far as this process knows). */
  get current(): number {
    return this.value;
  }

  async load(): Promise<void> {
    const res = await this.es.read(() =>
      this.es.client.get<CounterDoc>({ index: this.es.stateIndex, id: this.id, realtime: true }, { ignore: [404] }),
    );
    if (res.found && res._source) {
      this.value = Math.max(this.value, res._source.value);
      this.seqNo = res._seq_no;
      this.primaryTerm = res._primary_term;
    } else {
      this.seqNo = undefined;
      this.primaryTerm = undefined;
    }
  }

  /** Reserves `n` numbers; returns the first. */
  async allocate(n: number): Promise<number> {
    for (let attempt = 0; attempt < 100; attempt++) {
      const next = this.value + n;
      try {
        const res = await this.es.client.index({
          index: this.es.stateIndex,
          id: this.id,
          document: { value: next },
          ...(this.seqNo === undefined
            ? { op_type: 'create' as const }
            : { if_seq_no: this.seqNo, if_primary_term: this.primaryTerm }),
          wait_for_active_shards: this.es.settings.waitForActiveShards as never,
        });
        this.seqNo = res._seq_no;
        this.primaryTerm = res._primary_term;
        this.value = next;
        return next - n + 1;
      } catch (e) {
        // Another process advanced the counter: read it again and retry.
        if (e instanceof errors.ResponseError && e.statusCode === 409) {
          await this.load();
          continue;
        }
        throw toLookoutError(e);
      }
    }
    throw new LookoutError('unavailable', `sequence counter ${this.id}: too much contention`);
  }
}

interface Pending<T> {
  items: readonly T[];
  resolve: () => void;
  reject: (e: unknown) => void;
}

/** Group commit of sequenced documents. `build` turns items with their numbers into bulk lines. */
export class SequencedWriter<T> {
  private queue: Pending<T>[] = [];
  private running = false;

  constructor(
    private readonly es: Es,
    readonly counter: SequenceCounter,
    private readonly build: (item: T, seq: number) => [unknown, unknown],
    private readonly maxBulkDocs = 5000,
  ) {}

  append(items: readonly T[]): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ items, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length) {
        // Whole appends only, up to about maxBulkDocs documents (a larger single append goes alone).
        const group: Pending<T>[] = [];
        let n = 0;
        while (this.queue.length && (group.length === 0 || n + this.queue[0]!.items.length <= this.maxBulkDocs)) {
          const p = this.queue.shift()!;
          group.push(p);
          n += p.items.length;
        }
        try {
          let seq = await this.counter.allocate(n);
          const ops: unknown[] = [];
          for (const p of group) {
            for (const item of p.items) {
              const [a, d] = this.build(item, seq++);
              ops.push(a, d);
            }
          }
          for (let i = 0; i < ops.length; i += 2 * this.maxBulkDocs) await this.es.bulk(ops.slice(i, i + 2 * this.maxBulkDocs));
          for (const p of group) p.resolve();
        } catch (e) {
          for (const p of group) p.reject(e);
        }
      }
    } finally {
      this.running = false;
    }
  }

  /** Resolves once everything queued so far is written. */
  async idle(): Promise<void> {
    while (this.running || this.queue.length) await new Promise((r) => setTimeout(r, 5));
  }
}
