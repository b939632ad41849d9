/**
 * What shippers and the official client ask before they send a bulk request: root info
 * (version check), license, xpack, cluster health, nodes, and the setup calls Filebeat and
 * Logstash make (index templates, ILM policies, ingest pipelines). Setup objects are kept in
 * memory so a GET after a PUT finds them; they have no effect on ingestion. Every answer carries
 * `X-Elastic-Product: Elasticsearch`, without which the clients refuse the endpoint.
 */
import { randomUUID } from 'node:crypto';
import { notFound } from '../../kernel/errors.js';
import { HttpResponse, type HttpMethod, type RequestContext } from '../../kernel/http/routes.js';
import type { PluginContext } from '../../kernel/plugin.js';
import { INGEST_BASE } from '../../kernel/ingest.js';
import { PRODUCT_HEADERS } from './response.js';

export const SHIPPER_BASE = `${INGEST_BASE}/api/v1/shipper`;

/** The search-engine version announced to clients (8.x: what the 8.x clients and shippers require). */
export const ANNOUNCED_VERSION = '8.15.0';

const CLUSTER_NAME = 'lookout';
const CLUSTER_UUID = randomUUID().replace(/-/g, '').slice(0, 22);
const NODE_ID = randomUUID().replace(/-/g, '').slice(0, 22);

const esJson = (value: unknown, status = 200) =>
  new HttpResponse(status, JSON.stringify(value), { 'content-type': 'application/json', ...PRODUCT_HEADERS });

const esNotFound = (type: string, reason: string) =>
  esJson({ error: { root_cause: [{ type, reason }], type, reason }, status: 404 }, 404);

export function rootInfo() {
  return {
    name: 'lookout',
    cluster_name: CLUSTER_NAME,
    cluster_uuid: CLUSTER_UUID,
    version: {
      number: ANNOUNCED_VERSION,
      build_flavor: 'default',
      build_type: 'tar',
      build_hash: '0000000000000000000000000000000000000000',
      build_date: '2024-08-05T10:05:34.233336849Z',
      build_snapshot: false,
      lucene_version: '9.11.1',
      minimum_wire_compatibility_version: '7.17.0',
      minimum_index_compatibility_version: '7.0.0',
    },
    tagline: 'You Know, for Search',
  };
}

const license = () => ({
  status: 'active',
  uid: CLUSTER_UUID,
  type: 'basic',
  issue_date: '2024-01-01T00:00:00.000Z',
  issue_date_in_millis: 1704067200000,
  max_nodes: 1000,
  max_resource_units: null,
  issued_to: CLUSTER_NAME,
  issuer: 'elasticsearch',
  start_date_in_millis: -1,
});

/** A named-object registry per setup API (templates, policies, pipelines). */
class SetupStore {
  private readonly kinds = new Map<string, Map<string, unknown>>();
  private of(kind: string) {
    let m = this.kinds.get(kind);
    if (!m) this.kinds.set(kind, (m = new Map()));
    return m;
  }
  put(kind: string, name: string, body: unknown) {
    this.of(kind).set(name, body);
  }
  /** Names may be comma lists or wildcards (`filebeat-*`), as the APIs allow. */
  get(kind: string, names: string | undefined): [string, unknown][] {
    const m = this.of(kind);
    if (!names || names === '*' || names === '_all') return [...m.entries()];
    const out: [string, unknown][] = [];
    for (const n of names.split(',')) {
      if (n.endsWith('*')) {
        const prefix = n.slice(0, -1);
        for (const e of m.entries()) if (e[0].startsWith(prefix)) out.push(e);
      } else if (m.has(n)) out.push([n, m.get(n)]);
    }
    return out;
  }
  delete(kind: string, name: string) {
    return this.of(kind).delete(name);
  }
}

async function bodyJson(ctx: RequestContext): Promise<unknown> {
  const b = await ctx.body();
  if (b.length === 0) return {};
  return ctx.json();
}

