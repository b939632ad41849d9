import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { freePort } from '../helpers/ports.js';


test('SIGTERM: stops accepting, finishes in-flight requests, exits 0', async () => {
  const dir = tempDir();
  const port = await freePort();
  const cfg = join(dir, 'config.json');
  writeFileSync(
    cfg,
    JSON.stringify({
      server: { host: '127.0.0.1', port },
      dataDir: join(dir, 'data'),
      storage: { backend: 'memory' },
      plugins: ['*', './test/kernel/fixtures/probe-plugin.ts'],
    }),
  );
  const child = spawn(process.execPath, ['--import', 'tsx', 'kernel/cli.ts', 'start', '--config', cfg], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  try {
    for (let i = 0; i < 100 && !out.includes('listening'); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(out, /Lookout listening on http:\/\/127\.0\.0\.1:\d+/);
    assert.match(out, /Admin token written to .*admin-token/);
    const slow = fetch(`http://127.0.0.1:${port}/probe/slow?ms=1500`).then(async (r) => [r.status, await r.text()]);
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    // New connections are refused while the slow request drains.
    const refused = await fetch(`http://127.0.0.1:${port}/-/healthy`).then(
      () => false,
      () => true,
    );
    assert.ok(refused, 'new connections refused during drain');
    assert.equal(await slow, [200, 'slow done']);
    assert.is(await exited, 0);
    assert.match(out, /Received SIGTERM/);
  } finally {
    child.kill('SIGKILL');
  }
});

test.run();
