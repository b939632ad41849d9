/**
 * The embedded MetricStore. Appends go to the metrics WAL and to an in-memory head (one
 * Gorilla chunk being filled per series, closed chunks, and a sorted "side" list for
 * out-of-order samples, histograms and samples with start timestamps). The head is flushed
 * into immutable segment files per 2 h window; compaction merges a day's segments; retention
 * deletes whole segments. One inverted index covers every series of the head and segments.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { compileAlternatives, type LabelMatcher, type MatcherAlternatives } from '../../kernel/matchers.js';
import type { Labels, MetricColumns, MetricMetadata, MetricSeriesInput, Sample } from '../../kernel/models.js';
import { distinctLabelNames, distinctLabelValues, labelsKey } from '../../kernel/models.js';
import type { Logger } from '../../kernel/logger.js';
import type {
  CardinalityQuery,
  CardinalityStats,
  MetricStore,
  SelectHints,
  StoredSeries,
} from '../../kernel/storage.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { ChunkEncoder, ENC_PACKED } from './chunk.js';
import { writeFileAtomic } from './files.js';
import { MetricSegment, type ChunkData, type SegmentInput, type SegSeries } from './metric-segment.js';
import { decimalScale, encodePackedChunk, safeIntTimes } from './packed-chunk.js';
import { Postings } from './postings.js';
import { readLabels, readSample, writeLabels, writeSample } from './sample-codec.js';
import { combineParts, decodeChunksExact, insertSide, readPart, sideHasIn, type Part } from './series-read.js';
import { Wal, type FsyncPolicy } from './wal.js';

export const HEAD_WINDOW_MS = 2 * 3600_000;
export const COMPACT_WINDOW_MS = 24 * 3600_000;
const CHUNK_SAMPLES = 120;
/** Series per read-ahead batch of select (bounds the compressed bytes held at once). */
const PREFETCH_SERIES = 256;
/** Default of `storage.metricsCacheBytes`. */
export const DEFAULT_CACHE_BYTES = 256 << 20;
/**
 * Samples per chunk written by compaction (packed integer/decimal chunks; other chunks keep
 * CHUNK_SAMPLES). An instant query decodes from a chunk's start up to its 5-minute window, so
 * long chunks cost PromQL's instant queries over 10,000 series (`npm run bench -- promql`):
 * 480 made them 1.3-1.8x slower than 120. 240 keeps them within ~10% of 120 while a day-long
 * select of 1,000 series stays faster (43 ms vs 47 ms) and smaller (0.58 vs 0.74 bytes/sample;
 * 480: 36 ms, 0.49) on `npm run bench -- storage --only select`.
 */
const COMPACTED_CHUNK_SAMPLES = 240;

const REC_SAMPLES = 1;
const REC_METADATA = 2;
/**
 * A columnar batch (appendColumns): series defs as REC_SAMPLES, then per series its ref and
 * sample count, then every timestamp and then every value as raw little-endian f64s (two
 * memcpys from the batch's typed arrays instead of per-sample encoding).
 */
const REC_COLUMNS = 3;

export interface MetricStoreOptions {
  dir: string;
  fsync: FsyncPolicy;
  fsyncIntervalMs: number;
  logger: Logger;
  outOfOrderWindowMs: number;
  /** Flush the head into segments once the WAL is this large. */
  maxWalBytes?: number;
  /** Flush the head once it holds this many samples. */
  maxHeadSamples?: number;
  /**
   * Memory for keeping the newest segment files' chunk bytes in RAM (`storage.metricsCacheBytes`;
   * default 256 MiB, 0 = read every chunk from disk). See balanceResidency.
   */
  cacheBytes?: number;
}

interface SegRef {
  seg: MetricSegment;
  s: SegSeries;
}

export class SeriesEntry {
  closed: ChunkData[] = [];
  open: ChunkEncoder | null = null;
  openWindow = 0;
  side: Sample[] | null = null;
  /** Newest timestamp seen for this series (head or segments). */
  lastT = -Infinity;
  headMint = Infinity;
  headMaxt = -Infinity;
  segs: SegRef[] = [];
  /** WAL file whose series record defines this series' reference. */
  walFile = -1;
  /** Position in label order among all series (EmbeddedMetricStore.sortByLabels). */
  rank = 0;

  constructor(
    readonly id: number,
    readonly labels: Labels,
    readonly key: string,
  ) {}

  hasHead(): boolean {
    return this.open !== null || this.closed.length > 0 || this.side !== null;
  }

  overlaps(mint: number, maxt: number): boolean {
    if (this.hasHead() && this.headMint <= maxt && this.headMaxt >= mint) return true;
    for (const r of this.segs) if (r.s.mint <= maxt && r.s.maxt >= mint) return true;
    return false;
  }
}

const windowOf = (t: number) => Math.floor(t / HEAD_WINDOW_MS);

/**
 * The newest maxt of `chunks` when they follow `prevMax` and each other in time order (they can
 * then be decoded back to back), else NaN.
 */
