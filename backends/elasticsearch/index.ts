/**
 * The Elasticsearch storage backend (`storage.backend: elasticsearch`): the scale-out option.
 * Several Lookout processes may share one cluster and index prefix. Layout, durability and
 * limitations: docs/elasticsearch.md.
 */
import { parseDurationMs } from '../../kernel/config.js';
import type { Logger } from '../../kernel/logger.js';
import { definePlugin } from '../../kernel/plugin.js';
import type { StorageBackend } from '../../kernel/storage.js';
import { Es, parseDaySuffix, toLookoutError, type EsSettings } from './es.js';
import { EsEventStore } from './events.js';
import { EsLogStore } from './logs.js';
import { deleteAll, installTemplates } from './mappings.js';
import { EsMetaStore } from './meta.js';
import { EsMetricStore } from './metrics.js';
import { EsTraceStore } from './traces.js';
import { WriteOrder } from './write-order.js';

export interface RetentionMs {
  metrics: number;
  logs: number;
  traces: number;
  events: number;
}

export interface ElasticsearchBackendOptions extends EsSettings {
  logger: Logger;
  /** Per signal; 0 keeps forever. Whole daily indices are dropped once entirely expired. */
  retentionMs: RetentionMs;
  /** How often retention runs (0 = never automatically). */
  maintenanceIntervalMs: number;
  /** How long opening waits for the cluster to answer. */
  connectTimeoutMs?: number;
}

export interface ElasticsearchBackend extends StorageBackend {
  /** Drops daily indices whose whole day is older than retention as of `now`. */
  maintenance(opts?: { now?: number }): Promise<{ deleted: string[] }>;
  /** Deletes every index and template under the prefix (tests). */
  destroy(): Promise<void>;
}

const SIGNAL_OF: Record<string, keyof RetentionMs> = {
  samples: 'metrics',
  series: 'metrics',
  logs: 'logs',
  spans: 'traces',
  events: 'events',
};

export const DEFAULT_SETTINGS = {
  shards: 1,
  refreshInterval: '1s',
  refresh: 'wait_for',
  waitForActiveShards: '1',
  requestTimeoutMs: 30_000,
} as const;

