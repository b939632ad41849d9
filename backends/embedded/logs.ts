/**
 * The embedded LogStore. Appends go to the logs WAL and a columnar in-memory head; the head is
 * flushed into a segment (blocks of deflated columns with bloom filters), after which its WAL
 * files are deleted. Each record gets a global ingestion sequence number, kept on disk so scan
 * positions and live-tail cursors stay valid across restarts.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { compileAlternatives, compileMatchers, type LabelMatcher, type MatcherAlternatives } from '../../kernel/matchers.js';
import type { Labels, LogRecord } from '../../kernel/models.js';
import { labelsKey } from '../../kernel/models.js';
import type { Logger } from '../../kernel/logger.js';
import type { LogBatch, LogScanQuery, LogStore } from '../../kernel/storage.js';
import { bloomMayContain } from './bloom.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { writeFileAtomic } from './files.js';
import { LogSegment, type Facets, type LogColumns } from './log-segment.js';
import { pack, unpack } from './pack.js';
import { readLabels, writeLabels } from './sample-codec.js';
import { Wal, type FsyncPolicy } from './wal.js';

export interface LogStoreOptions {
  dir: string;
  fsync: FsyncPolicy;
  fsyncIntervalMs: number;
  logger: Logger;
  maxHeadRecords?: number;
  maxWalBytes?: number;
}

const EMPTY_FACETS: Facets = Object.freeze({});
const BATCH = 1024;

/** The mutable head: plain arrays, appended in ingestion (seq) order. */
class Head {
  ts: bigint[] = [];
  seq: number[] = [];
  stream: number[] = [];
  msg: string[] = [];
  facets: (Facets | null)[] = [];
  minTs = 0n;
  maxTs = 0n;
  get n(): number {
    return this.ts.length;
  }
  push(ts: bigint, seq: number, stream: number, msg: string, facets: Facets | null): void {
    if (this.ts.length === 0 || ts < this.minTs) this.minTs = ts;
    if (this.ts.length === 0 || ts > this.maxTs) this.maxTs = ts;
    this.ts.push(ts);
    this.seq.push(seq);
    this.stream.push(stream);
    this.msg.push(msg);
    this.facets.push(facets);
  }
  /** A column view (arrays are not copied; the head must not change while it is in use). */
  columns(): LogColumns {
    return {
      n: this.ts.length,
      ts: BigInt64Array.from(this.ts),
      seq: Float64Array.from(this.seq),
      stream: Uint32Array.from(this.stream),
      msg: this.msg,
      facets: this.facets,
    };
  }
}

/** Something a scan reads: a segment block, the head being flushed, or the head. */
interface Source {
  minTs: bigint;
  maxTs: bigint;
  /** Rows to read (the head's length when the scan started). */
  n?: number;
  load(): LogColumns | Head;
}

interface Row {
  ts: bigint;
  seq: number;
  src: LogColumns | Head;
  i: number;
}

const segName = (gen: number) => String(gen).padStart(10, '0') + '.lseg';

