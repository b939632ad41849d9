/**
 * The embedded dashboards component's datasource list. The proxy routes under
 * `/dashboards/api/datasources/proxy/uid/<uid>/` are mounted by the query plugins themselves.
 */
import { definePlugin } from '../../kernel/plugin.js';

export const PROMETHEUS_DATASOURCE_UID = 'lookout-prometheus';
export const TRACES_DATASOURCE_UID = 'lookout-traces';
export const DATASOURCE_PROXY_BASE = '/dashboards/api/datasources/proxy/uid';

export default definePlugin({
  name: 'dashboards',
  description: 'Datasource list of the embedded dashboards component.',
  register(ctx) {
    ctx.route({
      method: 'GET',
      path: '/dashboards/api/datasources',
      family: 'json',
      auth: 'none',
      handler: () => [
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
      ],
    });
  },
});
