/**
 * Shared pieces of the real-agent tests: finding an agent binary built by
 * scripts/agents/build-<agent>.sh, turning an examples/agents/ file into a runnable config,
 * running the agent as a child process, and reading the data back over Lookout's HTTP query
 * APIs (PromQL, SvcQL through GraphQL, the trace-by-id API) — what a user would do.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { TestServer } from '../helpers/server.js';
import { freePort } from '../helpers/ports.js';
export { freePort };

const root = new URL('../../', import.meta.url).pathname;

/** Where the build scripts put agents (same default as scripts/agents/build-*.sh). */
export const AGENT_CACHE = process.env.LOOKOUT_AGENT_CACHE ?? join(homedir(), '.cache', 'lookout-agents');

/** The agent binary at `<cache>/<relPath>`, or undefined when it has not been built. */
export function agentBinary(relPath: string): string | undefined {
  const p = join(AGENT_CACHE, relPath);
  return existsSync(p) ? p : undefined;
}


/**
 * An examples/agents/ file with placeholders replaced. Every `from` must occur in the file, so
 * an edit of the example that the test no longer matches fails loudly instead of testing
 * something else.
 */
export function exampleConfig(relPath: string, replacements: [from: string, to: string][]): string {
  let text = readFileSync(join(root, 'examples', 'agents', relPath), 'utf8');
  for (const [from, to] of replacements) {
    if (!text.includes(from)) throw new Error(`examples/agents/${relPath} no longer contains ${JSON.stringify(from)}`);
    text = text.split(from).join(to);
  }
  return text;
}

export interface RunningAgent {
  proc: ChildProcess;
  /** Everything the agent printed so far (stdout and stderr). */
  log(): string;
  stop(): Promise<void>;
}

export function startAgent(bin: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): RunningAgent {
  const proc = spawn(bin, args, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    // Agents can be chatty: keep the tail only.
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  return {
    proc,
    log: () => out,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** Polls `fn` until it returns a value; on timeout the error carries the agent's log tail. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, agent?: RunningAgent, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    if (agent && agent.proc.exitCode !== null) {
      throw new Error(`agent exited with ${agent.proc.exitCode} while waiting for ${what}:\n${agent.log().slice(-4000)}`);
    }
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; agent log:\n${agent?.log().slice(-4000) ?? ''}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

export interface QueriedLog {
  timestamp: string;
  message: string;
  labels: Record<string, string>;
  facets: Record<string, unknown>;
}

/** Raw log records matching a SvcQL search, through GraphQL `getLogsWithSvcQl` (newest first). */
export async function queryLogs(srv: TestServer, svcql: string, limit = 1000): Promise<QueriedLog[]> {
  const res = await srv.fetch('/query', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query:
        'query($q: String!, $s: Time!, $e: Time!, $l: Int) { getLogsWithSvcQl(query: $q, startTs: $s, endTs: $e, limit: $l) { logs { timestamp message labels facets } } }',
      variables: { q: svcql, s: '2000-01-01T00:00:00Z', e: new Date(Date.now() + 3600_000).toISOString(), l: limit },
    }),
  });
  const body = (await res.json()) as { data?: { getLogsWithSvcQl: { logs: QueriedLog[] } }; errors?: unknown };
  if (!body.data) throw new Error(`GraphQL error: ${JSON.stringify(body.errors)}`);
  return body.data.getLogsWithSvcQl.logs;
}

export interface PromVector {
  metric: Record<string, string>;
  value: [number, string];
}

