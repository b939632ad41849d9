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
import type { LabelColumn, LogBatch, LogColumnBatch, LogColumnScanQuery, LogScanQuery, LogStore } from '../../kernel/storage.js';
import { bloomMayContain } from './bloom.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { writeFileAtomic } from './files.js';
import { BLOCK_RECORDS, BlockReader, floorMs, HEAD_FLUSH_DEFLATE, LogSegment, LogSegmentWriter, offsetsToMs, type Facets } from './log-segment.js';
import { Head } from './log-head.js';
import { writeFacetsMsgpack } from './facets-pack.js';
import { pack } from './pack.js';
import { readLabels, writeLabels } from './sample-codec.js';
import { Wal, type FsyncPolicy } from './wal.js';
import { mergeLogSegments } from './log-merge.js';
import { MergeRunner, supersededGens, type MergePolicy } from './segment-merge.js';

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
/** Rows per head chunk a scan treats like a block. */
const CHUNK = 8192;
/** Decoded blocks kept for paging (a reader holds at most its inflated columns). */
const READER_CACHE = 16;
/** Blocks whose messages a selective scan inflates ahead (in parallel on the thread pool). */
const PREFETCH = 4;

/** What rows are read from: the head or a segment block. */
type RowSource = Head | BlockReader;

/**
 * Something a scan reads: rows [from, to) of a segment block or of the head, with time bounds.
 * Head chunks are only time-sorted while the head is.
 */
interface Source {
  minTs: bigint;
  maxTs: bigint;
  from: number;
  to: number;
  seg?: LogSegment;
  bi?: number;
  head?: Head;
}

interface Row {
  ts: bigint;
  seq: number;
  src: RowSource;
  i: number;
}

/** The stream ids a query may read, as a predicate and (when few) as a sorted list. */
interface StreamFilter {
  ok: (id: number) => boolean;
  /** null = every stream. */
  list: number[] | null;
}

