/**
 * Every first-party plugin: the set that `plugins: ["*"]` enables. Add one import and one
 * array entry per plugin.
 */
import type { PluginDefinition } from '../kernel/plugin.js';
import { backendPlugins } from '../backends/index.js';
import authTokens from './auth-tokens/index.js';
import dashboards from './dashboards/index.js';
import apiGraphql from './api-graphql/index.js';
import events from './events/index.js';
import facets from './facets/index.js';
import rbac from './rbac/index.js';
import teams from './teams/index.js';
import querySvcql from './query-svcql/index.js';
import ingestOtlp from './ingest-otlp/index.js';
import ingestRemoteWrite from './ingest-remote-write/index.js';
import ingestAgent from './ingest-agent/index.js';
import ingestForwarder from './ingest-forwarder/index.js';
import ingestShipper from './ingest-shipper/index.js';
import ingestWebhooks from './ingest-webhooks/index.js';
import ingestCloudStream from './ingest-cloud-stream/index.js';
import apiPrometheus from './api-prometheus/index.js';
import apiCardinality from './api-cardinality/index.js';
import queryPromql from './query-promql/index.js';
import queryTraceql from './query-traceql/index.js';
import apiTraceSearch from './api-trace-search/index.js';
import hydration from './hydration/index.js';
import archiver from './archiver/index.js';

export const firstPartyPlugins: PluginDefinition[] = [
  ...backendPlugins,
  authTokens,
  dashboards,
  apiGraphql,
  events,
  facets,
  rbac,
  teams,
  querySvcql,
  ingestOtlp,
  ingestRemoteWrite,
  ingestAgent,
  ingestForwarder,
  ingestShipper,
  ingestWebhooks,
  ingestCloudStream,
  apiPrometheus,
  apiCardinality,
  queryPromql,
  queryTraceql,
  apiTraceSearch,
  hydration,
  archiver,
];
