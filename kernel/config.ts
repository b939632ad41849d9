/**
 * Configuration exactly as OPERATIONS.md: a JSON or YAML file, then environment variables, then
 * command-line flags, each overriding the one before. Validation is strict: an unknown key or a
 * wrong type is a ConfigError naming the key (the CLI exits with code 2).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

export type Role = 'Admin' | 'Editor' | 'Viewer';

export interface ServiceAccountConfig {
  name: string;
  token: string;
  role: Role;
}
export interface UserConfig {
  email: string;
  name: string;
  login: string;
  token?: string;
  role: Role;
}
export interface ArchiveConfig {
  name: string;
  type: 'fs' | 's3';
  path?: string;
  endpoint?: string;
  bucket?: string;
  prefix?: string;
  accessKey?: string;
  secretKey?: string;
  region?: string;
}
export type FsyncPolicy = 'always' | 'interval';

export interface LookoutConfig {
  server: { host: string; port: number };
  dataDir: string;
  storage: {
    backend: string;
    url?: string;
    indexPrefix: string;
    fsync: FsyncPolicy;
    fsyncIntervalMs: number;
    /** Per signal retention as durations (e.g. "15d"); "0" keeps forever. */
    retention: { metrics: string; logs: string; traces: string; events: string };
    /** How far behind the newest sample of a series an out-of-order sample may be (duration). */
    outOfOrderWindow: string;
    /** Background merging of small log/span/event segments (embedded backend; docs/storage.md). */
    merge?: { window: string; maxSegmentBytes: number };
    /** Memory for the newest metric segment files held in RAM (embedded backend; 0 = off). */
    metricsCacheBytes?: number;
  };
  plugins: string[];
  /** Options for individual (including third-party) plugins, keyed by plugin name. */
  pluginOptions: Record<string, Record<string, unknown>>;
  auth: {
    ingestApiKeys: string[];
    serviceAccounts: ServiceAccountConfig[];
    users: UserConfig[];
  };
  rbac: { enabled: boolean; defaultPolicy: 'allow' | 'deny' };
  archives: ArchiveConfig[];
  archiver: { enabled: boolean; archive: string; flushSeconds: number };
  hydration: { maxConcurrentJobs: number };
  limits: {
    ingestMaxConcurrent: number;
    ingestRatePerSecond: number;
    maxBodyBytes: number;
    queryTimeoutSeconds: number;
    maxQueryLength: number;
    maxSamplesPerQuery: number;
    maxSeriesPerQuery: number;
  };
  webhooks: { secret: string };
  log: { level: 'debug' | 'info' | 'warn' | 'error' | 'silent'; access: boolean };
}

export class ConfigError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`config: ${key}: ${message}`);
    this.name = 'ConfigError';
  }
}

export function defaultConfig(): LookoutConfig {
  return {
    server: { host: '127.0.0.1', port: 8080 },
    dataDir: './data',
    storage: {
      backend: 'embedded',
      indexPrefix: 'lookout',
      fsync: 'interval',
      fsyncIntervalMs: 100,
      retention: { metrics: '15d', logs: '30d', traces: '7d', events: '30d' },
      outOfOrderWindow: '1h',
      merge: { window: '1d', maxSegmentBytes: 256 * 1024 * 1024 },
      metricsCacheBytes: 256 * 1024 * 1024,
    },
    plugins: ['*'],
    pluginOptions: {},
    auth: { ingestApiKeys: [], serviceAccounts: [], users: [] },
    rbac: { enabled: false, defaultPolicy: 'deny' },
    archives: [],
    archiver: { enabled: false, archive: '', flushSeconds: 60 },
    hydration: { maxConcurrentJobs: 2 },
    limits: {
      ingestMaxConcurrent: 256,
      ingestRatePerSecond: 0,
      maxBodyBytes: 64 * 1024 * 1024,
      queryTimeoutSeconds: 120,
      maxQueryLength: 65536,
      maxSamplesPerQuery: 50_000_000,
      maxSeriesPerQuery: 500_000,
    },
    webhooks: { secret: '' },
    log: { level: 'info', access: false },
  };
}

// ---- schema ---------------------------------------------------------------------------------

type Schema =
  | { t: 'string'; enum?: readonly string[]; duration?: boolean }
  | { t: 'int'; min?: number; max?: number }
  | { t: 'bool' }
  | { t: 'object'; fields: Record<string, Schema>; required?: readonly string[] }
  | { t: 'map'; of: Schema }
  | { t: 'any' }
  | { t: 'array'; of: Schema };

const str = (extra: { enum?: readonly string[]; duration?: boolean } = {}): Schema => ({ t: 'string', ...extra });
const int = (min?: number, max?: number): Schema => ({ t: 'int', min, max });
const bool: Schema = { t: 'bool' };
const obj = (fields: Record<string, Schema>, required?: readonly string[]): Schema => ({ t: 'object', fields, required });
const arr = (of: Schema): Schema => ({ t: 'array', of });
const ROLES = ['Admin', 'Editor', 'Viewer'] as const;

