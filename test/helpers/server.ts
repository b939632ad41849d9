/**
 * Boots the real Lookout server on a free loopback port with a temporary data directory, for
 * tests that speak HTTP to it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../kernel/config.js';
import { startLookout, type RunningLookout } from '../../kernel/server.js';
import type { PluginDefinition } from '../../kernel/plugin.js';

export const ADMIN_TOKEN = 'test-admin-token';
export const VIEWER_TOKEN = 'test-viewer-token';
export const EDITOR_TOKEN = 'test-editor-token';
export const INGEST_KEY = 'test-ingest-key';

export interface TestServer {
  url: string;
  dataDir: string;
  lookout: RunningLookout;
  /** fetch relative to the server with the admin token unless headers say otherwise. */
  fetch(path: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

export type ConfigOverrides = Record<string, unknown>;

/** Default test backend: the embedded one when present, else memory (LOOKOUT_TEST_BACKEND overrides). */
export const TEST_BACKEND = process.env.LOOKOUT_TEST_BACKEND ?? 'embedded';

export function tempDir(prefix = 'lookout-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function startTestServer(
  overrides: ConfigOverrides = {},
  opts: { extraPlugins?: PluginDefinition[]; dataDir?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<TestServer> {
  const dataDir = opts.dataDir ?? tempDir();
  const base: ConfigOverrides = {
    server: { host: '127.0.0.1', port: 0 },
    dataDir,
    storage: { backend: TEST_BACKEND },
    log: { level: 'error' },
    auth: {
      ingestApiKeys: [],
      serviceAccounts: [
        { name: 'admin', token: ADMIN_TOKEN, role: 'Admin' },
        { name: 'editor', token: EDITOR_TOKEN, role: 'Editor' },
        { name: 'reader', token: VIEWER_TOKEN, role: 'Viewer' },
      ],
      users: [],
    },
  };
  const merged = deepMerge(base, overrides);
  const config = loadConfig({ overrides: merged, env: opts.env ?? {} });
  const lookout = await startLookout({ config, extraPlugins: opts.extraPlugins });
  return {
    url: lookout.url,
    dataDir,
    lookout,
    fetch(path, init = {}) {
      const headers = new Headers(init.headers);
      const token = init.token === undefined ? ADMIN_TOKEN : init.token;
      if (token !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
      return fetch(lookout.url + path, { ...init, headers });
    },
    async stop({ keepData = false } = {}) {
      await lookout.stop();
      if (!keepData && !opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function deepMerge(a: ConfigOverrides, b: ConfigOverrides): ConfigOverrides {
  const out: ConfigOverrides = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' && !Array.isArray(cur)
        ? deepMerge(cur as ConfigOverrides, v as ConfigOverrides)
        : v;
  }
  return out;
}
