/**
 * The plugin API. A plugin declares its name, the plugins it depends on, and registers routes,
 * services and extension-point contributions in `register`. Long-running work starts in
 * `onStart` (storage is available then) and stops in `onStop`.
 */
import type { AuthProvider, PrincipalEnricher } from './auth.js';
import type { LookoutConfig } from './config.js';
import type {
  ArchiveSourceDefinition,
  QueryLanguage,
  ReceiverDefinition,
  StorageBackendDefinition,
} from './extension-points.js';
import type { RouteDefinition } from './http/routes.js';
import type { Logger } from './logger.js';
import type { Token } from './tokens.js';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Takes over HTTP upgrade requests (WebSocket) for one exact path. `close` runs when the
 * server stops, before it waits for connections to drain: upgraded sockets are not HTTP
 * requests, so the owner must end them.
 */
export interface UpgradeHandler {
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): void | Promise<void>;
}

export interface PluginContext {
  /** This plugin's name. */
  readonly name: string;
  readonly config: LookoutConfig;
  /** `pluginOptions[name]` from config ({} when absent). */
  readonly options: Readonly<Record<string, unknown>>;
  readonly logger: Logger;
  /** Resolves a service; throws naming the token when it is not bound. */
  get<T>(token: Token<T>): T;
  tryGet<T>(token: Token<T>): T | undefined;
  /** Binds (or rebinds) a service for everyone. */
  provide<T>(token: Token<T>, value: T): void;
  /** Adds an HTTP route; the only way to serve HTTP. */
  route(def: RouteDefinition): void;
  readonly extensions: {
    receiver(def: ReceiverDefinition): void;
    queryLanguage(lang: QueryLanguage): void;
    storageBackend(def: StorageBackendDefinition): void;
    archiveSource(def: ArchiveSourceDefinition): void;
    authProvider(provider: AuthProvider): void;
    principalEnricher(fn: PrincipalEnricher): void;
  };
  /** Runs after every plugin registered and storage opened, in dependency order. */
  onStart(fn: () => void | Promise<void>): void;
  /** Runs on shutdown, in reverse dependency order, before storage is flushed and closed. */
  onStop(fn: () => void | Promise<void>): void;
  /** Handles HTTP upgrade requests (WebSocket) for an exact path; other paths are refused. */
  onUpgrade(path: string, handler: UpgradeHandler): void;
}

export interface PluginDefinition {
  name: string;
  description?: string;
  /** Plugins that must be enabled and registered before this one. */
  dependsOn?: readonly string[];
  /** Plugins registered before this one when they are enabled. */
  after?: readonly string[];
  register(ctx: PluginContext): void | Promise<void>;
}

/** Identity helper that types a plugin definition. */
export function definePlugin(def: PluginDefinition): PluginDefinition {
  return def;
}

export function isPluginDefinition(v: unknown): v is PluginDefinition {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as PluginDefinition).name === 'string' &&
    typeof (v as PluginDefinition).register === 'function'
  );
}
