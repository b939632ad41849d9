/**
 * What every resolver sees. The transport (HTTP or WebSocket) supplies the principal, the
 * services and its abort signal; envelop plugins add the per-operation query context.
 */
import type { Principal } from '../../kernel/auth.js';
import type { QueryContext } from '../../kernel/extension-points.js';
import type { Logger } from '../../kernel/logger.js';
import type { MatcherAlternatives } from '../../kernel/matchers.js';
import type { PluginContext } from '../../kernel/plugin.js';

export type Services = Pick<PluginContext, 'get' | 'tryGet'>;

/** Set by the transport before envelop runs. */
export interface GraphQLTransportContext {
  principal: Principal | undefined;
  services: Services;
  logger: Logger;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

export interface GraphQLRequestContext extends GraphQLTransportContext {
  principal: Principal;
  /** Per-operation: RBAC scope and deadline (QUERY_TIMEOUT). */
  query: QueryContext;
  /** The principal's effective scope for a stream (resolved once per operation). */
  scope(stream: 'logs' | 'events'): Promise<MatcherAlternatives | undefined>;
  /** Operation budget in ms (30 s unless configured lower). */
  timeoutMs: number;
}
