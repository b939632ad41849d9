/**
 * Typed tokens of the kernel's services and extension-point registries.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Principal } from './auth.js';
import type { Clock } from './clock.js';
import type { LookoutConfig, ServiceAccountConfig, UserConfig } from './config.js';
import type { Archive, QueryLanguage, SignalStream } from './extension-points.js';
import type { IngestPipeline } from './ingest.js';
import type { Logger } from './logger.js';
import type { MatcherAlternatives } from './matchers.js';
import type { MetricsRegistry } from './metrics-registry.js';
import type { StorageBackend } from './storage.js';
import { createToken } from './tokens.js';

/**
 * Decides what a principal may read: the one place where authorization of queries happens.
 * `undefined` = unrestricted; `[]` = nothing.
 */
export interface ScopeResolver {
  scopeFor(principal: Principal, stream: SignalStream): Promise<MatcherAlternatives | undefined>;
}

/** Users and service accounts known to the system (from config). */
export interface IdentityDirectory {
  users(): readonly UserConfig[];
  serviceAccounts(): readonly ServiceAccountConfig[];
  userByEmail(email: string): UserConfig | undefined;
  serviceAccount(name: string): ServiceAccountConfig | undefined;
}

/** Bearer-token authentication outside HTTP routes (e.g. a WebSocket `connection_init`). */
export interface BearerAuthenticator {
  authenticateBearer(token: string, headers?: IncomingHttpHeaders): Promise<Principal | undefined>;
}

export interface ArchiveRegistry {
  names(): string[];
  get(name: string): Archive | undefined;
}

export interface QueryLanguageRegistry {
  get<L extends QueryLanguage = QueryLanguage>(name: string): L | undefined;
  names(): string[];
}

export const Tokens = {
  Config: createToken<LookoutConfig>('config'),
  Logger: createToken<Logger>('logger'),
  Clock: createToken<Clock>('clock'),
  Metrics: createToken<MetricsRegistry>('metrics'),
  Storage: createToken<StorageBackend>('storage'),
  Ingest: createToken<IngestPipeline>('ingest'),
  ScopeResolver: createToken<ScopeResolver>('scope-resolver'),
  Identities: createToken<IdentityDirectory>('identities'),
  Archives: createToken<ArchiveRegistry>('archives'),
  QueryLanguages: createToken<QueryLanguageRegistry>('query-languages'),
  Authenticator: createToken<BearerAuthenticator>('authenticator'),
} as const;
