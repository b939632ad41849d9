/**
 * Helpers for the hydration tests: archive fixtures written in the archive layout, HTTP calls,
 * waiting for job states, and an independent (brute-force) evaluation of the filter rules.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { RE2JS } from 're2js';
import { Tokens } from '../../kernel/services.js';
import type { LogRecord } from '../../kernel/models.js';
import type { TestServer } from '../helpers/server.js';

export const HOUR = 3_600_000;
/** 2025-11-22T10:00:00Z */
export const T0 = Date.UTC(2025, 10, 22, 10, 0, 0);

export interface Line {
  timestampMs: number;
  message: string;
  labels: Record<string, string>;
  facets: Record<string, string | number | boolean>;
}

export interface Filter {
  field?: string;
  operation: string;
  value: string;
  type?: string;
}

export interface CallResult {
  status: number;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export async function call(
  srv: TestServer,
  method: 'GET' | 'POST',
  op: string,
  body?: unknown,
  token?: string | null,
): Promise<CallResult> {
  const res = await srv.fetch('/hydration/query/' + op, {
    method,
    token,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, text, body: parsed };
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
export function partition(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}/${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())}/${pad(d.getUTCHours())}/`;
}

/**
 * Writes lines into `root` in the archive layout, `objectsPerHour` objects per hour partition
 * (lines dealt round-robin); `extraText` lines (e.g. malformed ones) go into the first object
 * of their hour verbatim.
 */
export function writeFsArchive(
  root: string,
  lines: readonly Line[],
  opts: { objectsPerHour?: number; raw?: { hourMs: number; text: string }[] } = {},
): void {
  const per = opts.objectsPerHour ?? 2;
  const byHour = new Map<string, string[][]>();
  const bucket = (p: string) => {
    let b = byHour.get(p);
    if (!b) byHour.set(p, (b = Array.from({ length: per }, () => [])));
    return b;
  };
  lines.forEach((l, i) => bucket(partition(l.timestampMs))[i % per]!.push(JSON.stringify(l)));
  for (const r of opts.raw ?? []) bucket(partition(r.hourMs))[0]!.push(r.text);
  for (const [p, objs] of byHour) {
    mkdirSync(join(root, p), { recursive: true });
    objs.forEach((o, i) => {
      if (o.length) writeFileSync(join(root, p, `part-${i}.ndjson.gz`), gzipSync(o.join('\n') + '\n'));
    });
  }
}

/** A deterministic pseudo-random data set over `hours` hours from T0 (labels, facets, gaps). */
export function dataset(n: number, hours: number, seed = 7): Line[] {
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const out: Line[] = [];
  for (let i = 0; i < n; i++) {
    const labels: Record<string, string> = {};
    const facets: Record<string, string | number | boolean> = {};
    if (rnd() < 0.8) labels.service = pick(['api', 'auth', 'billing', 'prod-api', 'x-prod-y']);
    if (rnd() < 0.6) labels.env = pick(['prod', 'staging', 'dev']);
    if (rnd() < 0.5) facets.env = pick(['prod', 'qa']);
    if (rnd() < 0.5) facets.status = pick([200, 404, 500, 503]);
    if (rnd() < 0.3) facets.service = pick(['api', 'worker']);
    if (rnd() < 0.2) facets.retry = pick([true, false]);
    const message = pick([
      'GET /api/users 200',
      'POST /api/orders 500 upstream timeout',
      'charge failed: card_declined',
      'user login ok',
      'Timeout while connecting',
      'prod-deploy finished',
    ]);
    out.push({ timestampMs: T0 + Math.floor(rnd() * hours * HOUR), message, labels, facets });
  }
  return out;
}

/** The filter rules of SPEC.md, written independently of the plugin. */
export function passes(line: Line, f: Filter): boolean {
  const test = (x: string): boolean => {
    switch (f.operation) {
      case 'eq':
        return x === f.value;
      case 'neq':
        return x !== f.value;
      case 'contains':
        return x.includes(f.value);
      case 'ncontains':
        return !x.includes(f.value);
      case 'regex':
        return RE2JS.compile(`^(?:${f.value})$`).matches(x);
      case 'nregex':
        return !RE2JS.compile(`^(?:${f.value})$`).matches(x);
      default:
        throw new Error('bad op');
    }
  };
  if (f.type === 'message') return test(line.message);
  const negative = f.operation.startsWith('n');
  const inMap = (m: Record<string, string | number | boolean>): boolean => {
    const v = Object.prototype.hasOwnProperty.call(m, f.field!) ? m[f.field!] : undefined;
    return v === undefined ? negative : test(String(v));
  };
  return negative ? inMap(line.labels) && inMap(line.facets) : inMap(line.labels) || inMap(line.facets);
}

export function expectedCount(lines: readonly Line[], start: number, end: number, filters: readonly Filter[]) {
  const inRange = lines.filter((l) => l.timestampMs >= start && l.timestampMs <= end);
  return { totalLines: inRange.length, filteredLines: inRange.filter((l) => filters.every((f) => passes(l, f))).length };
}

export async function waitStatus(
  srv: TestServer,
  jobId: string,
  want: readonly string[],
  timeoutMs = 20_000,
): Promise<{ jobStatus: string; summary: Record<string, number> }> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await call(srv, 'POST', 'job-progress', { jobId });
    if (r.status !== 200) throw new Error(`job-progress ${r.status}: ${r.text}`);
    if (want.includes(r.body.jobStatus)) return { jobStatus: r.body.jobStatus, summary: JSON.parse(r.body.jobSummary) };
    if (Date.now() > until) throw new Error(`job ${jobId} stuck in ${r.body.jobStatus} (wanted ${want.join('|')})`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

/** Every stored log line replayed by the job (read straight from storage). */
export async function storedLines(srv: TestServer, jobId: string): Promise<LogRecord[]> {
  const logs = srv.lookout.kernel.get(Tokens.Storage).logs;
  const out: LogRecord[] = [];
  for await (const b of logs.scan({
    startNs: 0n,
    endNs: 4_000_000_000_000_000_000n,
    matchers: [{ name: 'hydration_job_id', op: '=', value: jobId }],
    order: 'asc',
  })) {
    for (const r of b.records) if (r.labels.hydration_job_id === jobId) out.push(r);
  }
  return out;
}

export async function hydrate(srv: TestServer, body: Record<string, unknown>): Promise<string> {
  const r = await call(srv, 'POST', 'hydrate', body);
  if (r.status !== 200) throw new Error(`hydrate ${r.status}: ${r.text}`);
  return r.body.jobId as string;
}