export function registerProbes(ctx: PluginContext): void {
  const setup = new SetupStore();
  const route = (method: HttpMethod | HttpMethod[], path: string | string[], handler: (c: RequestContext) => unknown) =>
    ctx.route({
      method,
      path: (Array.isArray(path) ? path : [path]).map((p) => SHIPPER_BASE + p),
      family: 'json',
      auth: { ingest: 'svc' },
      handler: async (c) => {
        const r = await handler(c);
        return r instanceof HttpResponse ? r : esJson(r);
      },
    });

  route(['GET', 'HEAD'], ['', '/'], () => rootInfo());
  route('GET', '/_license', () => ({ license: license() }));
  route('GET', '/_xpack', () => ({
    build: { hash: rootInfo().version.build_hash, date: rootInfo().version.build_date },
    license: { uid: CLUSTER_UUID, type: 'basic', mode: 'basic', status: 'active' },
    features: {
      ilm: { available: true, enabled: true },
      security: { available: true, enabled: true },
      monitoring: { available: true, enabled: false },
      ml: { available: false, enabled: false },
    },
    tagline: 'You know, for X',
  }));
  route('GET', ['/_cluster/health', '/_cluster/health/:index'], () => ({
    cluster_name: CLUSTER_NAME,
    status: 'green',
    timed_out: false,
    number_of_nodes: 1,
    number_of_data_nodes: 1,
    active_primary_shards: 1,
    active_shards: 1,
    relocating_shards: 0,
    initializing_shards: 0,
    unassigned_shards: 0,
    delayed_unassigned_shards: 0,
    number_of_pending_tasks: 0,
    number_of_in_flight_fetch: 0,
    task_max_waiting_in_queue_millis: 0,
    active_shards_percent_as_number: 100,
  }));
  route('GET', ['/_nodes', '/_nodes/**'], (c) => ({
    _nodes: { total: 1, successful: 1, failed: 0 },
    cluster_name: CLUSTER_NAME,
    nodes: {
      [NODE_ID]: {
        name: 'lookout',
        host: c.url.hostname,
        ip: '127.0.0.1',
        version: ANNOUNCED_VERSION,
        build_flavor: 'default',
        roles: ['data', 'ingest', 'master'],
        http: { publish_address: String(c.headers.host ?? '127.0.0.1') },
      },
    },
  }));

  // Setup APIs: templates, component templates, ILM policies, ingest pipelines, data streams.
  const registries: { path: string; kind: string; list: (items: [string, unknown][]) => unknown; missing: string }[] = [
    { path: '/_index_template', kind: 'index_template', missing: 'resource_not_found_exception', list: (it) => ({ index_templates: it.map(([name, t]) => ({ name, index_template: t })) }) },
    { path: '/_component_template', kind: 'component_template', missing: 'resource_not_found_exception', list: (it) => ({ component_templates: it.map(([name, t]) => ({ name, component_template: t })) }) },
    { path: '/_template', kind: 'template', missing: 'resource_not_found_exception', list: (it) => Object.fromEntries(it) },
    { path: '/_ilm/policy', kind: 'ilm', missing: 'resource_not_found_exception', list: (it) => Object.fromEntries(it.map(([n, p]) => [n, { version: 1, modified_date: new Date(0).toISOString(), policy: (p as { policy?: unknown }).policy ?? p }])) },
    { path: '/_ingest/pipeline', kind: 'pipeline', missing: 'resource_not_found_exception', list: (it) => Object.fromEntries(it) },
  ];
  for (const r of registries) {
    route(['GET', 'HEAD'], [r.path, `${r.path}/:name`], (c) => {
      const items = setup.get(r.kind, c.params.name);
      if (c.params.name && items.length === 0) return esNotFound(r.missing, `${r.kind} [${c.params.name}] not found`);
      return r.list(items);
    });
    route(['PUT', 'POST'], `${r.path}/:name`, async (c) => {
      setup.put(r.kind, c.params.name!, await bodyJson(c));
      return { acknowledged: true };
    });
    route('DELETE', `${r.path}/:name`, (c) => {
      if (!setup.delete(r.kind, c.params.name!)) return esNotFound(r.missing, `${r.kind} [${c.params.name}] not found`);
      return { acknowledged: true };
    });
  }
  route(['GET', 'HEAD'], '/_data_stream/:name', (c) => {
    const items = setup.get('data_stream', c.params.name);
    if (items.length === 0) return esNotFound('index_not_found_exception', `no such index [${c.params.name}]`);
    return { data_streams: items.map(([name]) => ({ name, timestamp_field: { name: '@timestamp' }, status: 'GREEN' })) };
  });
  route('PUT', '/_data_stream/:name', (c) => {
    setup.put('data_stream', c.params.name!, {});
    return { acknowledged: true };
  });
  // Index-existence checks (`HEAD /<index>`) and alias lookups: every index "exists".
  route('HEAD', '/:index', () => esJson({}));
  route('GET', '/_alias/:name', (c) => esNotFound('aliases_not_found_exception', `alias [${c.params.name}] missing`));
  route(['GET', 'HEAD'], '/**', (c) => {
    throw notFound(`no handler for ${c.path.slice(SHIPPER_BASE.length) || '/'} on the shipper endpoint`, { headers: { ...PRODUCT_HEADERS } });
  });
}