function orderedAfter(chunks: readonly ChunkData[], prevMax: number): number {
  for (const c of chunks) {
    if (!(c.mint > prevMax)) return NaN;
    prevMax = c.maxt;
  }
  return prevMax;
}

const byKey = (a: SeriesEntry, b: SeriesEntry): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

export class EmbeddedMetricStore implements MetricStore {
  private wal!: Wal;
  private readonly byKey = new Map<string, SeriesEntry>();
  private readonly byLabels = new WeakMap<object, SeriesEntry>();
  private byId: (SeriesEntry | undefined)[] = [];
  private postings = new Postings();
  /** Live entries in label order (see sortByLabels) and how many ids that covers. */
  private ranked: SeriesEntry[] = [];
  private rankedUpTo = 0;
  private segments: MetricSegment[] = [];
  private readonly meta = new Map<string, MetricMetadata[]>();
  private headSamples = 0;
  private nextGen = 1;
  private readonly w = new ByteWriter(1 << 20);
  /** Scratch for appendColumns (cleared after each call). */
  private colEntries: SeriesEntry[] = [];
  private readonly segDir: string;
  private flushQueued = false;
  droppedOutOfBounds = 0;
  /** Serializes flushes, compaction and retention. */
  private maintenanceChain: Promise<unknown> = Promise.resolve();
  onFlushNeeded: () => void = () => undefined;

  constructor(private readonly opts: MetricStoreOptions) {
    this.segDir = join(opts.dir, 'segments');
  }

  // ---- open / replay ------------------------------------------------------------------------

  open(): void {
    mkdirSync(this.segDir, { recursive: true });
    const metaPath = join(this.opts.dir, 'metadata.json');
    if (existsSync(metaPath)) {
      const obj = JSON.parse(readFileSync(metaPath, 'utf8')) as Record<string, MetricMetadata[]>;
      for (const [k, v] of Object.entries(obj)) this.meta.set(k, v);
    }
    const files = readdirSync(this.segDir);
    for (const f of files) if (f.endsWith('.tmp')) rmSync(join(this.segDir, f), { force: true });
    const gens = files
      .filter((f) => /^\d{10}\.mseg$/.test(f))
      .map((f) => Number(f.slice(0, 10)))
      .sort((a, b) => a - b);
    for (const gen of gens) {
      const path = join(this.segDir, segName(gen));
      try {
        this.attachSegment(MetricSegment.load(gen, path));
      } catch (e) {
        this.opts.logger.error('metric segment unreadable; skipped', { path, err: e });
      }
      this.nextGen = gen + 1;
    }
    let refs = new Map<number, SeriesEntry>();
    let refsFile = -1;
    const { wal, stats } = Wal.open(
      { dir: join(this.opts.dir, 'wal'), fsync: this.opts.fsync, fsyncIntervalMs: this.opts.fsyncIntervalMs, logger: this.opts.logger, name: 'metrics' },
      (payload, file) => {
        if (file !== refsFile) {
          refs = new Map();
          refsFile = file;
        }
        this.replayRecord(payload, refs);
      },
    );
    this.wal = wal;
    this.opts.logger.debug('metrics wal replayed', { ...stats });
    this.balanceResidency();
  }

  /**
   * Keeps the chunk bytes of the newest segments (by their newest sample) in memory, as many as
   * fit in the cache budget, and lets the others go. Dashboards mostly ask for recent data, and
   * a read from memory neither costs a system call per query nor stalls when the kernel has
   * dropped the file from its page cache after an idle period. Loading runs on the thread pool
   * in the background; until a segment is resident its chunks are read from the file.
   */
  balanceResidency(): void {
    const budget = this.cacheBudget();
    const newestFirst = this.segments.filter((s) => s.fd >= 0 && !s.closing).sort((a, b) => b.maxt - a.maxt || b.gen - a.gen);
    let used = 0;
    const load: MetricSegment[] = [];
    for (const seg of newestFirst) {
      if (used + seg.dataEnd <= budget) {
        used += seg.dataEnd;
        if (!seg.resident) load.push(seg);
      } else seg.dropResident();
    }
    if (load.length === 0) return;
    void (async () => {
      for (const seg of load) {
        try {
          await seg.loadResident();
        } catch (e) {
          this.opts.logger.warn('metric segment not cached; read from disk', { path: seg.path, err: e });
        }
      }
    })();
  }

  /** Bytes of segment chunk data held in memory. */
  residentBytes(): number {
    let n = 0;
    for (const s of this.segments) if (s.resident) n += s.resident.length;
    return n;
  }