function blockHasAny(streams: Uint32Array, f: StreamFilter): boolean {
  if (f.list === null) return true;
  if (f.list.length < streams.length >>> 3) {
    for (const id of f.list) {
      let lo = 0;
      let hi = streams.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        const v = streams[mid]!;
        if (v === id) return true;
        if (v < id) lo = mid + 1;
        else hi = mid - 1;
      }
    }
    return false;
  }
  for (let k = 0; k < streams.length; k++) if (f.ok(streams[k]!)) return true;
  return false;
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
  private readonly readers = new Map<string, BlockReader>();
  private readonly merger = new MergeRunner();

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
    this.dropSuperseded(files);
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
          const msgAt = r.pos;
          const msg = r.str();
          const flagAt = r.pos;
          if (r.u8() === 1) r.bytes();
          seq++;
          // Records already in a segment (a crash between segment write and WAL deletion).
          if (seq <= persisted) continue;
          this.head.push(ts, seq, sid, msg, payload, msgAt, flagAt, r.pos);
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
    // Where each record's message, facets flag and end sit: the head keeps these bytes, not objects.
    const at = new Uint32Array(records.length * 3);
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      w.uvar(ids[i]!);
      w.i64(r.timestampNs);
      at[3 * i] = w.pos;
      w.str(r.message);
      at[3 * i + 1] = w.pos;
      let has = false;
      for (const _ in r.facets) {
        has = true;
        break;
      }
      if (has) {
        w.u8(1);
        if (!writeFacetsMsgpack(w, r.facets)) w.bytes(pack(r.facets));
      } else w.u8(0);
      at[3 * i + 2] = w.pos;
    }
    const payload = w.take();
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      this.head.push(r.timestampNs, ++this.seq, ids[i]!, r.message, payload, at[3 * i]!, at[3 * i + 1]!, at[3 * i + 2]!);
    }
    const done = this.wal.append(payload);
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
    this.head = new Head(h.n);
    const lastSeq = this.seq;
    await new Promise((r) => setImmediate(r));
    const sorted = h.sortedColumns();
    const gen = this.nextGen++;
    const path = join(this.segDir, segName(gen));
    // Compression runs on the thread pool (one deflate at a time): the ingest thread only
    // encodes, and requests are served between deflates instead of waiting out the flush.
    const parts: Buffer[] = [];
    const writer = new LogSegmentWriter((id) => this.streams[id]!, (b) => parts.push(b), HEAD_FLUSH_DEFLATE);
    for (let from = 0; from < sorted.n; from += BLOCK_RECORDS) await writer.addBlockAsync(sorted, from, Math.min(sorted.n, from + BLOCK_RECORDS));
    writer.finish(lastSeq);
    writeFileAtomic(path, parts);
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
    this.forgetReaders(expired);
    return expired.length;
  }

  private forgetReaders(segs: readonly LogSegment[]): void {
    for (const key of [...this.readers.keys()]) if (segs.some((s) => key.startsWith(`${s.uid}:`))) this.readers.delete(key);
  }

  /** Inputs of a merge that a crash left behind next to its output (see segment-merge.ts). */
  private dropSuperseded(files: readonly string[]): void {
    const gens = files.filter((f) => /^\d{10}\.lseg$/.test(f)).map((f) => Number(f.slice(0, 10)));
    const gone = supersededGens(gens, this.segments);
    if (gone.size === 0) return;
    for (const s of this.segments) if (gone.has(s.gen)) s.closeNow();
    this.segments = this.segments.filter((s) => !gone.has(s.gen));
    for (const gen of gone) rmSync(join(this.segDir, segName(gen)), { force: true });
    this.opts.logger.info('removed log segments replaced by a merge', { gens: [...gone] });
  }

  /** Stops background merging (a merge in progress is abandoned at its next yield). */
  stopMerging(): Promise<void> {
    return this.merger.stop();
  }

  /** Merges small segments (background; see log-merge.ts). Returns the merges done. */
  mergeSegments(policy: MergePolicy): Promise<number> {
    return this.merger.run(() =>
      mergeLogSegments(
        {
          segments: () => this.segments,
          swap: (inputs, merged) => {
            const gone = new Set(inputs);
            this.segments = [...this.segments.filter((s) => !gone.has(s)), merged].sort((a, b) => a.gen - b.gen);
            this.forgetReaders(inputs);
          },
          streamsOf: (id) => this.streams[id]!,
          streamFor: (l) => this.streamFor(l),
          runner: this.merger,
          logger: this.opts.logger,
        },
        policy,
      ),
    );
  }

  /** The streams matching matchers AND scope, decided once per stream per query. */
  private streamFilter(matchers: readonly LabelMatcher[] | undefined, scope: MatcherAlternatives | undefined): StreamFilter {
    if ((!matchers || matchers.length === 0) && scope === undefined) return { ok: () => true, list: null };
    const m = compileMatchers(matchers ?? []);
    const s = compileAlternatives(scope);
    const n = this.streams.length;
    const okArr = new Uint8Array(n);
    const list: number[] = [];
    for (let id = 0; id < n; id++) {
      const l = this.streams[id]!;
      if (m(l) && s(l)) {
        okArr[id] = 1;
        list.push(id);
      }
    }
    // Streams created during the scan belong to records it does not read.
    return { ok: (id) => okArr[id] === 1, list };
  }

  /** A cached lazy reader of a block (paging reads the same newest blocks again and again). */
  private reader(seg: LogSegment, bi: number): BlockReader {
    const key = `${seg.uid}:${bi}`;
    let r = this.readers.get(key);
    if (r) this.readers.delete(key);
    else r = seg.reader(bi);
    this.readers.set(key, r);
    if (this.readers.size > READER_CACHE) this.readers.delete(this.readers.keys().next().value!);
    return r;
  }

  async tail(afterSeq: number, scope?: MatcherAlternatives): Promise<{ records: LogRecord[]; seqs: number[] }> {
    const { ok } = this.streamFilter(undefined, scope);
    const rows: Row[] = [];
    const take = (src: RowSource, n: number) => {
      const seqs = src.seqs();
      const streams = src.streams();
      for (let i = 0; i < n; i++) {
        const s = seqs[i]!;
        if (s > afterSeq && ok(streams[i]!)) rows.push({ ts: src.tsAt(i), seq: s, src, i });
      }
    };
    for (const seg of this.segments) {
      if (seg.lastSeq <= afterSeq) continue;
      seg.blocks.forEach((b, bi) => {
        if (b.maxSeq > afterSeq) take(this.reader(seg, bi), b.n);
      });
    }
    if (this.flushing) take(this.flushing, this.flushing.n);
    take(this.head, this.head.n);
    rows.sort((a, b) => a.seq - b.seq);
    return { records: rows.map((r) => this.record(r)), seqs: rows.map((r) => r.seq) };
  }

  private record(r: Row): LogRecord {
    return {
      timestampNs: r.ts,
      message: r.src.msgAt(r.i),
      labels: this.streams[r.src.streams()[r.i]!]!,
      facets: r.src.facetsAt(r.i) ?? EMPTY_FACETS,
    };
  }

  /** Blocks and head chunks overlapping [start, end], in no particular order. */
  private sources(start: bigint, end: bigint): Source[] {
    const out: Source[] = [];
    for (const seg of this.segments) {
      if (seg.maxTs < start || seg.minTs > end) continue;
      seg.blocks.forEach((b, bi) => {
        if (b.maxTs < start || b.minTs > end) return;
        out.push({ minTs: b.minTs, maxTs: b.maxTs, from: 0, to: b.n, seg, bi });
      });
    }
    for (const h of [this.flushing, this.head]) {
      if (!h || h.n === 0 || h.maxTs < start || h.minTs > end) continue;
      // The head's current length: appends during the scan are not part of it. Head arrays only
      // grow (a flush swaps in a new head), so row indexes stay valid.
      const n = h.n;
      if (!h.sorted) {
        out.push({ minTs: h.minTs, maxTs: h.maxTs, from: 0, to: n, head: h });
        continue;
      }
      for (let from = 0; from < n; from += CHUNK) {
        const to = Math.min(n, from + CHUNK);
        if (h.ts[to - 1]! < start || h.ts[from]! > end) continue;
        out.push({ minTs: h.ts[from]!, maxTs: h.ts[to - 1]!, from, to, head: h });
      }
    }
    return out;
  }

  /**
   * Newest (or oldest) first: sources are visited in bound order and rows are released as soon
   * as no unread source can precede them, so a first page touches one or two blocks. Blocks are
   * skipped by stream postings and message blooms before any column is read; in the rest only
   * the stream/seq columns are decoded for every record, timestamps and messages only for
   * records that still match, facets only for records returned.
   */
  async *scan(q: LogScanQuery): AsyncIterable<LogBatch> {
    const desc = (q.order ?? 'desc') === 'desc';
    const filter = this.streamFilter(q.matchers, q.scope);
    const ok = filter.ok;
    const all = filter.list === null;
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
    let limit = q.limit !== undefined && q.limit > 0 ? q.limit : Infinity;
    const sources = this.sources(start, end).filter(
      (src) => afterTs === undefined || (desc ? src.minTs <= afterTs : src.maxTs >= afterTs),
    );
    if (desc) sources.sort((a, b) => (a.maxTs > b.maxTs ? -1 : a.maxTs < b.maxTs ? 1 : 0));
    else sources.sort((a, b) => (a.minTs < b.minTs ? -1 : a.minTs > b.minTs ? 1 : 0));
    const cmp = desc
      ? (a: Row, b: Row) => (a.ts > b.ts ? -1 : a.ts < b.ts ? 1 : b.seq - a.seq)
      : (a: Row, b: Row) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.seq - b.seq);
    // Selective queries read messages of most blocks they visit: inflate the next few on the
    // thread pool while this one is filtered.
    const selective = terms.length > 0 || !all;
    const prefetched = new Map<number, Promise<void>>();
    const prefetch = (si: number) => {
      const src = sources[si];
      if (!selective || !src?.seg || prefetched.has(si)) return;
      const meta = src.seg.blocks[src.bi!]!;
      if (!blockHasAny(meta.streams, filter) || (terms.length > 0 && !bloomMayContain(meta.bloom, terms))) return;
      prefetched.set(si, this.reader(src.seg, src.bi!).prefetch());
    };
    let pool: Row[] = [];
    for (let si = 0; si <= sources.length; si++) {
      if (q.signal?.aborted) return;
      const src = sources[si];
      for (let k = si; k < si + PREFETCH; k++) prefetch(k);
      const ready = prefetched.get(si);
      if (ready) {
        prefetched.delete(si);
        await ready;
      }
      if (src) this.collect(src, { start, end, desc, afterTs, afterSeq, all, ok, terms, filter }, pool);
      // Rows beyond the next source's bound cannot be preceded by anything unread.
      const next = sources[si + 1];
      if (pool.length === 0) continue;
      pool.sort(cmp);
      let cut = pool.length;
      if (next) {
        cut = 0;
        while (cut < pool.length && (desc ? pool[cut]!.ts > next.maxTs : pool[cut]!.ts < next.minTs)) cut++;
      }
      cut = Math.min(cut, limit);
      for (let k = 0; k < cut; k += BATCH) {
        const slice = pool.slice(k, Math.min(cut, k + BATCH));
        const last = slice[slice.length - 1]!;
        yield { records: slice.map((r) => this.record(r)), seqs: slice.map((r) => r.seq), position: `${last.ts}:${last.seq}` };
      }
      limit -= cut;
      if (limit <= 0) return;
      pool = pool.slice(cut);
    }
  }

  /** Adds the rows of one source that pass the query to `pool`. */
  private collect(
    src: Source,
    c: {
      start: bigint;
      end: bigint;
      desc: boolean;
      afterTs: bigint | undefined;
      afterSeq: number;
      all: boolean;
      ok: (id: number) => boolean;
      terms: string[];
      filter: StreamFilter;
    },
    pool: Row[],
  ): void {
    let rdr: RowSource;
    if (src.seg) {
      const meta = src.seg.blocks[src.bi!]!;
      if (!blockHasAny(meta.streams, c.filter)) return;
      if (c.terms.length > 0 && !bloomMayContain(meta.bloom, c.terms)) return;
      rdr = this.reader(src.seg, src.bi!);
    } else rdr = src.head!;
    // Whole-source bounds spare the per-record time checks in the common case.
    const inRange = src.minTs >= c.start && src.maxTs <= c.end;
    const pastAfter = c.afterTs === undefined || (c.desc ? src.maxTs < c.afterTs : src.minTs > c.afterTs);
    const streams = rdr.streams();
    const seqs = rdr.seqs();
    const { start, end, afterTs, afterSeq, desc, ok, all, terms } = c;
    for (let i = src.from; i < src.to; i++) {
      if (!all && !ok(streams[i]!)) continue;
      const ts = rdr.tsAt(i);
      if (!inRange && (ts < start || ts > end)) continue;
      const seq = seqs[i]!;
      if (!pastAfter && afterTs !== undefined) {
        if (desc ? ts > afterTs || (ts === afterTs && seq >= afterSeq) : ts < afterTs || (ts === afterTs && seq <= afterSeq)) continue;
      }
      if (terms.length > 0) {
        const m = rdr.msgAt(i).toLowerCase();
        let every = true;
        for (const t of terms)
          if (!m.includes(t)) {
            every = false;
            break;
          }
        if (!every) continue;
      }
      pool.push({ ts, seq, src: rdr, i });
    }
  }

  /**
   * The columnar scan (see LogStore.scanColumns): label values come from the stream table, so a
   * block wholly inside the range is counted from its per-stream record counts without reading
   * a column; otherwise only the stream (and, when asked, timestamp) columns are decoded.
   */
  async *scanColumns(q: LogColumnScanQuery): AsyncIterable<LogColumnBatch> {
    const filter = this.streamFilter(q.matchers, q.scope);
    const start = q.startNs;
    const end = q.endNs - 1n;
    const nl = q.labels.length;
    const dicts: string[][] = q.labels.map(() => []);
    const dictIndex = q.labels.map(() => new Map<string, number>());
    let snapshot: (readonly string[])[] = dicts.map((d) => d.slice());
    let snapshotSizes = dicts.map(() => 0);
    // streamCodes[l][id]: code of stream id's value of label l; -2 = not computed yet.
    const streamCodes = q.labels.map(() => new Int32Array(this.streams.length).fill(-2));
    const code = (l: number, id: number): number => {
      let c = streamCodes[l]![id]!;
      if (c !== -2) return c;
      const v = this.streams[id]![q.labels[l]!];
      if (v === undefined) c = -1;
      else {
        const m = dictIndex[l]!;
        const known = m.get(v);
        if (known === undefined) m.set(v, (c = dicts[l]!.push(v) - 1));
        else c = known;
      }
      streamCodes[l]![id] = c;
      return c;
    };
    const batch = (n: number, codes: Int32Array[], ms: Float64Array | undefined): LogColumnBatch => {
      if (dicts.some((d, l) => d.length !== snapshotSizes[l])) {
        snapshot = dicts.map((d) => d.slice());
        snapshotSizes = dicts.map((d) => d.length);
      }
      const labels: LabelColumn[] = codes.map((c, l) => ({ dict: snapshot[l]!, codes: c }));
      return ms ? { length: n, labels, timestampsMs: ms } : { length: n, labels };
    };
    const fromRows = (streams: ArrayLike<number>, rows: Int32Array | null, n: number): Int32Array[] => {
      const out: Int32Array[] = [];
      for (let l = 0; l < nl; l++) {
        const c = new Int32Array(n);
        const sc = streamCodes[l]!;
        for (let k = 0; k < n; k++) {
          const id = streams[rows ? rows[k]! : k]!;
          const v = sc[id]!;
          c[k] = v === -2 ? code(l, id) : v;
        }
        out.push(c);
      }
      return out;
    };
    // Weighted: records per stream, folded over every source, then one row per stream.
    const acc = q.weighted && !q.timestampsMs ? new Float64Array(this.streams.length) : null;
    for (const src of this.sources(start, end)) {
      if (q.signal?.aborted) return;
      const inRange = src.minTs >= start && src.maxTs <= end;
      if (src.seg) {
        const meta = src.seg.blocks[src.bi!]!;
        if (!blockHasAny(meta.streams, filter)) continue;
        if (acc && inRange && meta.counts) {
          const ids = meta.streams;
          const cnt = meta.counts;
          if (filter.list === null) for (let k = 0; k < ids.length; k++) acc[ids[k]!]! += cnt[k]!;
          else for (let k = 0; k < ids.length; k++) if (filter.ok(ids[k]!)) acc[ids[k]!]! += cnt[k]!;
          continue;
        }
        if (inRange && !q.timestampsMs && meta.counts) {
          // Counts per stream are all a label-only aggregation needs: codes are runs.
          let n = 0;
          for (let k = 0; k < meta.streams.length; k++) if (filter.ok(meta.streams[k]!)) n += meta.counts[k]!;
          const codes = q.labels.map(() => new Int32Array(n));
          let at = 0;
          for (let k = 0; k < meta.streams.length; k++) {
            const id = meta.streams[k]!;
            if (!filter.ok(id)) continue;
            const cnt = meta.counts[k]!;
            for (let l = 0; l < nl; l++) codes[l]!.fill(code(l, id), at, at + cnt);
            at += cnt;
          }
          yield batch(n, codes, undefined);
          continue;
        }
        // A fresh reader: a full scan must not evict the paging cache or hold columns.
        const rdr = src.seg.reader(src.bi!);
        if (inRange && filter.list === null && nl === 0 && q.timestampsMs && !acc) {
          // `* | timeslice … | count by _timeslice`: timestamps are all that is needed.
          const ms = new Float64Array(rdr.n);
          if (rdr.msInto(ms)) {
            yield batch(rdr.n, [], ms);
            continue;
          }
        }
        // Stream ids only matter for labels wanted, a stream filter or weights.
        const needStreams = nl > 0 || filter.list !== null || acc !== null;
        const streams = needStreams ? rdr.streams() : null;
        const off = inRange && !q.timestampsMs ? null : rdr.offsets();
        let rows: Int32Array | null = null;
        let n = rdr.n;
        if (!inRange || filter.list !== null) {
          rows = new Int32Array(rdr.n);
          n = 0;
          for (let i = 0; i < rdr.n; i++) {
            if (streams && !filter.ok(streams[i]!)) continue;
            if (!inRange) {
              const ts = rdr.tsAt(i);
              if (ts < start || ts > end) continue;
            }
            rows[n++] = i;
          }
        }
        if (acc) {
          for (let k = 0; k < n; k++) acc[streams![rows ? rows[k]! : k]!]!++;
          continue;
        }
        if (n === 0) continue;
        let ms: Float64Array | undefined;
        if (q.timestampsMs) {
          ms = new Float64Array(n);
          if (off) offsetsToMs(off, rows, n, ms);
          else for (let k = 0; k < n; k++) ms[k] = floorMs(rdr.tsAt(rows ? rows[k]! : k));
        }
        yield batch(n, streams ? fromRows(streams, rows, n) : [], ms);
        continue;
      }
      const h = src.head!;
      // Head chunks (or the whole unsorted head) in CHUNK-row batches.
      for (let from = src.from; from < src.to; from += CHUNK) {
        const to = Math.min(src.to, from + CHUNK);
        const rows = new Int32Array(to - from);
        let n = 0;
        for (let i = from; i < to; i++) {
          if (!filter.ok(h.stream[i]!)) continue;
          if (!inRange) {
            const ts = h.ts[i]!;
            if (ts < start || ts > end) continue;
          }
          rows[n++] = i;
        }
        if (acc) {
          for (let k = 0; k < n; k++) acc[h.stream[rows[k]!]!]!++;
          continue;
        }
        if (n === 0) continue;
        let ms: Float64Array | undefined;
        if (q.timestampsMs) {
          ms = new Float64Array(n);
          for (let k = 0; k < n; k++) ms[k] = h.ms[rows[k]!]!;
        }
        yield batch(n, fromRows(h.stream, rows, n), ms);
      }
    }
    if (acc) {
      const ids: number[] = [];
      for (let id = 0; id < acc.length; id++) if (acc[id]! > 0) ids.push(id);
      if (ids.length === 0) return;
      const rows = Int32Array.from(ids.keys());
      const codes = fromRows(ids, rows, ids.length);
      const b = batch(ids.length, codes, undefined);
      yield { ...b, weights: Float64Array.from(ids, (id) => acc[id]!) };
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
    await this.merger.stop();
    await this.maintenanceChain;
    if (opts.flushHead) await this.serial(() => this.flushHead());
    await this.wal.close();
    for (const s of this.segments) s.closeNow();
  }
}