const SCHEMA: Schema = obj({
  server: obj({ host: str(), port: int(0, 65535) }),
  dataDir: str(),
  storage: obj({
    backend: str(),
    url: str(),
    indexPrefix: str(),
    fsync: str({ enum: ['always', 'interval'] }),
    fsyncIntervalMs: int(1, 60_000),
    retention: obj({
      metrics: str({ duration: true }),
      logs: str({ duration: true }),
      traces: str({ duration: true }),
      events: str({ duration: true }),
    }),
    outOfOrderWindow: str({ duration: true }),
    merge: obj({ window: str({ duration: true }), maxSegmentBytes: int(1 << 20, 2 ** 40) }),
    metricsCacheBytes: int(0, 2 ** 40),
  }),
  plugins: arr(str()),
  pluginOptions: { t: 'map', of: { t: 'map', of: { t: 'any' } } },
  auth: obj({
    ingestApiKeys: arr(str()),
    serviceAccounts: arr(obj({ name: str(), token: str(), role: str({ enum: ROLES }) }, ['name', 'token', 'role'])),
    users: arr(
      obj({ email: str(), name: str(), login: str(), token: str(), role: str({ enum: ROLES }) }, ['email']),
    ),
  }),
  rbac: obj({ enabled: bool, defaultPolicy: str({ enum: ['allow', 'deny'] }) }),
  archives: arr(
    obj(
      {
        name: str(),
        type: str({ enum: ['fs', 's3'] }),
        path: str(),
        endpoint: str(),
        bucket: str(),
        prefix: str(),
        accessKey: str(),
        secretKey: str(),
        region: str(),
      },
      ['name', 'type'],
    ),
  ),
  archiver: obj({ enabled: bool, archive: str(), flushSeconds: int(1) }),
  hydration: obj({ maxConcurrentJobs: int(1) }),
  limits: obj({
    ingestMaxConcurrent: int(1),
    ingestRatePerSecond: int(0),
    maxBodyBytes: int(1),
    queryTimeoutSeconds: int(1),
    maxQueryLength: int(1),
    maxSamplesPerQuery: int(1),
    maxSeriesPerQuery: int(1),
  }),
  webhooks: obj({ secret: str() }),
  log: obj({ level: str({ enum: ['debug', 'info', 'warn', 'error', 'silent'] }), access: bool }),
});

const DURATION_RE = /^(0|([0-9]+(ms|s|m|h|d|w|y))+)$/;

/** Parses a Prometheus-style duration ("1h30m", "15d", "0") into milliseconds. */
export function parseDurationMs(s: string): number {
  if (!DURATION_RE.test(s)) throw new Error(`invalid duration "${s}"`);
  if (s === '0') return 0;
  const unit: Record<string, number> = { ms: 1, s: 1e3, m: 6e4, h: 36e5, d: 864e5, w: 6048e5, y: 31536e6 };
  let total = 0;
  for (const m of s.matchAll(/([0-9]+)(ms|s|m|h|d|w|y)/g)) total += Number(m[1]) * unit[m[2]!]!;
  return total;
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function validate(schema: Schema, value: unknown, path: string): unknown {
  switch (schema.t) {
    case 'any':
      return value;
    case 'string':
      if (typeof value !== 'string') throw new ConfigError(path, `expected a string, got ${typeName(value)}`);
      if (schema.enum && !schema.enum.includes(value))
        throw new ConfigError(path, `must be one of ${schema.enum.join(', ')}, got "${value}"`);
      if (schema.duration && !DURATION_RE.test(value))
        throw new ConfigError(path, `expected a duration such as "15d" or "1h30m", got "${value}"`);
      return value;
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value))
        throw new ConfigError(path, `expected an integer, got ${typeName(value)}`);
      if (schema.min !== undefined && value < schema.min) throw new ConfigError(path, `must be >= ${schema.min}`);
      if (schema.max !== undefined && value > schema.max) throw new ConfigError(path, `must be <= ${schema.max}`);
      return value;
    case 'bool':
      if (typeof value !== 'boolean') throw new ConfigError(path, `expected a boolean, got ${typeName(value)}`);
      return value;
    case 'array':
      if (!Array.isArray(value)) throw new ConfigError(path, `expected an array, got ${typeName(value)}`);
      return value.map((v, i) => validate(schema.of, v, `${path}[${i}]`));
    case 'map': {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw new ConfigError(path, `expected an object, got ${typeName(value)}`);
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = validate(schema.of, v, path ? `${path}.${k}` : k);
      return out;
    }
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw new ConfigError(path || '(root)', `expected an object, got ${typeName(value)}`);
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const key = path ? `${path}.${k}` : k;
        const fs = schema.fields[k];
        if (!fs) throw new ConfigError(key, 'unknown configuration key');
        out[k] = validate(fs, v, key);
      }
      for (const r of schema.required ?? []) {
        if (!(r in out)) throw new ConfigError(path ? `${path}.${r}` : r, 'is required');
      }
      return out;
    }
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge where arrays and scalars replace. */
function merge<T>(base: T, over: unknown): T {
  if (!isPlainObject(base) || !isPlainObject(over)) return (over === undefined ? base : over) as T;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = k in out ? merge(out[k], v) : v;
  return out as T;
}