  private replayRecord(payload: Buffer, refs: Map<number, SeriesEntry>): void {
    const r = new ByteReader(payload);
    const kind = r.u8();
    if (kind === REC_METADATA) {
      this.applyMetadata(JSON.parse(r.str()) as MetricMetadata[]);
      return;
    }
    const nDefs = r.uvar();
    for (let i = 0; i < nDefs; i++) {
      const ref = r.uvar();
      refs.set(ref, this.entryFor(readLabels(r)));
    }
    if (kind === REC_COLUMNS) {
      this.replayColumns(r, refs);
      return;
    }
    const nSeries = r.uvar();
    for (let i = 0; i < nSeries; i++) {
      const e = refs.get(r.uvar());
      if (!e) throw new Error('wal sample references an undefined series');
      const n = r.uvar();
      for (let j = 0; j < n; j++) {
        const flags = r.buf[r.pos]!;
        if (flags === 0) {
          r.pos++;
          const t = r.f64();
          this.addSample(e, t, r.f64(), undefined);
        } else {
          const s = readSample(r);
          this.addSample(e, s.t, s.v, s);
        }
      }
    }
  }

  private replayColumns(r: ByteReader, refs: Map<number, SeriesEntry>): void {
    const nSeries = r.uvar();
    const entries: SeriesEntry[] = new Array(nSeries);
    const counts: number[] = new Array(nSeries);
    let total = 0;
    for (let k = 0; k < nSeries; k++) {
      const e = refs.get(r.uvar());
      if (!e) throw new Error('wal sample references an undefined series');
      entries[k] = e;
      counts[k] = r.uvar();
      total += counts[k]!;
    }
    const buf = r.buf;
    if (r.pos + total * 16 > buf.length) throw new Error('wal columns record is truncated');
    let tp = r.pos;
    let vp = r.pos + total * 8;
    for (let k = 0; k < nSeries; k++) {
      const e = entries[k]!;
      for (let n = counts[k]!; n > 0; n--) {
        this.addSample(e, buf.readDoubleLE(tp), buf.readDoubleLE(vp), undefined);
        tp += 8;
        vp += 8;
      }
    }
    r.pos = vp;
  }

  private attachSegment(seg: MetricSegment): void {
    this.segments.push(seg);
    for (const s of seg.series) {
      const e = this.entryFor(s.labels);
      e.segs.push({ seg, s });
      if (s.maxt > e.lastT) e.lastT = s.maxt;
    }
  }

  // ---- series registry ------------------------------------------------------------------------

  /**
   * The entry for a label set, created when new. `remember` keeps the label object → entry
   * mapping in a WeakMap (row appends hand the same objects again); appendColumns passes false,
   * since its SeriesHandles remember the id themselves and a WeakMap entry per series only
   * costs insertion and GC time.
   */
  private entryFor(labels: Labels, remember = true): SeriesEntry {
    if (remember) {
      const cached = this.byLabels.get(labels);
      if (cached && this.byId[cached.id] === cached) return cached;
    }
    // labelsKey, with one sort at most: senders usually list labels sorted already.
    const names = Object.keys(labels);
    for (let i = 1; i < names.length; i++) {
      if (names[i - 1]! > names[i]!) {
        names.sort();
        break;
      }
    }
    let key = '';
    for (const n of names) key += n + '\xff' + labels[n] + '\xff';
    let e = this.byKey.get(key);
    if (!e) {
      const copy: Record<string, string> = {};
      for (const n of names) copy[n] = labels[n]!;
      e = new SeriesEntry(this.byId.length, Object.freeze(copy), key);
      this.byId.push(e);
      this.byKey.set(key, e);
      this.postings.add(e.id, e.labels);
    }
    if (remember) this.byLabels.set(labels, e);
    return e;
  }

  // ---- write path -----------------------------------------------------------------------------

  private addSample(e: SeriesEntry, t: number, v: number, full: Sample | undefined): boolean {
    if (t <= e.lastT && t < e.lastT - this.opts.outOfOrderWindowMs) {
      this.droppedOutOfBounds++;
      return false;
    }
    if (full === undefined && t > e.lastT) {
      const win = windowOf(t);
      let c = e.open;
      if (c !== null && (c.count >= CHUNK_SAMPLES || e.openWindow !== win)) {
        e.closed.push({ mint: c.mint, maxt: c.maxt, count: c.count, data: c.bytes() });
        c = null;
      }
      if (c === null) {
        c = e.open = new ChunkEncoder();
        e.openWindow = win;
      }
      c.append(t, v);
    } else {
      // Out of order, duplicate, histogram or start timestamp: the side list (wins ties).
      const s: Sample = full ?? { t, v };
      if (e.side === null) e.side = [];
      insertSide(e.side, s);
    }
    if (t > e.lastT) e.lastT = t;
    if (t < e.headMint) e.headMint = t;
    if (t > e.headMaxt) e.headMaxt = t;
    this.headSamples++;
    return true;
  }

  /**
   * Starts a WAL record of `type` in `this.w`; its first field, the number of series defined in
   * it, is reserved and returned as an offset for patchVarint5 once the definitions are written.
   */
  private beginRecord(type: number): number {
    const w = this.w;
    w.reset();
    w.u8(type);
    const at = w.pos;
    w.ensure(5);
    w.pos += 5;
    return at;
  }