/** An instant PromQL query over Lookout's Prometheus API. */
export async function promQuery(srv: TestServer, q: string): Promise<PromVector[]> {
  const res = await srv.fetch(`/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = (await res.json()) as { status: string; data?: { resultType: string; result: PromVector[] }; error?: string };
  if (body.status !== 'success' || !body.data) throw new Error(`PromQL ${q}: ${body.error ?? res.status}`);
  return body.data.result;
}

/** Metric metadata (`/api/v1/metadata`) for one metric name. */
export async function promMetadata(srv: TestServer, metric: string): Promise<{ type: string; help: string; unit: string }[]> {
  const res = await srv.fetch(`/api/v1/metadata?metric=${encodeURIComponent(metric)}`);
  const body = (await res.json()) as { data: Record<string, { type: string; help: string; unit: string }[]> };
  return body.data[metric] ?? [];
}

export interface OtlpJsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number | string;
  attributes?: { key: string; value: Record<string, unknown> }[];
  events?: { name: string }[];
  status?: { code?: number | string };
}

/**
 * A trace by id through the Tempo-compatible API. Returns its spans (ids base64 as Tempo sends
 * them) plus the resource attributes per span, or undefined while the trace is unknown.
 */
export async function getTrace(
  srv: TestServer,
  traceIdHex: string,
): Promise<{ spans: OtlpJsonSpan[]; resources: Record<string, unknown>[] } | undefined> {
  const res = await srv.fetch(`/dashboards/api/datasources/proxy/uid/lookout-traces/api/traces/${traceIdHex}`);
  if (res.status === 404) return undefined;
  if (!res.ok) throw new Error(`trace ${traceIdHex}: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as {
    trace?: { resourceSpans?: { resource?: { attributes?: { key: string; value: Record<string, unknown> }[] }; scopeSpans?: { spans?: OtlpJsonSpan[] }[] }[] };
    resourceSpans?: never;
  };
  const spans: OtlpJsonSpan[] = [];
  const resources: Record<string, unknown>[] = [];
  for (const rs of body.trace?.resourceSpans ?? []) {
    const attrs = Object.fromEntries((rs.resource?.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]));
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        spans.push(s);
        resources.push(attrs);
      }
    }
  }
  return spans.length ? { spans, resources } : undefined;
}

/** Base64 span/trace id (Tempo JSON) → hex. */
export const b64ToHex = (s: string): string => Buffer.from(s, 'base64').toString('hex');

/** True when this machine lets an unprivileged process have its own network namespace. */
export const canIsolateNetwork = (): boolean => spawnSync('unshare', ['-rn', 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'ignore' }).status === 0;

export interface IsolatedAgent extends RunningAgent {
  /** The test-side 127.0.0.1 port that reaches the agent's listener on `insidePort`. */
  port(insidePort: number): number;
}

/**
 * Runs an agent in a network namespace of its own that has only loopback (`unshare -rn`), for
 * agents that probe addresses off this machine by themselves (cloud metadata services): those
 * connections fail inside the namespace instead of leaving it. `outPorts`: test-side ports the
 * agent reaches at the same 127.0.0.1 port inside (Lookout); `inPorts`: the agent's listeners the
 * test reaches through `port()`. The bridge (fixtures/netns-bridge.mjs) carries TCP over Unix
 * sockets in a shared directory.
 */
export async function startIsolatedAgent(
  bin: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; dir: string; outPorts: number[]; inPorts: number[] },
): Promise<IsolatedAgent> {
  const servers: Server[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const pipe = (a: import('node:net').Socket, b: import('node:net').Socket) => {
    for (const x of [a, b]) {
      sockets.add(x);
      x.on('close', () => sockets.delete(x));
    }
    a.pipe(b);
    b.pipe(a);
    // Either side gone (error or close) ends the other, so a client never waits on a dead pair.
    a.on('error', () => b.destroy()).on('close', () => b.destroy());
    b.on('error', () => a.destroy()).on('close', () => a.destroy());
  };
  for (const p of opts.outPorts) {
    const s = createServer((c) => pipe(c, createConnection(p, '127.0.0.1')));
    await new Promise<void>((r) => s.listen(join(opts.dir, `out-${p}.sock`), r));
    servers.push(s);
  }
  const mapped = new Map<number, number>();
  for (const p of opts.inPorts) {
    const s = createServer((c) => pipe(c, createConnection(join(opts.dir, `in-${p}.sock`))));
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    mapped.set(p, (s.address() as { port: number }).port);
    servers.push(s);
  }
  const bridge = join(root, 'test', 'ingest-real-agents', 'fixtures', 'netns-bridge.mjs');
  const script =
    'ip link set lo up || exit 1; ' +
    `"${process.execPath}" "${bridge}" "${opts.dir}" "${opts.outPorts.join(',')}" "${opts.inPorts.join(',')}" & ` +
    `i=0; while [ ! -e "${opts.dir}/ready" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; ` +
    'exec "$@"';
  const agent = startAgent('unshare', ['-rn', 'sh', '-c', script, 'agent', bin, ...args], { env: opts.env });
  return {
    ...agent,
    port(insidePort) {
      const p = mapped.get(insidePort);
      if (p === undefined) throw new Error(`port ${insidePort} is not bridged`);
      return p;
    },
    async stop() {
      await agent.stop();
      // close() waits for open connections (keep-alive ones too): end them first.
      for (const x of sockets) x.destroy();
      for (const s of servers) await new Promise((r) => s.close(r));
    },
  };
}
