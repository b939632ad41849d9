import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig, parseDurationMs } from '../../kernel/config.js';
import { tempDir } from '../helpers/server.js';

const dir = tempDir('lookout-config-');
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

test('defaults match OPERATIONS.md', () => {
  const c = loadConfig();
  assert.is(c.server.host, '127.0.0.1');
  assert.is(c.server.port, 8080);
  assert.is(c.dataDir, './data');
  assert.is(c.storage.backend, 'embedded');
  assert.equal(c.plugins, ['*']);
  assert.is(c.limits.maxBodyBytes, 67108864);
  assert.is(c.limits.ingestMaxConcurrent, 256);
  assert.is(c.hydration.maxConcurrentJobs, 2);
});

test('precedence: flags > environment > file > defaults', () => {
  const f = file('p.json', JSON.stringify({ server: { port: 1111, host: '127.0.0.2' }, dataDir: '/f' }));
  const fromFile = loadConfig({ file: f });
  assert.is(fromFile.server.port, 1111);
  assert.is(fromFile.server.host, '127.0.0.2');
  const withEnv = loadConfig({ file: f, env: { LOOKOUT_PORT: '2222', LOOKOUT_DATA_DIR: '/e' } });
  assert.is(withEnv.server.port, 2222);
  assert.is(withEnv.server.host, '127.0.0.2');
  assert.is(withEnv.dataDir, '/e');
  const withFlags = loadConfig({ file: f, env: { LOOKOUT_PORT: '2222' }, flags: { server: { port: 3333 } } });
  assert.is(withFlags.server.port, 3333);
  assert.is(withFlags.dataDir, '/f');
});

test('YAML files are accepted', () => {
  const f = file('c.yaml', 'server:\n  port: 9999\nrbac:\n  enabled: true\n  defaultPolicy: allow\n');
  const c = loadConfig({ file: f });
  assert.is(c.server.port, 9999);
  assert.is(c.rbac.enabled, true);
  assert.is(c.rbac.defaultPolicy, 'allow');
});

test('every documented environment variable is read', () => {
  const c = loadConfig({
    env: {
      LOOKOUT_HOST: '0.0.0.0',
      LOOKOUT_STORAGE: 'elasticsearch',
      LOOKOUT_ELASTICSEARCH_URL: 'http://127.0.0.1:9200',
      LOOKOUT_PLUGINS: 'auth-tokens, dashboards',
      LOOKOUT_INGEST_API_KEYS: 'a,b',
      LOOKOUT_ADMIN_TOKEN: 'secret',
      LOOKOUT_RBAC_ENABLED: 'true',
      LOOKOUT_DEFAULT_RBAC_POLICY: 'allow',
    },
  });
  assert.is(c.server.host, '0.0.0.0');
  assert.is(c.storage.backend, 'elasticsearch');
  assert.is(c.storage.url, 'http://127.0.0.1:9200');
  assert.equal(c.plugins, ['auth-tokens', 'dashboards']);
  assert.equal(c.auth.ingestApiKeys, ['a', 'b']);
  assert.equal(c.auth.serviceAccounts, [{ name: 'admin', token: 'secret', role: 'Admin' }]);
  assert.is(c.rbac.enabled, true);
  assert.is(c.rbac.defaultPolicy, 'allow');
});

test('unknown keys are errors that name the key', () => {
  assert.is(configError(() => loadConfig({ overrides: { colour: 'red' } })).key, 'colour');
  assert.is(configError(() => loadConfig({ overrides: { server: { prot: 1 } } })).key, 'server.prot');
  assert.is(
    configError(() => loadConfig({ overrides: { auth: { serviceAccounts: [{ name: 'a', token: 't', role: 'Admin', x: 1 }] } } })).key,
    'auth.serviceAccounts[0].x',
  );
});

test('wrong types and values are errors that name the key', () => {
  assert.is(configError(() => loadConfig({ overrides: { server: { port: '80' } } })).key, 'server.port');
  assert.is(configError(() => loadConfig({ overrides: { server: { port: 70000 } } })).key, 'server.port');
  assert.is(configError(() => loadConfig({ overrides: { rbac: { enabled: 'yes' } } })).key, 'rbac.enabled');
  assert.is(configError(() => loadConfig({ overrides: { rbac: { defaultPolicy: 'maybe' } } })).key, 'rbac.defaultPolicy');
  assert.is(configError(() => loadConfig({ overrides: { plugins: 'all' } })).key, 'plugins');
  assert.is(configError(() => loadConfig({ overrides: { archives: [{ name: 'x' }] } })).key, 'archives[0].type');
  assert.is(configError(() => loadConfig({ overrides: { storage: { retention: { logs: 'ten days' } } } })).key, 'storage.retention.logs');
  assert.is(configError(() => loadConfig({ env: { LOOKOUT_PORT: 'eighty' } })).key, 'LOOKOUT_PORT');
  assert.is(configError(() => loadConfig({ env: { LOOKOUT_RBAC_ENABLED: 'perhaps' } })).key, 'LOOKOUT_RBAC_ENABLED');
  assert.is(configError(() => loadConfig({ file: file('bad.json', '{"server": ') })).key, '--config');
});

test('users default to role Viewer and get a login', () => {
  const c = loadConfig({ overrides: { auth: { users: [{ email: 'ana@example.com', name: 'Ana', token: 't' }] } } });
  assert.is(c.auth.users[0]!.role, 'Viewer');
  assert.is(c.auth.users[0]!.login, 'ana');
});

test('durations parse like Prometheus', () => {
  assert.is(parseDurationMs('1h30m'), 5_400_000);
  assert.is(parseDurationMs('15d'), 15 * 86_400_000);
  assert.is(parseDurationMs('0'), 0);
  assert.throws(() => parseDurationMs('1x'));
});

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'kernel/cli.ts', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, ...env },
    timeout: 60_000,
  });

test('CLI: unknown config key exits 2 naming the key', () => {
  const r = cli(['start', '--config', file('unknown.json', '{"server":{"hots":"x"}}')]);
  assert.is(r.status, 2);
  assert.match(r.stderr, /server\.hots/);
});

test('CLI: a wrong type from the environment exits 2 naming the variable', () => {
  const r = cli(['start'], { LOOKOUT_PORT: 'abc' });
  assert.is(r.status, 2);
  assert.match(r.stderr, /LOOKOUT_PORT/);
});

test('CLI: --help lists every command and option; unknown flags exit 2', () => {
  const r = cli(['--help']);
  assert.is(r.status, 0);
  for (const s of ['start', '--config', '--port', '--host', '--data-dir']) assert.ok(r.stdout.includes(s), s);
  const bad = cli(['start', '--bogus']);
  assert.is(bad.status, 2);
  assert.match(bad.stderr, /bogus/);
});

test.run();