export interface ConfigSources {
  /** Path of a JSON or YAML file. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Values from command-line flags, already shaped as partial config. */
  flags?: Record<string, unknown>;
  /** Programmatic overrides (tests, embedding); validated like a file. */
  overrides?: Record<string, unknown>;
}

export function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError('--config', `cannot read ${file}: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (e) {
    throw new ConfigError('--config', `cannot parse ${file}: ${(e as Error).message}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isPlainObject(parsed)) throw new ConfigError('(root)', 'the config file must hold an object');
  return parsed;
}

const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');

function envBool(name: string, v: string): boolean {
  if (/^(1|true|yes|on)$/i.test(v)) return true;
  if (/^(0|false|no|off)$/i.test(v)) return false;
  throw new ConfigError(name, `expected true or false, got "${v}"`);
}

function envInt(name: string, v: string): number {
  if (!/^[0-9]+$/.test(v)) throw new ConfigError(name, `expected an integer, got "${v}"`);
  return Number(v);
}

/** The documented environment variables, shaped as a partial config. */
export function configFromEnv(env: NodeJS.ProcessEnv): { partial: Record<string, unknown>; adminToken?: string } {
  const p: Record<string, any> = {};
  const set = (path: string[], v: unknown) => {
    let o = p;
    for (const k of path.slice(0, -1)) o = o[k] ??= {};
    o[path[path.length - 1]!] = v;
  };
  if (env.LOOKOUT_HOST) set(['server', 'host'], env.LOOKOUT_HOST);
  if (env.LOOKOUT_PORT) set(['server', 'port'], envInt('LOOKOUT_PORT', env.LOOKOUT_PORT));
  if (env.LOOKOUT_DATA_DIR) set(['dataDir'], env.LOOKOUT_DATA_DIR);
  if (env.LOOKOUT_STORAGE) set(['storage', 'backend'], env.LOOKOUT_STORAGE);
  if (env.LOOKOUT_ELASTICSEARCH_URL) set(['storage', 'url'], env.LOOKOUT_ELASTICSEARCH_URL);
  if (env.LOOKOUT_PLUGINS) set(['plugins'], list(env.LOOKOUT_PLUGINS));
  if (env.LOOKOUT_INGEST_API_KEYS) set(['auth', 'ingestApiKeys'], list(env.LOOKOUT_INGEST_API_KEYS));
  if (env.LOOKOUT_RBAC_ENABLED) set(['rbac', 'enabled'], envBool('LOOKOUT_RBAC_ENABLED', env.LOOKOUT_RBAC_ENABLED));
  if (env.LOOKOUT_DEFAULT_RBAC_POLICY) {
    const v = env.LOOKOUT_DEFAULT_RBAC_POLICY;
    if (v !== 'allow' && v !== 'deny') throw new ConfigError('LOOKOUT_DEFAULT_RBAC_POLICY', `must be allow or deny, got "${v}"`);
    set(['rbac', 'defaultPolicy'], v);
  }
  if (env.LOOKOUT_LOG_LEVEL) set(['log', 'level'], env.LOOKOUT_LOG_LEVEL);
  return { partial: p, adminToken: env.LOOKOUT_ADMIN_TOKEN || undefined };
}

/**
 * Loads and validates the configuration from file, environment and flags (in that precedence).
 * Users default to role Viewer.
 */
export function loadConfig(src: ConfigSources = {}): LookoutConfig {
  let cfg: unknown = defaultConfig();
  if (src.file) cfg = merge(cfg, validate(SCHEMA, readConfigFile(src.file), ''));
  if (src.overrides) cfg = merge(cfg, validate(SCHEMA, src.overrides, ''));
  const fromEnv = configFromEnv(src.env ?? {});
  cfg = merge(cfg, validate(SCHEMA, fromEnv.partial, ''));
  if (src.flags) cfg = merge(cfg, validate(SCHEMA, src.flags, ''));
  const out = validate(SCHEMA, cfg, '') as LookoutConfig;
  out.auth.users = out.auth.users.map((u) => ({
    ...u,
    name: u.name ?? u.email,
    login: u.login ?? u.email.split('@')[0]!,
    role: u.role ?? 'Viewer',
  }));
  if (fromEnv.adminToken) {
    out.auth.serviceAccounts = [
      ...out.auth.serviceAccounts.filter((s) => s.name !== 'admin'),
      { name: 'admin', token: fromEnv.adminToken, role: 'Admin' },
    ];
  }
  return out;
}
