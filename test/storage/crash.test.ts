/**
 * Crash safety of the embedded backend with the real server in a child process: every request
 * acknowledged before `kill -9` is found after a restart; a corrupt WAL tail is truncated and
 * the server starts with everything before it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../helpers/ports.js';

const root = resolve(new URL('../..', import.meta.url).pathname);
const fixture = join(root, 'test/storage/fixtures/ingest-plugin.ts');


interface Child {
  proc: ChildProcess;
  url: string;
  stderr: () => string;
}

async function start(configPath: string): Promise<Child> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'kernel/cli.ts', 'start', '--config', configPath], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'test' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d) => (err += d));
  const url = await new Promise<string>((res, rej) => {
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
  return { proc, url, stderr: () => err };
}

function kill9(c: Child): Promise<void> {
  return new Promise((res) => {
    if (c.proc.exitCode !== null || c.proc.signalCode !== null) return res();
    c.proc.once('exit', () => res());
    c.proc.kill('SIGKILL');
  });
}

let dir = '';
let configPath = '';
const children: Child[] = [];

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lookout-crash-'));
  configPath = join(dir, 'config.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      server: { host: '127.0.0.1', port: await freePort() },
      dataDir: join(dir, 'data'),
      storage: { backend: 'embedded', fsync: 'interval', fsyncIntervalMs: 100 },
      plugins: ['storage-embedded', fixture],
      log: { level: 'info', access: false },
      auth: { serviceAccounts: [{ name: 'admin', token: 'crash-admin', role: 'Admin' }] },
    }),
  );
});

test.after(async () => {
  for (const c of children) await kill9(c);
  rmSync(dir, { recursive: true, force: true });
});

async function dump(c: Child): Promise<{ samples: Record<string, number[]>; logs: string[]; lastSeq: number }> {
  const r = await fetch(c.url + '/test/dump');
  assert.is(r.status, 200);
  return (await r.json()) as { samples: Record<string, number[]>; logs: string[]; lastSeq: number };
}

const acked: Array<{ w: number; i: number }> = [];

test('every acknowledged write survives kill -9', async () => {
  const a = await start(configPath);
  children.push(a);
  let stop = false;
  const T0 = 1_700_000_000_000;
  const writer = async (w: number) => {
    for (let i = 0; !stop; i++) {
      const body = {
        metrics: [{ labels: { __name__: 'crash', w: String(w) }, samples: [{ t: T0 + i * 1000, v: i }] }],
        logs: [{ ts: String(BigInt(T0 + i) * 1_000_000n), message: `w${w}-${i}`, labels: { service: 'w' + w } }],
      };
      try {
        const r = await fetch(a.url + '/test/ingest', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        if (r.status === 200) acked.push({ w, i });
        else return;
      } catch {
        return; // the server died mid-request: not acknowledged
      }
    }
  };
  const writers = [0, 1, 2, 3].map(writer);
  while (acked.length < 400) await new Promise((r) => setTimeout(r, 5));
  // Kill right after acknowledgements, with requests still in flight.
  stop = true;
  await kill9(a);
  await Promise.all(writers);
  const b = await start(configPath);
  children.push(b);
  const d = await dump(b);
  const missing = acked.filter(({ w, i }) => d.samples[String(w)]?.[i] !== i || !d.logs.includes(`w${w}-${i}`));
  assert.equal(missing, [], `${missing.length} acknowledged writes lost`);
  assert.ok(d.lastSeq >= acked.length);
  await kill9(b);
});

test('a corrupt WAL tail is truncated at start, keeping everything before it', async () => {
  for (const sig of ['metrics', 'logs']) {
    const walDir = join(dir, 'data', 'embedded', sig, 'wal');
    const files = readdirSync(walDir).sort().filter((f) => statSync(join(walDir, f)).size > 0);
    appendFileSync(join(walDir, files[files.length - 1]!), Buffer.from('garbage that is not a record \x00\x01\x02'));
  }
  const c = await start(configPath);
  children.push(c);
  const d = await dump(c);
  const missing = acked.filter(({ w, i }) => d.samples[String(w)]?.[i] !== i || !d.logs.includes(`w${w}-${i}`));
  assert.equal(missing, []);
  assert.match(c.stderr(), /wal: truncated a torn or corrupt tail/);
  // And it keeps accepting writes.
  const r = await fetch(c.url + '/test/ingest', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ logs: [{ ts: '1', message: 'after-corruption', labels: { service: 'x' } }] }),
  });
  assert.is(r.status, 200);
  await kill9(c);
});

test.run();