  /** Writes e's id and labels into the record unless WAL file `file` already defines it; 1 if written. */
  private defineInWal(e: SeriesEntry, file: number): number {
    if (e.walFile === file) return 0;
    e.walFile = file;
    this.w.uvar(e.id);
    writeLabels(this.w, e.labels);
    return 1;
  }

  async append(input: readonly MetricSeriesInput[]): Promise<void> {
    const entries: SeriesEntry[] = new Array(input.length);
    const w = this.w;
    const file = this.wal.currentFile;
    const defsAt = this.beginRecord(REC_SAMPLES);
    let nDefs = 0;
    for (let i = 0; i < input.length; i++) {
      const e = this.entryFor(input[i]!.labels);
      entries[i] = e;
      nDefs += this.defineInWal(e, file);
    }
    patchVarint5(w.buf, defsAt, nDefs);
    w.uvar(input.length);
    for (let i = 0; i < input.length; i++) {
      const e = entries[i]!;
      const samples = input[i]!.samples;
      w.uvar(e.id);
      w.uvar(samples.length);
      w.ensure(samples.length * 17);
      for (const s of samples) {
        if (s.h === undefined && s.st === undefined) {
          const buf = w.buf;
          let p = w.pos;
          buf[p++] = 0;
          buf.writeDoubleLE(s.t, p);
          buf.writeDoubleLE(s.v, p + 8);
          w.pos = p + 16;
          this.addSample(e, s.t, s.v, undefined);
        } else {
          writeSample(w, s);
          this.addSample(e, s.t, s.v, s);
        }
      }
    }
    const done = this.wal.append(w.take());
    this.maybeFlush();
    await done;
  }

  /**
   * The columnar fast path (remote write). A batch's SeriesHandles remember this store's series
   * id, so a known series is one array index: ids are never reused (a dropped series leaves
   * `byId[id]` undefined and a returning label set gets a new id), which is what makes a
   * remembered id safe to trust without comparing labels.
   */
  async appendColumns(c: MetricColumns): Promise<void> {
    const n = c.series.length;
    if (this.colEntries.length < n) this.colEntries = new Array(n);
    const entries = this.colEntries;
    const w = this.w;
    const file = this.wal.currentFile;
    const defsAt = this.beginRecord(REC_COLUMNS);
    let nDefs = 0;
    for (let k = 0; k < n; k++) {
      const h = c.series[k]!;
      let e = h.storeOwner === this ? this.byId[h.storeRef] : undefined;
      if (e === undefined) {
        e = this.entryFor(h.labels, false);
        h.storeOwner = this;
        h.storeRef = e.id;
      }
      entries[k] = e;
      nDefs += this.defineInWal(e, file);
    }
    patchVarint5(w.buf, defsAt, nDefs);
    const off = c.offsets;
    const total = off[n]!;
    w.uvar(n);
    // Per series: id and sample count as varints, written inline (both below 2^32).
    w.ensure(n * 10);
    const wb = w.buf;
    let wp = w.pos;
    for (let k = 0; k < n; k++) {
      let id = entries[k]!.id;
      while (id >= 0x80) {
        wb[wp++] = (id & 0x7f) | 0x80;
        id >>>= 7;
      }
      wb[wp++] = id;
      let cnt = off[k + 1]! - off[k]!;
      while (cnt >= 0x80) {
        wb[wp++] = (cnt & 0x7f) | 0x80;
        cnt >>>= 7;
      }
      wb[wp++] = cnt;
    }
    w.pos = wp;
    // The record is the header written so far plus the two columns, copied once into it.
    const ts = c.timestamps;
    const vs = c.values;
    const rec = Buffer.allocUnsafe(w.pos + total * 16);
    w.buf.copy(rec, 0, 0, w.pos);
    rec.set(new Uint8Array(ts.buffer, ts.byteOffset, total * 8), w.pos);
    rec.set(new Uint8Array(vs.buffer, vs.byteOffset, total * 8), w.pos + total * 8);
    let added = 0;
    for (let k = 0; k < n; k++) {
      const e = entries[k]!;
      for (let i = off[k]!, end = off[k + 1]!; i < end; i++) {
        const t = ts[i]!;
        if (t <= e.lastT) {
          this.addSample(e, t, vs[i]!, undefined); // out of order or duplicate: the general path
          continue;
        }
        // In order (the usual case), inlined from addSample: no call boundary for the doubles
        // (which would box them, one heap number per sample).
        const win = Math.floor(t / HEAD_WINDOW_MS);
        let c = e.open;
        if (c !== null && (c.count >= CHUNK_SAMPLES || e.openWindow !== win)) {
          e.closed.push({ mint: c.mint, maxt: c.maxt, count: c.count, data: c.bytes() });
          c = null;
        }
        if (c === null) {
          c = e.open = new ChunkEncoder();
          e.openWindow = win;
        }
        c.append(t, vs[i]!);
        e.lastT = t;
        if (t < e.headMint) e.headMint = t;
        e.headMaxt = t;
        added++;
      }
      entries[k] = undefined!;
    }
    this.headSamples += added;
    const done = this.wal.append(rec);
    this.maybeFlush();
    await done;
  }