export class EmbeddedLogStore implements LogStore {
  private wal!: Wal;
  private streams: Labels[] = [];
  private streamWalFile: number[] = [];
  private readonly streamByKey = new Map<string, number>();
  private readonly streamByLabels = new WeakMap<object, number>();
  private segments: LogSegment[] = [];
  private head = new Head();
  private flushing: Head | null = null;
  private seq = 0;
  private nextGen = 1;
  private readonly segDir: string;
  private readonly w = new ByteWriter(1 << 20);
  private flushQueued = false;
  private maintenanceChain: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: LogStoreOptions) {
    this.segDir = join(opts.dir, 'segments');
  }

  open(): void {
    mkdirSync(this.segDir, { recursive: true });
    const files = readdirSync(this.segDir);
    for (const f of files) if (f.endsWith('.tmp')) rmSync(join(this.segDir, f), { force: true });
    let persisted = 0;
    for (const gen of files.filter((f) => /^\d{10}\.lseg$/.test(f)).map((f) => Number(f.slice(0, 10))).sort((a, b) => a - b)) {
      const path = join(this.segDir, segName(gen));
      try {
        const seg = LogSegment.load(gen, path, (l) => this.streamFor(l));
        this.segments.push(seg);
        if (seg.lastSeq > persisted) persisted = seg.lastSeq;
      } catch (e) {
        this.opts.logger.error('log segment unreadable; skipped', { path, err: e });
      }
      this.nextGen = gen + 1;
    }
    this.seq = persisted;
    let refs = new Map<number, number>();
    let refsFile = -1;
    const { wal } = Wal.open(
      { dir: join(this.opts.dir, 'wal'), fsync: this.opts.fsync, fsyncIntervalMs: this.opts.fsyncIntervalMs, logger: this.opts.logger, name: 'logs' },
      (payload, file) => {
        if (file !== refsFile) {
          refs = new Map();
          refsFile = file;
        }
        const r = new ByteReader(payload);
        let seq = r.uvar();
        const nDefs = r.uvar();
        for (let i = 0; i < nDefs; i++) {
          const ref = r.uvar();
          refs.set(ref, this.streamFor(readLabels(r)));
        }
        const n = r.uvar();
        for (let i = 0; i < n; i++) {
          const sid = refs.get(r.uvar());
          if (sid === undefined) throw new Error('wal record references an undefined stream');
          const ts = r.i64();
          const msg = r.str();
          const f = r.u8() === 1 ? unpack<Facets>(r.bytes()) : null;
          seq++;
          // Records already in a segment (a crash between segment write and WAL deletion).
          if (seq <= persisted) continue;
          this.head.push(ts, seq, sid, msg, f);
          if (seq > this.seq) this.seq = seq;
        }
      },
    );
    this.wal = wal;
  }

  private streamFor(labels: Labels): number {
    const c = this.streamByLabels.get(labels);
    if (c !== undefined) return c;
    const key = labelsKey(labels);
    let id = this.streamByKey.get(key);
    if (id === undefined) {
      id = this.streams.length;
      const copy: Record<string, string> = {};
      for (const n of Object.keys(labels).sort()) copy[n] = labels[n]!;
      this.streams.push(Object.freeze(copy));
      this.streamWalFile.push(-1);
      this.streamByKey.set(key, id);
    }
    this.streamByLabels.set(labels, id);
    return id;
  }

  async append(records: readonly LogRecord[]): Promise<void> {
    if (records.length === 0) return;
    const w = this.w;
    w.reset();
    const file = this.wal.currentFile;
    const ids = new Uint32Array(records.length);
    w.uvar(this.seq);
    const defsAt = w.pos;
    w.ensure(5);
    w.pos += 5;
    let nDefs = 0;
    for (let i = 0; i < records.length; i++) {
      const id = this.streamFor(records[i]!.labels);
      ids[i] = id;
      if (this.streamWalFile[id] !== file) {
        this.streamWalFile[id] = file;
        w.uvar(id);
        writeLabels(w, this.streams[id]!);
        nDefs++;
      }
    }
    for (let i = 0; i < 4; i++) w.buf[defsAt + i] = ((nDefs >>> (7 * i)) & 0x7f) | 0x80;
    w.buf[defsAt + 4] = (nDefs >>> 28) & 0x7f;
    w.uvar(records.length);
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      w.uvar(ids[i]!);
      w.i64(r.timestampNs);
      w.str(r.message);
      let has = false;
      for (const _ in r.facets) {
        has = true;
        break;
      }
      if (has) {
        w.u8(1);
        w.bytes(pack(r.facets));
      } else w.u8(0);
      this.head.push(r.timestampNs, ++this.seq, ids[i]!, r.message, has ? r.facets : null);
    }
    const done = this.wal.append(w.take());
    this.maybeFlush();
    await done;
  }

  lastSeq(): number {
    return this.seq;
  }

  private maybeFlush(): void {
    if (this.flushQueued) return;
    if (this.head.n < (this.opts.maxHeadRecords ?? 500_000) && this.wal.bytes < (this.opts.maxWalBytes ?? 128 << 20)) return;
    this.flushQueued = true;
    setImmediate(() => void this.serial(() => this.flushHead()).finally(() => (this.flushQueued = false)));
  }

  serial<T>(fn: () => Promise<T> | T): Promise<T> {
    const p = this.maintenanceChain.then(fn, fn);
    this.maintenanceChain = p.catch((e) => this.opts.logger.error('logs maintenance failed', { err: e }));
    return p;
  }

  /** Writes the head into a new segment and deletes the WAL files it came from. */
  async flushHead(): Promise<number> {
    if (this.head.n === 0) return 0;
    const walCut = this.wal.rotate();
    const h = this.head;
    this.flushing = h;
    this.head = new Head();
    const lastSeq = this.seq;
    await new Promise((r) => setImmediate(r));
    const cols = h.columns();
    const order = Array.from({ length: cols.n }, (_, i) => i);
    order.sort((a, b) => (cols.ts[a]! < cols.ts[b]! ? -1 : cols.ts[a]! > cols.ts[b]! ? 1 : cols.seq[a]! - cols.seq[b]!));
    const sorted: LogColumns = {
      n: cols.n,
      ts: BigInt64Array.from(order, (i) => cols.ts[i]!),
      seq: Float64Array.from(order, (i) => cols.seq[i]!),
      stream: Uint32Array.from(order, (i) => cols.stream[i]!),
      msg: order.map((i) => cols.msg[i]!),
      facets: order.map((i) => cols.facets[i] ?? null),
    };
    const gen = this.nextGen++;
    const path = join(this.segDir, segName(gen));
    writeFileAtomic(path, LogSegment.build(sorted, (id) => this.streams[id]!, lastSeq));
    const seg = LogSegment.load(gen, path, (l) => this.streamFor(l));
    this.segments.push(seg);
    this.flushing = null;
    await this.wal.removeBefore(walCut);
    return h.n;
  }

  /** Deletes segments whose newest record is older than `nowMs - retentionMs`. */
  async applyRetention(nowMs: number, retentionMs: number): Promise<number> {
    if (retentionMs <= 0) return 0;
    const cutoff = BigInt(Math.floor(nowMs - retentionMs)) * 1_000_000n;
    const expired = this.segments.filter((s) => s.maxTs < cutoff);
    if (expired.length === 0) return 0;
    const gone = new Set(expired);
    this.segments = this.segments.filter((s) => !gone.has(s));
    for (const s of expired) {
      rmSync(s.path, { force: true });
      s.release();
    }
    return expired.length;
  }

  /** A predicate over stream ids for matchers AND scope (evaluated once per stream). */
  private streamFilter(matchers: readonly LabelMatcher[] | undefined, scope: MatcherAlternatives | undefined): (id: number) => boolean {
    if ((!matchers || matchers.length === 0) && scope === undefined) return () => true;
    const m = compileMatchers(matchers ?? []);
    const s = compileAlternatives(scope);
    const memo: (boolean | undefined)[] = [];
    return (id) => {
      let v = memo[id];
      if (v === undefined) {
        const l = this.streams[id]!;
        v = memo[id] = m(l) && s(l);
      }
      return v;
    };
  }

  async tail(afterSeq: number, scope?: MatcherAlternatives): Promise<{ records: LogRecord[]; seqs: number[] }> {
    const ok = this.streamFilter(undefined, scope);
    const rows: Row[] = [];
    const take = (src: LogColumns | Head) => {
      for (let i = 0; i < src.n; i++) {
        const s = src.seq[i]!;
        if (s > afterSeq && ok(src.stream[i]!)) rows.push({ ts: src.ts[i]!, seq: s, src, i });
      }
    };
    for (const seg of this.segments) {
      if (seg.lastSeq <= afterSeq) continue;
      seg.blocks.forEach((b, bi) => {
        if (b.maxSeq > afterSeq) take(seg.columns(bi));
      });
    }
    if (this.flushing) take(this.flushing);
    take(this.head);
    rows.sort((a, b) => a.seq - b.seq);
    return { records: rows.map((r) => this.record(r)), seqs: rows.map((r) => r.seq) };
  }

  private record(r: Row): LogRecord {
    return {
      timestampNs: r.ts,
      message: r.src.msg[r.i]!,
      labels: this.streams[r.src.stream[r.i]!]!,
      facets: r.src.facets[r.i] ?? EMPTY_FACETS,
    };
  }

  async *scan(q: LogScanQuery): AsyncIterable<LogBatch> {
    const desc = (q.order ?? 'desc') === 'desc';
    const ok = this.streamFilter(q.matchers, q.scope);
    const terms = (q.terms ?? []).filter((t) => t.length > 0).map((t) => t.toLowerCase());
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
    const start = q.startNs;
    const end = q.endNs - 1n; // inclusive upper bound
    const sources: Source[] = [];
    for (const seg of this.segments) {
      if (seg.maxTs < start || seg.minTs > end) continue;
      seg.blocks.forEach((b, bi) => {
        if (b.maxTs < start || b.minTs > end) return;
        if (afterTs !== undefined && (desc ? b.minTs > afterTs : b.maxTs < afterTs)) return;
        let any = false;
        for (const s of b.streams) if (ok(s)) {
          any = true;
          break;
        }
        if (!any || (terms.length > 0 && !bloomMayContain(b.bloom, terms))) return;
        sources.push({ minTs: b.minTs, maxTs: b.maxTs, load: () => seg.columns(bi) });
      });
    }
    for (const h of [this.flushing, this.head]) {
      if (!h || h.n === 0 || h.maxTs < start || h.minTs > end) continue;
      // The head's current length: appends during the scan are not part of it. Head arrays only
      // grow (a flush swaps in a new head), so row indexes stay valid.
      sources.push({ minTs: h.minTs, maxTs: h.maxTs, n: h.n, load: () => h });
    }
    if (desc) sources.sort((a, b) => (a.maxTs > b.maxTs ? -1 : a.maxTs < b.maxTs ? 1 : 0));
    else sources.sort((a, b) => (a.minTs < b.minTs ? -1 : a.minTs > b.minTs ? 1 : 0));
    const cmp = desc
      ? (a: Row, b: Row) => (a.ts > b.ts ? -1 : a.ts < b.ts ? 1 : b.seq - a.seq)
      : (a: Row, b: Row) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.seq - b.seq);
    let pool: Row[] = [];
    for (let si = 0; si <= sources.length; si++) {
      if (q.signal?.aborted) return;
      const src = sources[si];
      if (src) {
        const cols = src.load();
        const n = src.n ?? cols.n;
        for (let i = 0; i < n; i++) {
          const ts = cols.ts[i]!;
          if (ts < start || ts > end) continue;
          const seq = cols.seq[i]!;
          if (afterTs !== undefined) {
            if (desc ? ts > afterTs || (ts === afterTs && seq >= afterSeq) : ts < afterTs || (ts === afterTs && seq <= afterSeq)) continue;
          }
          if (!ok(cols.stream[i]!)) continue;
          if (terms.length > 0) {
            const m = cols.msg[i]!.toLowerCase();
            let all = true;
            for (const t of terms) if (!m.includes(t)) {
              all = false;
              break;
            }
            if (!all) continue;
          }
          pool.push({ ts, seq, src: cols, i });
        }
      }
      // Rows beyond the next source's bound cannot be preceded by anything unread.
      const next = sources[si + 1];
      if (pool.length === 0) continue;
      pool.sort(cmp);
      let cut = pool.length;
      if (next) {
        cut = 0;
        while (cut < pool.length && (desc ? pool[cut]!.ts > next.maxTs : pool[cut]!.ts < next.minTs)) cut++;
      }
      for (let k = 0; k < cut; k += BATCH) {
        const slice = pool.slice(k, Math.min(cut, k + BATCH));
        const last = slice[slice.length - 1]!;
        yield { records: slice.map((r) => this.record(r)), seqs: slice.map((r) => r.seq), position: `${last.ts}:${last.seq}` };
      }
      pool = pool.slice(cut);
    }
  }

  stats(): { records: number; segments: number; segmentBytes: number; walBytes: number } {
    return {
      records: this.head.n,
      segments: this.segments.length,
      segmentBytes: this.segments.reduce((a, s) => a + s.bytes, 0),
      walBytes: this.wal.bytes,
    };
  }

  async flush(): Promise<void> {
    await this.wal.flush();
  }

  async close(opts: { flushHead: boolean }): Promise<void> {
    await this.maintenanceChain;
    if (opts.flushHead) await this.serial(() => this.flushHead());
    await this.wal.close();
    for (const s of this.segments) s.closeNow();
  }
}
