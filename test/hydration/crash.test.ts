/**
 * A hydration job survives a crash: the real server runs in a child process (embedded backend),
 * is killed with SIGKILL while the job is HYDRATING, and a new server on the same data directory
 * resumes the job from its last saved position. Every archive line ends up stored; at most the
 * one batch written after the last save is stored twice (documented in docs/hydration.md).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ADMIN_TOKEN, startTestServer, tempDir } from '../helpers/server.js';
import { HOUR, T0, dataset, storedLines, waitStatus, writeFsArchive } from './helpers.js';
import { freePort } from '../helpers/ports.js';

const root = resolve(new URL('../..', import.meta.url).pathname);
const BATCH = 20;
const lines = dataset(1500, 3, 9);
let dir = '';
let child: ChildProcess | undefined;


async function startChild(configPath: string): Promise<string> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'kernel/cli.ts', 'start', '--config', configPath], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child = proc;
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d) => (err += d));
  return new Promise<string>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`server did not start: ${err}`)), 60_000);
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /Lookout listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        res(m[1]!);
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      rej(new Error(`server exited with ${code}: ${err}`));
    });
  });
}

function kill9(): Promise<void> {
  const p = child;
  return new Promise((res) => {
    if (!p || p.exitCode !== null || p.signalCode !== null) return res();
    p.once('exit', () => res());
    p.kill('SIGKILL');
  });
}

test.before(() => {
  dir = tempDir('lookout-hydration-crash-');
  writeFsArchive(join(dir, 'a'), lines, { objectsPerHour: 3 });
});

test.after(async () => {
  await kill9();
  rmSync(dir, { recursive: true, force: true });
});

test('SIGKILL while HYDRATING: the job resumes after restart and every line is stored', async () => {
  const dataDir = join(dir, 'data');
  const base = {
    dataDir,
    storage: { backend: 'embedded', fsync: 'always' },
    archives: [{ name: 'local', type: 'fs', path: join(dir, 'a') }],
    pluginOptions: { hydration: { batchSize: BATCH, batchDelayMs: 25 } },
    log: { level: 'error' },
  };
  const configPath = join(dir, 'config.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      ...base,
      server: { host: '127.0.0.1', port: await freePort() },
      auth: { serviceAccounts: [{ name: 'admin', token: ADMIN_TOKEN, role: 'Admin' }] },
    }),
  );
  const url = await startChild(configPath);
  const post = async (op: string, body: unknown) => {
    const r = await fetch(`${url}/hydration/query/${op}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return (await r.json()) as Record<string, string>;
  };
  const { jobId } = await post('hydrate', { archiveName: 'local', startTsMs: T0, endTsMs: T0 + 3 * HOUR - 1 });
  assert.ok(jobId);
  for (;;) {
    const p = await post('job-progress', { jobId });
    // The job is INIT until the worker picks it up (under load that can take a few polls).
    if (p.jobStatus === 'INIT') {
      await new Promise((r) => setTimeout(r, 10));
      continue;
    }
    assert.is(p.jobStatus, 'HYDRATING');
    if (JSON.parse(p.jobSummary!).filteredLines >= 300) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  await kill9();

  const srv = await startTestServer(base, { dataDir });
  try {
    const done = await waitStatus(srv, jobId!, ['DONE', 'FAILED'], 60_000);
    assert.is(done.jobStatus, 'DONE');
    assert.is(done.summary.filteredLines, lines.length);
    const stored = await storedLines(srv, jobId!);
    const key = (ms: number, msg: string, l: Record<string, string>) => `${ms}|${msg}|${l.service ?? ''}|${l.env ?? ''}`;
    const want = new Set(lines.map((l) => key(l.timestampMs, l.message, l.labels)));
    const got = new Set(stored.map((r) => key(Number(r.timestampNs / 1_000_000n), r.message, r.labels)));
    assert.equal([...got].sort(), [...want].sort(), 'every archive line stored');
    assert.ok(stored.length >= lines.length && stored.length <= lines.length + BATCH, `stored ${stored.length}`);
  } finally {
    await srv.stop();
  }
});

test.run();