  async appendMetadata(md: readonly MetricMetadata[]): Promise<void> {
    if (md.length === 0) return;
    const w = new ByteWriter(256);
    w.u8(REC_METADATA);
    w.str(JSON.stringify(md));
    this.applyMetadata(md);
    await this.wal.append(w.take());
  }

  private applyMetadata(md: readonly MetricMetadata[]): void {
    for (const m of md) {
      const list = this.meta.get(m.metric) ?? [];
      const at = list.findIndex((x) => x.type === m.type && x.help === m.help && x.unit === m.unit);
      if (at >= 0) list.splice(at, 1);
      list.unshift({ metric: m.metric, type: m.type, help: m.help, unit: m.unit });
      this.meta.set(m.metric, list.slice(0, 10));
    }
  }

  private maybeFlush(): void {
    if (this.flushQueued) return;
    const maxWal = this.opts.maxWalBytes ?? 256 << 20;
    const maxHead = this.opts.maxHeadSamples ?? 8_000_000;
    if (this.wal.bytes < maxWal && this.headSamples < maxHead) return;
    this.flushQueued = true;
    setImmediate(() => {
      void this.serial(() => this.flushHead()).finally(() => (this.flushQueued = false));
    });
  }

  serial<T>(fn: () => Promise<T> | T): Promise<T> {
    const p = this.maintenanceChain.then(fn, fn);
    this.maintenanceChain = p.catch((e) => this.opts.logger.error('metrics maintenance failed', { err: e }));
    return p;
  }

  // ---- head flush -------------------------------------------------------------------------------

  /**
   * Moves every head sample into segment files (one per 2 h window), then deletes the WAL files
   * they came from. The switch is synchronous, so the WAL cut and the head cut agree.
   */
  async flushHead(): Promise<number> {
    if (this.headSamples === 0) return 0;
    const walCut = this.wal.rotate();
    const byWindow = new Map<number, SegmentInput[]>();
    const entriesByWindow = new Map<number, SeriesEntry[]>();
    for (const e of this.byId) {
      if (!e || !e.hasHead()) continue;
      const chunks = e.closed;
      if (e.open) chunks.push({ mint: e.open.mint, maxt: e.open.maxt, count: e.open.count, data: e.open.bytes() });
      const perWin = new Map<number, SegmentInput>();
      const get = (w: number) => {
        let x = perWin.get(w);
        if (!x) perWin.set(w, (x = { labels: e.labels, chunks: [], side: null }));
        return x;
      };
      for (const c of chunks) get(windowOf(c.mint)).chunks.push(c);
      if (e.side) for (const s of e.side) ((get(windowOf(s.t)).side ??= []) as Sample[]).push(s);
      for (const [w, x] of perWin) {
        let list = byWindow.get(w);
        if (!list) {
          byWindow.set(w, (list = []));
          entriesByWindow.set(w, []);
        }
        list.push(x);
        entriesByWindow.get(w)!.push(e);
      }
      e.closed = [];
      e.open = null;
      e.side = null;
      e.headMint = Infinity;
      e.headMaxt = -Infinity;
    }
    const flushed = this.headSamples;
    this.headSamples = 0;
    // Memory-resident segments are visible right away; files follow.
    const made: MetricSegment[] = [];
    for (const w of [...byWindow.keys()].sort((a, b) => a - b)) {
      const gen = this.nextGen++;
      const seg = MetricSegment.fromInput(gen, join(this.segDir, segName(gen)), byWindow.get(w)!);
      const es = entriesByWindow.get(w)!;
      seg.series.forEach((s, i) => es[i]!.segs.push({ seg, s }));
      this.segments.push(seg);
      made.push(seg);
    }
    for (const seg of made) {
      const parts = seg.encode();
      writeFileAtomic(seg.path, parts);
      seg.attachFile(seg.path, this.cacheBudget() > 0 ? parts : undefined);
      await new Promise((r) => setImmediate(r));
    }
    this.balanceResidency();
    this.writeMetadataSnapshot();
    await this.wal.removeBefore(walCut);
    return flushed;
  }

  private writeMetadataSnapshot(): void {
    writeFileAtomic(join(this.opts.dir, 'metadata.json'), [Buffer.from(JSON.stringify(Object.fromEntries(this.meta)))]);
  }

  // ---- compaction and retention -------------------------------------------------------------------

  /** Merges all segments of each UTC day that has more than one into one (keeping the newest gen). */
  async compact(): Promise<number> {
    const byDay = new Map<number, MetricSegment[]>();
    for (const seg of this.segments) {
      if (seg.fd < 0) continue;
      const d = Math.floor(seg.mint / COMPACT_WINDOW_MS);
      if (Math.floor(seg.maxt / COMPACT_WINDOW_MS) !== d) continue;
      let l = byDay.get(d);
      if (!l) byDay.set(d, (l = []));
      l.push(seg);
    }
    let merged = 0;
    for (const group of byDay.values()) {
      if (group.length < 2) continue;
      await this.mergeSegments(group);
      merged++;
    }
    return merged;
  }

