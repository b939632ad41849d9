/**
 * Background merging of small log, span and event segments: the policy that picks what to merge,
 * and the bookkeeping that makes a merge crash-safe.
 *
 * Policy. Segments are grouped by the time window their newest record falls in (windows aligned
 * to the epoch, `windowMs` long, at most a quarter of the signal's retention), so a merged
 * segment expires at most one window after its oldest input would have and retention still drops
 * whole segments. Within a window a run of segments (in generation order) is merged when it has
 * at least two members, its total size stays under `maxBytes`, it has at most `maxInputs`
 * members, and no member is more than half of the total: a large merged segment is only
 * rewritten once the small ones next to it add up to as much, so every byte is rewritten about
 * log2(final / first size) times, not once per new flush.
 *
 * Crash safety. A merged segment is written to `<name>.tmp`, fsynced and renamed over its newest
 * input (it takes that input's generation); its index lists the generations it covers (its
 * inputs and whatever they covered). The other inputs are deleted after the rename. On open, a
 * segment whose generation another segment covers is deleted unread, so after a crash at any
 * step either the inputs or the merged segment are visible, never both, and nothing is lost.
 */

/** The merge policy of one signal. */
export interface MergePolicy {
  /** Windows (ms) the newest record of every input must share; 0 disables merging. */
  windowMs: number;
  /** Upper bound on the merged segment's size (the inputs' sizes added up). */
  maxBytes: number;
  /** Inputs per merge (each input keeps one decoded block in memory during the merge). */
  maxInputs: number;
}

export interface MergeSettings {
  /** Window length (ms) before the retention cap; 0 disables merging. Default 1 day. */
  windowMs?: number;
  maxBytes?: number;
  maxInputs?: number;
}

export const DEFAULT_MERGE_WINDOW_MS = 86_400_000;
export const DEFAULT_MERGE_MAX_BYTES = 256 << 20;
export const DEFAULT_MERGE_MAX_INPUTS = 64;

/** The policy for a signal with `retentionMs` (0 = forever): the window is capped at retention / 4. */
export function mergePolicy(retentionMs: number, s: MergeSettings = {}): MergePolicy {
  let windowMs = s.windowMs ?? DEFAULT_MERGE_WINDOW_MS;
  if (windowMs > 0 && retentionMs > 0) windowMs = Math.max(1, Math.min(windowMs, Math.floor(retentionMs / 4)));
  return { windowMs, maxBytes: s.maxBytes ?? DEFAULT_MERGE_MAX_BYTES, maxInputs: Math.max(2, s.maxInputs ?? DEFAULT_MERGE_MAX_INPUTS) };
}

/** What the planner needs of a segment. */
export interface MergeCandidate {
  gen: number;
  bytes: number;
  /** Newest record (ns): decides the window. */
  newestNs: bigint;
}

/**
 * The next group to merge (inputs in generation order), or null. Among the qualifying runs the
 * longest wins (ties: the newest), so many tiny segments collapse in few passes.
 */
export function planMerge<S extends MergeCandidate>(segments: readonly S[], p: MergePolicy): S[] | null {
  if (p.windowMs <= 0) return null;
  const w = BigInt(p.windowMs) * 1_000_000n;
  const byWindow = new Map<bigint, S[]>();
  for (const s of segments) {
    if (s.bytes >= p.maxBytes) continue;
    const k = floorDiv(s.newestNs, w);
    let l = byWindow.get(k);
    if (!l) byWindow.set(k, (l = []));
    l.push(s);
  }
  let best: S[] | null = null;
  for (const list of byWindow.values()) {
    if (list.length < 2) continue;
    list.sort((a, b) => a.gen - b.gen);
    for (let i = 0; i < list.length - 1; i++) {
      let sum = 0;
      let max = 0;
      for (let j = i; j < list.length && j - i < p.maxInputs; j++) {
        const b = list[j]!.bytes;
        if (sum + b > p.maxBytes) break;
        sum += b;
        if (b > max) max = b;
        const n = j - i + 1;
        if (n < 2 || max * 2 > sum) continue;
        if (!best || n > best.length || (n === best.length && list[j]!.gen > best[best.length - 1]!.gen)) best = list.slice(i, j + 1);
      }
    }
  }
  return best;
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a < 0n && q * b !== a ? q - 1n : q;
}

/** Generations as sorted, coalesced inclusive ranges `[from, to]` (how indexes store them). */
export type GenRanges = Array<[number, number]>;

/** The ranges a merged segment covers: its inputs' generations and everything they covered. */
export function coverOf(inputs: readonly { gen: number; covers: GenRanges }[]): GenRanges {
  const all: Array<[number, number]> = [];
  for (const s of inputs) {
    all.push([s.gen, s.gen]);
    for (const r of s.covers) all.push([r[0], r[1]]);
  }
  all.sort((a, b) => a[0] - b[0]);
  const out: GenRanges = [];
  for (const r of all) {
    const last = out[out.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else out.push([r[0], r[1]]);
  }
  return out;
}

export function isCovered(ranges: GenRanges, gen: number): boolean {
  for (const r of ranges) if (gen >= r[0] && gen <= r[1]) return true;
  return false;
}

/** Reads a `covers` field from a stored index (absent in segments never merged). */
export function readCovers(v: unknown): GenRanges {
  if (!Array.isArray(v)) return [];
  const out: GenRanges = [];
  for (const r of v) if (Array.isArray(r) && typeof r[0] === 'number' && typeof r[1] === 'number') out.push([r[0], r[1]]);
  return out;
}

/**
 * The generations among `gens` that a segment of `opened` covers (a merge whose inputs were not
 * all deleted before a crash). A segment never covers itself.
 */
export function supersededGens(gens: readonly number[], opened: readonly { gen: number; covers: GenRanges }[]): Set<number> {
  const out = new Set<number>();
  for (const s of opened) {
    if (s.covers.length === 0) continue;
    for (const g of gens) if (g !== s.gen && isCovered(s.covers, g)) out.add(g);
  }
  return out;
}

/** Yields to the event loop: merges run between requests, never for long in one go. */
export const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * Runs merges for one store one at a time and lets `close` stop one in progress (the partial
 * output is removed; inputs are untouched until the swap).
 */
export class MergeRunner {
  private running: Promise<number> | null = null;
  stopped = false;
  /** Segments a merge failed on (e.g. an unreadable block): left alone until restart, not retried every minute. */
  private readonly failed = new WeakSet<object>();

  /** Whether `seg` may be merged. */
  eligible(seg: object): boolean {
    return !this.failed.has(seg);
  }

  /** Excludes the inputs of a failed merge from later merges. */
  fail(inputs: readonly object[]): void {
    for (const s of inputs) this.failed.add(s);
  }

  /** Runs `fn` unless a merge is already in progress (then waits for that one). */
  run(fn: () => Promise<number>): Promise<number> {
    if (this.stopped) return Promise.resolve(0);
    if (this.running) return this.running;
    const p = fn().finally(() => {
      if (this.running === p) this.running = null;
    });
    this.running = p;
    return p;
  }

  /** Stops merging: an ongoing merge abandons its output at its next yield. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running?.catch(() => undefined);
  }
}

/** Thrown inside a merge when the store is closing or an input went away (retention). */
export class MergeAbandoned extends Error {
  constructor(why: string) {
    super(`merge abandoned: ${why}`);
  }
}