async function waitForCluster(es: Es, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      // Not GET / : minimal distributions answer it 405; cluster health is always there.
      await es.client.cluster.health({ wait_for_status: 'yellow', timeout: '5s' }, { requestTimeout: 10_000, maxRetries: 0 });
      return;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const err = toLookoutError(last);
      throw new Error(`Elasticsearch at ${es.settings.url} did not answer within ${timeoutMs} ms: ${(err as Error).message ?? String(err)}`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function openElasticsearchBackend(opts: ElasticsearchBackendOptions): Promise<ElasticsearchBackend> {
  const es = new Es(opts, opts.logger);
  try {
    await waitForCluster(es, opts.connectTimeoutMs ?? 30_000);
    await installTemplates(es);
  } catch (e) {
    await es.close();
    throw e;
  }
  const order = new WriteOrder();
  const metrics = new EsMetricStore(es, order);
  const logs = new EsLogStore(es);
  const events = new EsEventStore(es);
  const traces = new EsTraceStore(es);
  const meta = new EsMetaStore(es);
  await Promise.all([logs.open(), events.open()]);

  async function maintenance({ now = Date.now() }: { now?: number } = {}): Promise<{ deleted: string[] }> {
    const res = await es.call(() => es.client.cat.indices({ index: `${es.prefix}-*`, format: 'json', h: 'index' }, { ignore: [404] }));
    const expired: string[] = [];
    for (const row of Array.isArray(res) ? res : []) {
      const name = row.index ?? '';
      // The prefix comes from config: compare it as a string, match only the fixed suffix.
      const m = name.startsWith(`${es.prefix}-`)
        ? /^([a-z]+)-(\d{4}\.\d{2}\.\d{2})$/.exec(name.slice(es.prefix.length + 1))
        : null;
      if (!m) continue;
      const signal = SIGNAL_OF[m[1]!];
      const day = parseDaySuffix(m[2]!);
      if (!signal || day === undefined) continue;
      const keep = opts.retentionMs[signal];
      if (keep > 0 && day + 86_400_000 <= now - keep) expired.push(name);
    }
    for (let i = 0; i < expired.length; i += 50) {
      const batch = expired.slice(i, i + 50).join(',');
      await es.call(() => es.client.indices.delete({ index: batch }, { ignore: [404] }));
    }
    if (expired.length) {
      metrics.forgetSeen();
      opts.logger.info('retention dropped expired indices', { count: expired.length });
    }
    return { deleted: expired };
  }

  // sizes() is synchronous (scraped with /metrics): served from a cache refreshed once a minute.
  const sizeCache: Record<string, number> = { metrics: 0, logs: 0, traces: 0, events: 0, meta: 0 };
  const SIZE_SIGNAL: Record<string, string> = { ...SIGNAL_OF, metadata: 'metrics', state: 'meta' };
  async function refreshSizes(): Promise<void> {
    const rows = await es.call(() => es.client.cat.indices({ index: `${es.prefix}-*`, format: 'json', h: 'index,store.size', bytes: 'b' }, { ignore: [404] }));
    const next: Record<string, number> = { metrics: 0, logs: 0, traces: 0, events: 0, meta: 0 };
    for (const row of Array.isArray(rows) ? rows : []) {
      const kind = (row.index ?? '').slice(es.prefix.length + 1).split('-')[0] ?? '';
      const signal = SIZE_SIGNAL[kind];
      if (signal) next[signal]! += Number(row['store.size'] ?? 0) || 0;
    }
    Object.assign(sizeCache, next);
  }
  const sizeTimer = setInterval(() => void refreshSizes().catch(() => undefined), 60_000);
  sizeTimer.unref();
  void refreshSizes().catch(() => undefined);

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  if (opts.maintenanceIntervalMs > 0) {
    timer = setInterval(() => {
      running = maintenance().catch((e: unknown) => opts.logger.warn('retention failed', { error: (e as Error).message }));
    }, opts.maintenanceIntervalMs);
    timer.unref();
  }

  return {
    name: 'elasticsearch',
    metrics,
    logs,
    traces,
    events,
    meta,
    maintenance,
    async flush() {
      // Acknowledged writes are already durable (translog fsync per request); wait for queued ones.
      await Promise.all([logs.writer.idle(), events.writer.idle()]);
    },
    sizes() {
      return { ...sizeCache };
    },
    async close() {
      if (timer) clearInterval(timer);
      clearInterval(sizeTimer);
      await running;
      await Promise.all([logs.writer.idle(), events.writer.idle()]);
      await es.close();
    },
    async destroy() {
      await deleteAll(es);
    },
  };
}

function num(v: unknown, name: string, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new Error(`pluginOptions.storage-elasticsearch.${name} must be a non-negative number`);
  return v;
}

function str(v: unknown, name: string, fallback: string): string {
  if (v === undefined) return fallback;
  if (typeof v !== 'string' && typeof v !== 'number') throw new Error(`pluginOptions.storage-elasticsearch.${name} must be a string`);
  return String(v);
}

export default definePlugin({
  name: 'storage-elasticsearch',
  description: 'Scale-out storage on Elasticsearch 8 (daily indices per signal, retention by dropping indices).',
  register(ctx) {
    ctx.extensions.storageBackend({
      name: 'elasticsearch',
      create: async ({ config, logger }) => {
        const url = config.storage.url;
        if (!url) throw new Error('storage.backend "elasticsearch" needs storage.url (or LOOKOUT_ELASTICSEARCH_URL), e.g. http://127.0.0.1:9200');
        const o = config.pluginOptions['storage-elasticsearch'] ?? {};
        const r = config.storage.retention;
        const refresh = str(o.refresh, 'refresh', DEFAULT_SETTINGS.refresh);
        if (refresh !== 'wait_for' && refresh !== 'true' && refresh !== 'false') {
          throw new Error('pluginOptions.storage-elasticsearch.refresh must be "wait_for", "true" or "false"');
        }
        const replicas = o.replicas === undefined ? undefined : num(o.replicas, 'replicas', 1);
        return openElasticsearchBackend({
          url,
          indexPrefix: config.storage.indexPrefix,
          shards: Math.max(1, num(o.shards, 'shards', DEFAULT_SETTINGS.shards)),
          replicas,
          refreshInterval: str(o.refreshInterval, 'refreshInterval', DEFAULT_SETTINGS.refreshInterval),
          refresh,
          waitForActiveShards: str(o.waitForActiveShards, 'waitForActiveShards', DEFAULT_SETTINGS.waitForActiveShards),
          requestTimeoutMs: num(o.requestTimeoutMs, 'requestTimeoutMs', DEFAULT_SETTINGS.requestTimeoutMs),
          connectTimeoutMs: num(o.connectTimeoutMs, 'connectTimeoutMs', 30_000),
          auth:
            o.apiKey !== undefined || o.username !== undefined
              ? { apiKey: o.apiKey === undefined ? undefined : str(o.apiKey, 'apiKey', ''), username: o.username === undefined ? undefined : str(o.username, 'username', ''), password: o.password === undefined ? undefined : str(o.password, 'password', '') }
              : undefined,
          tls: o.tlsInsecure === true ? { rejectUnauthorized: false } : undefined,
          logger: logger.child({ component: 'storage-elasticsearch' }),
          retentionMs: {
            metrics: parseDurationMs(r.metrics),
            logs: parseDurationMs(r.logs),
            traces: parseDurationMs(r.traces),
            events: parseDurationMs(r.events),
          },
          maintenanceIntervalMs: num(o.maintenanceIntervalMs, 'maintenanceIntervalMs', 3_600_000),
        });
      },
    });
  },
});
