/**
 * The `api-prometheus` plugin: the Prometheus HTTP API (queries, metadata, status) over the
 * storage interfaces and the query-promql engine, also mounted under the dashboards
 * component's datasource proxy path so Grafana can be pointed at either.
 */
import type { HttpMethod, RequestContext } from '../../kernel/http/routes.js';
import { definePlugin } from '../../kernel/plugin.js';
import { DATASOURCE_PROXY_BASE, PROMETHEUS_DATASOURCE_UID } from '../dashboards/index.js';
import { MetadataApi } from './metadata-api.js';
import { QueryApi } from './query-api.js';
import { StatusApi } from './status-api.js';
import { tsdbStatus } from './tsdb-status.js';

/** Where the Prometheus API is additionally reachable (OPERATIONS.md, dashboards component). */
export const PROMETHEUS_PROXY_PREFIX = `${DATASOURCE_PROXY_BASE}/${PROMETHEUS_DATASOURCE_UID}`;

const GET_POST: readonly HttpMethod[] = ['GET', 'POST'];

export default definePlugin({
  name: 'api-prometheus',
  description: 'Prometheus HTTP API: /api/v1/query, query_range, series, labels, metadata, status.',
  register(ctx) {
    const query = new QueryApi(ctx);
    const meta = new MetadataApi(ctx);
    const status = new StatusApi(ctx.config);
    const mount = (method: HttpMethod | readonly HttpMethod[], path: string, handler: (r: RequestContext) => unknown) =>
      ctx.route({
        method,
        path: [path, PROMETHEUS_PROXY_PREFIX + path],
        family: 'prometheus',
        auth: 'bearer',
        handler,
      });

    mount(GET_POST, '/api/v1/query', (r) => query.instant(r));
    mount(GET_POST, '/api/v1/query_range', (r) => query.range(r));
    mount(GET_POST, '/api/v1/format_query', (r) => query.format(r));
    mount(GET_POST, '/api/v1/parse_query', (r) => query.parse(r));
    mount(GET_POST, '/api/v1/query_exemplars', (r) => query.exemplars(r));
    mount(GET_POST, '/api/v1/series', (r) => meta.series(r));
    mount(GET_POST, '/api/v1/labels', (r) => meta.labels(r));
    mount(GET_POST, '/api/v1/label/:name/values', (r) => meta.labelValues(r));
    mount(GET_POST, '/api/v1/metadata', (r) => meta.metadata(r));
    mount('GET', '/api/v1/status/buildinfo', () => status.buildinfo());
    mount('GET', '/api/v1/status/config', () => status.configYaml());
    mount('GET', '/api/v1/status/runtimeinfo', () => status.runtimeinfo());
    mount('GET', '/api/v1/status/flags', () => status.flags());
    mount('GET', '/api/v1/status/tsdb', (r) => tsdbStatus(ctx, r));
    mount('GET', '/api/v1/rules', () => status.rules());
    mount('GET', '/api/v1/alerts', () => status.alerts());
    mount('GET', '/api/v1/targets', () => status.targets());
    mount('GET', '/api/v1/alertmanagers', () => status.alertmanagers());
  },
});
