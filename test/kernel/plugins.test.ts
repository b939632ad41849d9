import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { orderPlugins, selectPlugins, PluginLoadError } from '../../kernel/loader.js';
import { definePlugin, type PluginDefinition } from '../../kernel/plugin.js';
import { startTestServer } from '../helpers/server.js';

const p = (name: string, dependsOn: string[] = [], after: string[] = []): PluginDefinition =>
  definePlugin({ name, dependsOn, after, register() {} });

function loadError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof PluginLoadError) return e.message;
    throw e;
  }
  throw new Error('expected a PluginLoadError');
}

test('plugins are ordered by dependency, stable otherwise', () => {
  const order = orderPlugins([p('c', ['b']), p('a'), p('b', ['a']), p('d', [], ['c', 'zz'])]).map((x) => x.name);
  assert.equal(order, ['a', 'b', 'c', 'd']);
});

test('a dependency cycle is refused naming the cycle', () => {
  const msg = loadError(() => orderPlugins([p('a', ['b']), p('b', ['c']), p('c', ['a'])]));
  assert.match(msg, /cycle: a -> b -> c -> a/);
});

test('a missing dependency is refused naming both plugins', () => {
  const msg = loadError(() => orderPlugins([p('rbac', ['teams'])]));
  assert.match(msg, /plugin "rbac" depends on "teams", which is not enabled/);
});

test('selection: *, names, -exclusions and unknown names', () => {
  const fp = [p('a'), p('b'), p('c')];
  assert.equal(selectPlugins(['*', '-b'], fp, []).map((x) => x.name), ['a', 'c']);
  assert.equal(selectPlugins(['c'], fp, []).map((x) => x.name), ['c']);
  assert.match(loadError(() => selectPlugins(['nope'], fp, [])), /unknown plugin "nope"/);
});

test('server refuses to start with a missing dependency', async () => {
  try {
    await startTestServer({}, { extraPlugins: [p('needs-x', ['x-plugin'])] });
    assert.unreachable('should not start');
  } catch (e) {
    assert.instance(e, PluginLoadError);
    assert.match((e as Error).message, /needs-x.*x-plugin/);
  }
});

test('a disabled plugin answers 404 on its routes', async () => {
  const srv = await startTestServer({ plugins: ['storage-memory', 'auth-tokens'], storage: { backend: 'memory' } });
  try {
    const res = await srv.fetch('/dashboards/api/datasources');
    assert.is(res.status, 404);
    assert.is((await srv.fetch('/-/ready')).status, 200);
  } finally {
    await srv.stop();
  }
  const all = await startTestServer({ plugins: ['*'] });
  try {
    assert.is((await all.fetch('/dashboards/api/datasources')).status, 200);
  } finally {
    await all.stop();
  }
});

test('a storage backend that no enabled plugin provides is a startup error naming it', async () => {
  try {
    await startTestServer({ storage: { backend: 'nosuch' } });
    assert.unreachable('should not start');
  } catch (e) {
    assert.match((e as Error).message, /storage\.backend "nosuch"/);
  }
});

test('the example third-party plugin loads from a path in config and receives lines', async () => {
  const srv = await startTestServer({
    plugins: ['*', './examples/custom-receiver/index.mjs'],
    pluginOptions: { 'example-lines-receiver': { defaultService: 'demo' } },
  });
  try {
    const res = await srv.fetch('/ingester/lines', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'info service started\nerror disk full\n\n',
    });
    assert.is(res.status, 200);
    assert.equal(await res.json(), { accepted: 2 });
    const { Tokens } = await import('../../kernel/services.js');
    const logs = srv.lookout.kernel.get(Tokens.Storage).logs;
    const seen: string[] = [];
    for await (const b of logs.scan({ startNs: 0n, endNs: 1n << 62n, order: 'asc' }))
      for (const r of b.records) seen.push(`${r.labels.service}/${r.labels.level}: ${r.message}`);
    assert.equal(seen, ['demo/info: info service started', 'demo/error: error disk full']);
  } finally {
    await srv.stop();
  }
});

test('a third-party plugin installed as an npm package is loaded by name', async () => {
  const { mkdirSync, writeFileSync, copyFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tempDir } = await import('../helpers/server.js');
  const { loadConfig } = await import('../../kernel/config.js');
  const { startLookout } = await import('../../kernel/server.js');
  const base = tempDir('lookout-pkg-');
  const pkg = join(base, 'node_modules', 'lookout-plugin-lines');
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'lookout-plugin-lines', type: 'module', main: 'index.mjs' }));
  copyFileSync('examples/custom-receiver/index.mjs', join(pkg, 'index.mjs'));
  const config = loadConfig({
    overrides: {
      server: { host: '127.0.0.1', port: 0 },
      dataDir: join(base, 'data'),
      storage: { backend: 'memory' },
      log: { level: 'error' },
      plugins: ['*', 'lookout-plugin-lines'],
    },
  });
  const running = await startLookout({ config, baseDir: base });
  try {
    assert.ok(running.kernel.plugins.some((p) => p.name === 'example-lines-receiver'));
    const res = await fetch(running.url + '/ingester/lines', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'warn one line',
    });
    assert.is(res.status, 200);
  } finally {
    await running.stop();
  }
});

test('an unknown plugin name in config is a startup error naming it', async () => {
  try {
    await startTestServer({ plugins: ['*', 'no-such-plugin'] });
    assert.unreachable('should not start');
  } catch (e) {
    assert.instance(e, PluginLoadError);
    assert.match((e as Error).message, /unknown plugin "no-such-plugin"/);
  }
});

test('a module that exports no plugin is a clear startup error', async () => {
  try {
    await startTestServer({ plugins: ['*', './test/helpers/zstd-frame.ts'] });
    assert.unreachable('should not start');
  } catch (e) {
    assert.match((e as Error).message, /exports no plugin/);
  }
});

test.run();
