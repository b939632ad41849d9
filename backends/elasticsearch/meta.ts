/**
 * The MetaStore on Elasticsearch: every collection lives in ONE document (`meta` in the state
 * index), replaced as a whole with optimistic concurrency control (`if_seq_no` and
 * `if_primary_term`).
 *
 * Guarantee: a transaction's writes become durable together or not at all (one document write,
 * fsynced to the translog before the acknowledgement), and transactions are serializable across
 * every Lookout process sharing the indices — a commit succeeds only if the document is still the
 * version the transaction read; otherwise the transaction function runs again on the new version
 * (up to 50 times). Within a process transactions also queue, so they rarely retry. Reads are
 * realtime GETs (no refresh needed). The cost is that the whole metadata is rewritten per
 * transaction: it is meant for policies, teams, facets and jobs (kilobytes to a few megabytes).
 */
import { errors } from '@elastic/elasticsearch';
import { LookoutError } from '../../kernel/errors.js';
import type { MetaStore, MetaTransaction, MetaValue } from '../../kernel/storage.js';
import { toLookoutError, type Es } from './es.js';

type Collections = Record<string, Record<string, MetaValue>>;

interface MetaDoc {
  collections: Collections;
}

interface Snapshot {
  data: Collections;
  seqNo?: number;
  primaryTerm?: number;
}

const DOC_ID = 'meta';
const MAX_ATTEMPTS = 50;

const clone = <T extends MetaValue>(v: T): T => (v === null || typeof v !== 'object' ? v : structuredClone(v));

export class EsMetaStore implements MetaStore {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly es: Es) {}

  private async read(): Promise<Snapshot> {
    const res = await this.es.read(() =>
      this.es.client.get<MetaDoc>({ index: this.es.stateIndex, id: DOC_ID, realtime: true }, { ignore: [404] }),
    );
    if (!res.found || !res._source) return { data: {} };
    return { data: res._source.collections ?? {}, seqNo: res._seq_no, primaryTerm: res._primary_term };
  }

  async get(collection: string, key: string): Promise<MetaValue | undefined> {
    const v = (await this.read()).data[collection]?.[key];
    return v === undefined ? undefined : v;
  }

  async list(collection: string): Promise<[string, MetaValue][]> {
    return Object.entries((await this.read()).data[collection] ?? {});
  }

  transaction<T>(fn: (tx: MetaTransaction) => T): Promise<T> {
    const run = () => this.attempt(fn);
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }

  private async attempt<T>(fn: (tx: MetaTransaction) => T): Promise<T> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const snap = await this.read();
      const writes = new Map<string, Map<string, MetaValue | undefined>>();
      const current = (c: string, k: string): MetaValue | undefined => {
        const w = writes.get(c);
        if (w?.has(k)) return w.get(k);
        return snap.data[c]?.[k];
      };
      const tx: MetaTransaction = {
        get: (c, k) => {
          const v = current(c, k);
          return v === undefined ? undefined : clone(v);
        },
        put: (c, k, v) => {
          let w = writes.get(c);
          if (!w) writes.set(c, (w = new Map()));
          w.set(k, clone(v));
        },
        delete: (c, k) => {
          const existed = current(c, k) !== undefined;
          let w = writes.get(c);
          if (!w) writes.set(c, (w = new Map()));
          w.set(k, undefined);
          return existed;
        },
        list: (c) => {
          const m = new Map(Object.entries(snap.data[c] ?? {}));
          for (const [k, v] of writes.get(c) ?? []) {
            if (v === undefined) m.delete(k);
            else m.set(k, v);
          }
          return [...m].map(([k, v]) => [k, clone(v)]);
        },
      };
      const result = fn(tx);
      if (writes.size === 0) return result;
      const next: Collections = { ...snap.data };
      for (const [c, w] of writes) {
        const coll = { ...(next[c] ?? {}) };
        for (const [k, v] of w) {
          if (v === undefined) delete coll[k];
          else coll[k] = v;
        }
        if (Object.keys(coll).length) next[c] = coll;
        else delete next[c];
      }
      try {
        await this.es.client.index({
          index: this.es.stateIndex,
          id: DOC_ID,
          document: { collections: next } satisfies MetaDoc,
          ...(snap.seqNo === undefined ? { op_type: 'create' as const } : { if_seq_no: snap.seqNo, if_primary_term: snap.primaryTerm }),
          wait_for_active_shards: this.es.settings.waitForActiveShards as never,
        });
        return result;
      } catch (e) {
        // Another process committed first: run again on its version.
        if (e instanceof errors.ResponseError && e.statusCode === 409) continue;
        throw toLookoutError(e);
      }
    }
    throw new LookoutError('unavailable', 'metadata transaction: too much contention, try again');
  }
}