  private async mergeSegments(group: MetricSegment[]): Promise<void> {
    group.sort((a, b) => a.gen - b.gen);
    const inGroup = new Set(group);
    const gen = group[group.length - 1]!.gen;
    const entries = new Set<SeriesEntry>();
    for (const seg of group) for (const s of seg.series) entries.add(this.byKey.get(labelsKey(s.labels))!);
    const inputs: SegmentInput[] = [];
    const owners: SeriesEntry[] = [];
    let n = 0;
    for (const e of entries) {
      const refs = e.segs.filter((r) => inGroup.has(r.seg)).sort((a, b) => a.seg.gen - b.seg.gen);
      const part = combineParts(refs.map((r) => readPart(r.seg.chunksOf(r.s, -Infinity, Infinity), r.s.side, -Infinity, Infinity)));
      inputs.push(encodePart(e.labels, part));
      owners.push(e);
      if (++n % 2000 === 0) await new Promise((r) => setImmediate(r));
    }
    const path = join(this.segDir, segName(gen));
    const seg = MetricSegment.fromInput(gen, path, inputs);
    const parts = seg.encode();
    writeFileAtomic(path, parts);
    seg.attachFile(path, this.cacheBudget() > 0 ? parts : undefined);
    // Swap in: drop refs to the old segments, add the merged one (same gen as the newest input).
    seg.series.forEach((s, i) => {
      const e = owners[i]!;
      e.segs = e.segs.filter((r) => !inGroup.has(r.seg));
      e.segs.push({ seg, s });
      e.segs.sort((a, b) => a.seg.gen - b.seg.gen);
    });
    this.segments = this.segments.filter((s) => !inGroup.has(s));
    this.segments.push(seg);
    this.segments.sort((a, b) => a.gen - b.gen);
    for (const old of group) {
      old.release();
      if (old.gen !== gen) rmSync(old.path, { force: true });
    }
    this.balanceResidency();
  }

  private cacheBudget(): number {
    return this.opts.cacheBytes ?? DEFAULT_CACHE_BYTES;
  }

  /** Deletes segments whose newest sample is older than `now - retentionMs`. */
  async applyRetention(now: number, retentionMs: number): Promise<number> {
    if (retentionMs <= 0) return 0;
    const cutoff = now - retentionMs;
    const expired = this.segments.filter((s) => s.maxt < cutoff);
    if (expired.length === 0) return 0;
    const gone = new Set(expired);
    this.segments = this.segments.filter((s) => !gone.has(s));
    for (const seg of expired) {
      rmSync(seg.path, { force: true });
      seg.release();
    }
    this.balanceResidency();
    let removed = false;
    for (const e of this.byId) {
      if (!e) continue;
      if (e.segs.some((r) => gone.has(r.seg))) e.segs = e.segs.filter((r) => !gone.has(r.seg));
      if (e.segs.length === 0 && !e.hasHead()) {
        this.byId[e.id] = undefined;
        this.byKey.delete(e.key);
        removed = true;
      }
    }
    if (removed) {
      this.postings = new Postings();
      for (const e of this.byId) if (e) this.postings.add(e.id, e.labels);
    }
    return expired.length;
  }

  // ---- read path ----------------------------------------------------------------------------------

  private matching(
    matcherSets: readonly (readonly LabelMatcher[])[],
    mint: number,
    maxt: number,
    scope: MatcherAlternatives | undefined,
  ): SeriesEntry[] {
    const inScope = compileAlternatives(scope);
    const labelsOf = (id: number) => this.byId[id]!.labels;
    let ids: number[];
    if (matcherSets.length <= 1) ids = this.postings.select(matcherSets[0] ?? [], labelsOf);
    else {
      const set = new Set<number>();
      for (const ms of matcherSets) for (const id of this.postings.select(ms, labelsOf)) set.add(id);
      ids = [...set].sort((a, b) => a - b);
    }
    const out: SeriesEntry[] = [];
    for (const id of ids) {
      const e = this.byId[id];
      if (e && e.overlaps(mint, maxt) && inScope(e.labels)) out.push(e);
    }
    return out;
  }

  /**
   * Sorts entries by label set. Every entry gets a rank in label order, kept up to date by
   * merging new series in, so a large selection sorts by integers instead of comparing keys
   * (long strings with long common prefixes).
   */
  private sortByLabels(list: SeriesEntry[]): void {
    if (list.length < 2) return;
    const added = this.byId.length - this.rankedUpTo;
    if (added > 0) {
      // Few matches while ranks are stale: cheaper to compare keys than to refresh ranks.
      if (list.length * 8 < this.byId.length) {
        list.sort(byKey);
        return;
      }
      this.refreshRanks();
    }
    list.sort((a, b) => a.rank - b.rank);
  }

