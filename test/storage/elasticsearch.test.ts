/**
 * The Elasticsearch backend against a real Elasticsearch 8 node (test/helpers/elasticsearch.ts):
 * the same storage conformance suite as the embedded and memory backends, then the real server
 * booted on `storage.backend: elasticsearch`, ingesting and querying over HTTP.
 */
import { rmSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { openElasticsearchBackend, type ElasticsearchBackend, type ElasticsearchBackendOptions } from '../../backends/elasticsearch/index.js';
import { Es } from '../../backends/elasticsearch/es.js';
import { deleteAll } from '../../backends/elasticsearch/mappings.js';
import { createLogger } from '../../kernel/logger.js';
import type { StorageBackend } from '../../kernel/storage.js';
import { startTestElasticsearch } from '../helpers/elasticsearch.js';
import { remoteWrite } from '../helpers/remote-write.js';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';
import { storageConformance } from './conformance.js';

const DAY = 86_400_000;
const node = await startTestElasticsearch();

let seq = 0;
const uniquePrefix = (what: string) => `lkt-${what}-${process.pid}-${Date.now().toString(36)}-${seq++}`;

function options(url: string, indexPrefix: string): ElasticsearchBackendOptions {
  return {
    url,
    indexPrefix,
    shards: 1,
    replicas: 0,
    // Short refresh interval: every acknowledged write waits for a refresh (read-your-writes).
    refreshInterval: '50ms',
    refresh: 'wait_for',
    waitForActiveShards: '1',
    requestTimeoutMs: 30_000,
    logger: createLogger('error'),
    retentionMs: { metrics: 15 * DAY, logs: 15 * DAY, traces: 7 * DAY, events: 15 * DAY },
    maintenanceIntervalMs: 0,
  };
}

async function dropPrefix(url: string, prefix: string): Promise<void> {
  const es = new Es(options(url, prefix), createLogger('error'));
  try {
    await deleteAll(es);
  } finally {
    await es.close();
  }
}

if ('skip' in node) {
  console.log(`SKIP: ${node.skip}`);
  const s = suite('storage conformance: elasticsearch');
  s.skip('conformance suite and server end to end on Elasticsearch', () => {});
  s.run();
} else {
  console.log(`elasticsearch: ${node.source} at ${node.url}`);
  const { url } = node;

  storageConformance('elasticsearch', () => {
    const prefix = uniquePrefix('conf');
    return {
      persistent: true,
      open: async () => {
        const b = await openElasticsearchBackend(options(url, prefix));
        const close = b.close.bind(b);
        b.close = () =>
          close().catch((e: unknown) => {
            console.error(`closing ${prefix} failed:`, e);
            throw e;
          });
        return b;
      },
      retention: async (b: StorageBackend, now: number) => {
        await (b as ElasticsearchBackend).maintenance({ now });
      },
      cleanup: () =>
        dropPrefix(url, prefix).catch((e: unknown) => {
          // uvu loses errors thrown by after-each hooks: say what happened before rethrowing.
          console.error(`cleanup of ${prefix} failed:`, e);
          throw e;
        }),
    };
  });

  const e2e = suite<{ srv?: TestServer; prefix: string }>('server on storage.backend elasticsearch', { prefix: uniquePrefix('srv') });

  e2e.before(async (ctx) => {
    ctx.srv = await startTestServer({
      storage: { backend: 'elasticsearch', url, indexPrefix: ctx.prefix },
      pluginOptions: { 'storage-elasticsearch': { replicas: 0, refreshInterval: '100ms' } },
      auth: { ingestApiKeys: [INGEST_KEY] },
    });
  });

  e2e.after(async (ctx) => {
    await ctx.srv?.stop();
    // The restarted server was given its data directory, so stop() leaves it.
    if (ctx.srv) rmSync(ctx.srv.dataDir, { recursive: true, force: true });
    await dropPrefix(url, ctx.prefix).catch(() => undefined);
    await node.stop();
  });

  e2e('logs: /ingester/api/v2/logs, then a SvcQL count over GraphQL', async ({ srv }) => {
    const now = Date.now();
    const body = JSON.stringify([
      { message: 'GET /a 200', service: 'es-api', status: 'info', timestamp: now - 3000 },
      { message: 'GET /b 500 upstream timeout', service: 'es-api', status: 'error', timestamp: now - 2000 },
      { message: 'charge ok', service: 'es-billing', status: 'info', timestamp: now - 1000 },
    ]);
    const res = await fetch(srv!.url + '/ingester/api/v2/logs', {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'dd-api-key': INGEST_KEY },
    });
    assert.is(res.status, 202, await res.clone().text());
    const gql = async (q: string) => {
      const r = await srv!.fetch('/query', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: `query T($q: String!, $s: Time!, $e: Time!) { getLogMetricsResultWithSvcQl(query: $q, startTs: $s, endTs: $e) { ColumnHeaders TableResult } }`,
          variables: { q, s: new Date(now - 60_000).toISOString(), e: new Date(now + 60_000).toISOString() },
        }),
      });
      assert.is(r.status, 200);
      const j = (await r.json()) as { data?: { getLogMetricsResultWithSvcQl: { TableResult: unknown[][] } }; errors?: unknown };
      assert.is(j.errors, undefined, JSON.stringify(j.errors));
      return j.data!.getLogMetricsResultWithSvcQl.TableResult;
    };
    assert.equal(await gql('* | count'), [[3]]);
    assert.equal(await gql('service=es-api | count'), [[2]]);
    assert.equal(await gql('timeout | count'), [[1]]);
    assert.equal(await gql('* | count by service | sort by service asc'), [['es-api', 2], ['es-billing', 1]]);
  });

  e2e('metrics: remote write to /ingester/write, then /api/v1/query and /api/v1/labels', async ({ srv }) => {
    const t = Date.now() - 10_000;
    await remoteWrite(
      srv!.url + '/ingester/write',
      [
        { labels: { __name__: 'es_requests_total', job: 'api', instance: 'a' }, samples: [{ t, v: 5 }] },
        { labels: { __name__: 'es_requests_total', job: 'api', instance: 'b' }, samples: [{ t, v: 7 }] },
      ],
      { headers: { authorization: `Bearer ${INGEST_KEY}` } },
    );
    const q = await srv!.fetch(`/api/v1/query?query=${encodeURIComponent('sum(es_requests_total{job="api"})')}&time=${(t + 1000) / 1000}`);
    assert.is(q.status, 200);
    const body = (await q.json()) as { status: string; data: { result: { value: [number, string] }[] } };
    assert.is(body.status, 'success');
    assert.is(body.data.result[0]?.value[1], '12');
    const re = await srv!.fetch(`/api/v1/query?query=${encodeURIComponent('count(es_requests_total{instance=~"a|c"})')}&time=${(t + 1000) / 1000}`);
    assert.is(((await re.json()) as { data: { result: { value: [number, string] }[] } }).data.result[0]?.value[1], '1');
    const labels = await srv!.fetch('/api/v1/labels');
    const names = ((await labels.json()) as { data: string[] }).data;
    assert.ok(names.includes('job') && names.includes('instance'), JSON.stringify(names));
  });

  e2e('a restarted server on the same indices sees the same data', async (ctx) => {
    const dataDir = ctx.srv!.dataDir;
    await ctx.srv!.stop({ keepData: true });
    ctx.srv = await startTestServer(
      {
        storage: { backend: 'elasticsearch', url, indexPrefix: ctx.prefix },
        pluginOptions: { 'storage-elasticsearch': { replicas: 0, refreshInterval: '100ms' } },
        auth: { ingestApiKeys: [INGEST_KEY] },
      },
      { dataDir },
    );
    const q = await ctx.srv.fetch(`/api/v1/query?query=${encodeURIComponent('count(es_requests_total)')}`);
    assert.is(((await q.json()) as { data: { result: { value: [number, string] }[] } }).data.result[0]?.value[1], '2');
    // Index sizes per signal reach /metrics.
    const metrics = await (await ctx.srv.fetch('/metrics')).text();
    assert.match(metrics, /lookout_storage_bytes\{signal="logs"\} \d+/);
  });

  e2e('an unreachable Elasticsearch fails startup with a clear error', async () => {
    const err = await startTestServer({
      storage: { backend: 'elasticsearch', url: 'http://127.0.0.1:1', indexPrefix: 'unreachable' },
      pluginOptions: { 'storage-elasticsearch': { connectTimeoutMs: 1500 } },
    }).then(
      (s) => s.stop().then(() => undefined),
      (e: unknown) => e as Error,
    );
    assert.ok(err, 'startup should fail');
    assert.match(err!.message, /Elasticsearch at http:\/\/127\.0\.0\.1:1 did not answer/);
  });

  e2e.run();
}
