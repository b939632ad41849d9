/**
 * The persistent MetaStore: the memory MetaStore's transaction semantics, with each commit
 * logged (fsynced, whatever the data fsync policy: metadata changes are rare and precious) to a
 * WAL before it is applied. The WAL is folded into an atomic snapshot when it grows.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../../kernel/logger.js';
import type { MetaValue } from '../../kernel/storage.js';
import { MemoryMetaStore } from '../memory/index.js';
import { writeFileAtomic } from './files.js';
import { Wal } from './wal.js';

type Write = [string, string, MetaValue | undefined];

export class EmbeddedMetaStore extends MemoryMetaStore {
  private wal!: Wal;
  private readonly snapshotPath: string;
  private commits = 0;

  constructor(
    private readonly dir: string,
    private readonly logger: Logger,
  ) {
    super();
    this.snapshotPath = join(dir, 'snapshot.json');
  }

  open(): void {
    if (existsSync(this.snapshotPath)) {
      const snap = JSON.parse(readFileSync(this.snapshotPath, 'utf8')) as Record<string, Record<string, MetaValue>>;
      for (const [c, entries] of Object.entries(snap)) this.data.set(c, new Map(Object.entries(entries)));
    }
    const { wal } = Wal.open(
      { dir: join(this.dir, 'wal'), fsync: 'always', fsyncIntervalMs: 1000, logger: this.logger, name: 'meta' },
      (payload) => this.apply(JSON.parse(payload.toString('utf8')) as Write[]),
    );
    this.wal = wal;
  }

  private apply(writes: Write[]): void {
    for (const [c, k, v] of writes) {
      let m = this.data.get(c);
      if (!m) this.data.set(c, (m = new Map()));
      if (v === undefined) m.delete(k);
      else m.set(k, v);
    }
  }

  protected override async commit(writes: Write[]): Promise<void> {
    if (writes.length === 0) return;
    // JSON drops `undefined`; encode deletes explicitly as a 2-tuple.
    const json = JSON.stringify(writes.map(([c, k, v]) => (v === undefined ? [c, k] : [c, k, v])));
    await this.wal.append(Buffer.from(json, 'utf8'));
    if (++this.commits % 1000 === 0) queueMicrotask(() => void this.snapshot().catch(() => undefined));
  }

  /** Folds the WAL into snapshot.json (runs inside the transaction queue, so it sees a quiet store). */
  async snapshot(): Promise<void> {
    // As a (write-less) transaction: no other commit is half-applied while the state is copied.
    const next = await this.transaction(() => {
      const n = this.wal.rotate();
      const obj: Record<string, Record<string, MetaValue>> = {};
      for (const [c, m] of this.data) obj[c] = Object.fromEntries(m);
      writeFileAtomic(this.snapshotPath, [Buffer.from(JSON.stringify(obj), 'utf8')]);
      return n;
    });
    await this.wal.removeBefore(next);
  }

  bytes(): number {
    return this.wal.bytes;
  }

  async flush(): Promise<void> {
    await this.wal.flush();
  }

  async close(): Promise<void> {
    await this.wal.close();
  }
}
