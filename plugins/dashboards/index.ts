/**
 * The embedded dashboards component's datasource list. The proxy routes under
 * `/dashboards/api/datasources/proxy/uid/<uid>/` are mounted by the query plugins themselves.
 *
 * Shaped like Grafana's datasource API, so the lookups Grafana users script against it work too:
 * the list, `uid/<uid>` and `name/<name>` (404 `{"message":"Data source not found"}`). Discovery
 * is open — it is how a client finds the proxy paths, and it reveals no data; every API behind
 * the proxy paths needs the bearer token (SPEC.md, Authentication rule 3).
 */
import { definePlugin } from '../../kernel/plugin.js';
import { HttpResponse } from '../../kernel/http/routes.js';

export const PROMETHEUS_DATASOURCE_UID = 'lookout-prometheus';
export const TRACES_DATASOURCE_UID = 'lookout-traces';
export const DATASOURCE_PROXY_BASE = '/dashboards/api/datasources/proxy/uid';

interface Datasource {
  id: number;
  uid: string;
  name: string;
  type: string;
  access: 'proxy';
  url: string;
  isDefault: boolean;
  jsonData: Record<string, unknown>;
}

const DATASOURCES: readonly Datasource[] = [
  {
    id: 1,
    uid: PROMETHEUS_DATASOURCE_UID,
    name: 'Lookout Prometheus',
    type: 'prometheus',
    access: 'proxy',
    url: `${DATASOURCE_PROXY_BASE}/${PROMETHEUS_DATASOURCE_UID}`,
    isDefault: true,
    jsonData: { httpMethod: 'POST' },
  },
  {
    id: 2,
    uid: TRACES_DATASOURCE_UID,
    name: 'Lookout Traces',
    type: 'tempo',
    access: 'proxy',
    url: `${DATASOURCE_PROXY_BASE}/${TRACES_DATASOURCE_UID}`,
    isDefault: false,
    jsonData: {},
  },
];

const copy = (d: Datasource): Datasource => ({ ...d, jsonData: { ...d.jsonData } });

function found(d: Datasource | undefined): Datasource | HttpResponse {
  if (d) return copy(d);
  return HttpResponse.json({ message: 'Data source not found' }, 404);
}

export default definePlugin({
  name: 'dashboards',
  description: 'Datasource list of the embedded dashboards component.',
  register(ctx) {
    ctx.route({
      method: 'GET',
      path: '/dashboards/api/datasources',
      family: 'json',
      auth: 'none',
      handler: () => DATASOURCES.map(copy),
    });
    ctx.route({
      method: 'GET',
      path: '/dashboards/api/datasources/uid/:uid',
      family: 'json',
      auth: 'none',
      handler: (r) => found(DATASOURCES.find((d) => d.uid === r.params.uid)),
    });
    ctx.route({
      method: 'GET',
      path: '/dashboards/api/datasources/name/:name',
      family: 'json',
      auth: 'none',
      handler: (r) => found(DATASOURCES.find((d) => d.name === r.params.name)),
    });
  },
});