  private refreshRanks(): void {
    const fresh: SeriesEntry[] = [];
    for (let i = this.rankedUpTo; i < this.byId.length; i++) {
      const e = this.byId[i];
      if (e) fresh.push(e);
    }
    fresh.sort(byKey);
    const old = this.ranked.filter((e) => this.byId[e.id] === e);
    const merged: SeriesEntry[] = new Array(old.length + fresh.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < old.length || j < fresh.length) {
      const e = j >= fresh.length || (i < old.length && old[i]!.key < fresh[j]!.key) ? old[i++]! : fresh[j++]!;
      e.rank = k;
      merged[k++] = e;
    }
    this.ranked = merged;
    this.rankedUpTo = this.byId.length;
  }

  /**
   * Reads the segment chunks of a batch of series ahead, one merged read per run of nearby
   * series per segment (see MetricSegment.chunksOfMany).
   */
  private prefetch(batch: readonly SeriesEntry[], mint: number, maxt: number): Map<SegSeries, ChunkData[]> {
    const bySeg = new Map<MetricSegment, SegSeries[]>();
    for (const e of batch) {
      for (const r of e.segs) {
        // In memory (not yet written, or cached): readSeries takes the chunks in place.
        if (r.s.maxt < mint || r.s.mint > maxt || r.seg.fd < 0 || r.seg.resident) continue;
        let l = bySeg.get(r.seg);
        if (!l) bySeg.set(r.seg, (l = []));
        l.push(r.s);
      }
    }
    const out = new Map<SegSeries, ChunkData[]>();
    for (const [seg, items] of bySeg) {
      if (items.length < 2) continue;
      const chunks = seg.chunksOfMany(items, mint, maxt);
      for (let i = 0; i < items.length; i++) out.set(items[i]!, chunks[i]!);
    }
    return out;
  }

  private readSeries(e: SeriesEntry, mint: number, maxt: number, pre?: Map<SegSeries, ChunkData[]>): Part {
    const inHead = e.hasHead() && e.headMint <= maxt && e.headMaxt >= mint;
    // Most common: one segment holds the window (a compacted day, or one flush) and no head
    // data or side samples fall in it; no source lists to build.
    if (!inHead) {
      let only: SegRef | undefined;
      let n = 0;
      for (const r of e.segs) {
        if (r.s.maxt < mint || r.s.mint > maxt) continue;
        only = r;
        n++;
      }
      if (n === 0) return decodeChunksExact([], mint, maxt);
      if (n === 1 && !sideHasIn(only!.s.side, mint, maxt)) {
        const chunks = pre?.get(only!.s) ?? only!.seg.chunksOf(only!.s, mint, maxt);
        if (!Number.isNaN(orderedAfter(chunks, -Infinity))) return decodeChunksExact(chunks, mint, maxt);
      }
    }
    const sources: ChunkData[][] = [];
    const sides: (Sample[] | null)[] = [];
    for (const r of e.segs) {
      if (r.s.maxt < mint || r.s.mint > maxt) continue;
      sources.push(pre?.get(r.s) ?? r.seg.chunksOf(r.s, mint, maxt));
      sides.push(r.s.side);
    }
    if (inHead) {
      const chunks = e.closed.filter((c) => c.maxt >= mint && c.mint <= maxt);
      if (e.open && e.open.maxt >= mint && e.open.mint <= maxt) {
        chunks.push({ mint: e.open.mint, maxt: e.open.maxt, count: e.open.count, data: e.open.buf });
      }
      sources.push(chunks);
      sides.push(e.side);
    }
    // Only float chunks, in time order across sources: decode them in one go.
    let prevMax = -Infinity;
    for (let i = 0; i < sources.length && !Number.isNaN(prevMax); i++) {
      prevMax = sideHasIn(sides[i]!, mint, maxt) ? NaN : orderedAfter(sources[i]!, prevMax);
    }
    if (!Number.isNaN(prevMax)) return decodeChunksExact(sources.length === 1 ? sources[0]! : sources.flat(), mint, maxt);
    return combineParts(sources.map((chunks, i) => readPart(chunks, sides[i]!, mint, maxt)));
  }

  async *select(matchers: readonly LabelMatcher[], mint: number, maxt: number, hints?: SelectHints): AsyncIterable<StoredSeries> {
    yield* this.selectSync(matchers, mint, maxt, hints);
  }

  *selectSync(matchers: readonly LabelMatcher[], mint: number, maxt: number, hints?: SelectHints): Iterable<StoredSeries> {
    const list = this.matching([matchers], mint, maxt, hints?.scope);
    this.sortByLabels(list);
    let pre: Map<SegSeries, ChunkData[]> | undefined;
    for (let k = 0; k < list.length; k++) {
      const e = list[k]!;
      if (hints?.signal?.aborted) return;
      if (k % PREFETCH_SERIES === 0 && list.length > 1) pre = this.prefetch(list.slice(k, k + PREFETCH_SERIES), mint, maxt);
      const p = this.readSeries(e, mint, maxt, pre);
      if (p.n === 0) continue;
      const out: StoredSeries = {
        labels: e.labels,
        timestamps: p.t.length === p.n ? p.t : p.t.subarray(0, p.n),
        values: p.v.length === p.n ? p.v : p.v.subarray(0, p.n),
      };
      if (p.h) out.histograms = p.h.length === p.n ? p.h : p.h.slice(0, p.n);
      if (p.st) out.startTimestamps = p.st.subarray(0, p.n);
      yield out;
    }
  }

  async series(sets: readonly (readonly LabelMatcher[])[], mint: number, maxt: number, scope?: MatcherAlternatives): Promise<Labels[]> {
    return this.matching(sets, mint, maxt, scope).map((e) => e.labels);
  }

  async labelNames(sets: readonly (readonly LabelMatcher[])[], mint: number, maxt: number, scope?: MatcherAlternatives): Promise<string[]> {
    return distinctLabelNames(this.matching(sets, mint, maxt, scope));
  }

  async labelValues(
    name: string,
    sets: readonly (readonly LabelMatcher[])[],
    mint: number,
    maxt: number,
    scope?: MatcherAlternatives,
  ): Promise<string[]> {
    return distinctLabelValues(this.matching(sets, mint, maxt, scope), name);
  }

  async metadata(metric?: string, limit?: number): Promise<Map<string, MetricMetadata[]>> {
    const out = new Map<string, MetricMetadata[]>();
    for (const [k, v] of this.meta) {
      if (metric !== undefined && k !== metric) continue;
      if (limit !== undefined && out.size >= limit) break;
      out.set(k, v.map((m) => ({ ...m })));
    }
    return out;
  }

  async cardinality(q: CardinalityQuery): Promise<CardinalityStats> {
    const list = this.matching(q.matcherSets, q.mint, q.maxt, q.scope);
    const seriesByMetric = new Map<string, number>();
    const seriesByLabel = new Map<string, number>();
    const values = new Map<string, Set<string>>();
    const want = q.labels && q.labels.length ? new Set(q.labels) : undefined;
    for (const e of list) {
      const name = e.labels.__name__ ?? '';
      seriesByMetric.set(name, (seriesByMetric.get(name) ?? 0) + 1);
      for (const k in e.labels) {
        if (want && !want.has(k)) continue;
        seriesByLabel.set(k, (seriesByLabel.get(k) ?? 0) + 1);
        let set = values.get(k);
        if (!set) values.set(k, (set = new Set()));
        set.add(e.labels[k]!);
      }
    }
    return {
      totalSeries: list.length,
      seriesByMetric,
      seriesByLabel,
      distinctValuesByLabel: new Map([...values].map(([k, v]) => [k, v.size])),
    };
  }

  // ---- lifecycle ----------------------------------------------------------------------------------

  stats(): { series: number; headSamples: number; segments: number; segmentBytes: number; walBytes: number } {
    let live = 0;
    for (const e of this.byId) if (e) live++;
    return {
      series: live,
      headSamples: this.headSamples,
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

function segName(gen: number): string {
  return String(gen).padStart(10, '0') + '.mseg';
}

function patchVarint5(buf: Buffer, at: number, v: number): void {
  // A fixed-width 5-byte varint, so the count can be written before it is known.
  for (let i = 0; i < 4; i++) {
    buf[at + i] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[at + 4] = v & 0x7f;
}

/** Re-encodes a combined series: floats into chunks, histograms and start timestamps aside. */
export function encodePart(labels: Labels, p: Part): SegmentInput {
  const chunks: ChunkData[] = [];
  let side: Sample[] | null = null;
  const ft = new Float64Array(p.n);
  const fv = new Float64Array(p.n);
  let m = 0;
  for (let i = 0; i < p.n; i++) {
    const h = p.h?.[i];
    const st = p.st ? p.st[i]! : NaN;
    if (h !== undefined || st === st) {
      const s: Sample = { t: p.t[i]!, v: p.v[i]! };
      if (h) s.h = h;
      if (st === st) s.st = st;
      (side ??= []).push(s);
      continue;
    }
    ft[m] = p.t[i]!;
    fv[m] = p.v[i]!;
    m++;
  }
  for (let from = 0; from < m; from += COMPACTED_CHUNK_SAMPLES) {
    const to = Math.min(m, from + COMPACTED_CHUNK_SAMPLES);
    const scale = safeIntTimes(ft, from, to) ? decimalScale(fv, from, to) : -1;
    if (scale >= 0) {
      chunks.push({ mint: ft[from]!, maxt: ft[to - 1]!, count: to - from, data: encodePackedChunk(ft, fv, from, to, scale), enc: ENC_PACKED });
      continue;
    }
    // Floats: Gorilla chunks as the head's (slower to decode, so shorter).
    for (let a = from; a < to; a += CHUNK_SAMPLES) {
      const enc = new ChunkEncoder(256);
      for (let i = a; i < Math.min(to, a + CHUNK_SAMPLES); i++) enc.append(ft[i]!, fv[i]!);
      chunks.push({ mint: enc.mint, maxt: enc.maxt, count: enc.count, data: enc.bytes() });
    }
  }
  return { labels, chunks, side };
}
