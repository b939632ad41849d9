/**
 * The kernel: an inversify container holding the kernel services, the plugin loader, the HTTP
 * app and the lifecycle (start, graceful stop).
 */
import 'reflect-metadata';
import { Container } from 'inversify';
import { createServer, type Server } from 'node:http';
import { mkdirSync, readFileSync, writeFileSync, existsSync, chmodSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, resolve as resolvePath } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { AuthProvider, PrincipalEnricher } from './auth.js';
import { systemClock, type Clock } from './clock.js';
import type { LookoutConfig } from './config.js';
import type {
  Archive,
  ArchiveSourceDefinition,
  QueryLanguage,
  ReceiverDefinition,
  StorageBackendDefinition,
} from './extension-points.js';
import { HttpResponse, HttpRoutes } from './http/routes.js';
import { IngestPipeline } from './ingest.js';
import { importPluginModule, orderPlugins, selectPlugins, isModuleSpecifier, PluginLoadError } from './loader.js';
import { createLogger, type Logger } from './logger.js';
import { MetricsRegistry } from './metrics-registry.js';
import type { PluginContext, PluginDefinition, UpgradeHandler } from './plugin.js';
import { Tokens, type IdentityDirectory, type ScopeResolver } from './services.js';
import type { StorageBackend } from './storage.js';
import type { Token } from './tokens.js';

export interface KernelOptions {
  config: LookoutConfig;
  /** Every first-party plugin (the set `*` enables). */
  firstParty: readonly PluginDefinition[];
  /** Extra plugin definitions given programmatically (tests, embedding). */
  extraPlugins?: readonly PluginDefinition[];
  /** Directory that relative plugin paths resolve against (default: cwd). */
  baseDir?: string;
  logger?: Logger;
  clock?: Clock;
}

export interface StartedServer {
  url: string;
  port: number;
  host: string;
}

/** Where the bootstrap admin token lives, when one was generated. */
export function adminTokenPath(dataDir: string): string {
  return join(dataDir, 'admin-token');
}

export class Kernel {
  readonly container = new Container();
  readonly config: LookoutConfig;
  readonly logger: Logger;
  readonly metrics = new MetricsRegistry();
  readonly http: HttpRoutes;
  readonly ingest: IngestPipeline;
  /** Set when the kernel generated (or reused) an admin token file. */
  adminTokenFile: string | undefined;
  plugins: PluginDefinition[] = [];

  private readonly authProviders: AuthProvider[] = [];
  private readonly enrichers: PrincipalEnricher[] = [];
  private readonly storageDefs = new Map<string, StorageBackendDefinition>();
  private readonly archiveSources = new Map<string, ArchiveSourceDefinition>();
  private readonly archives = new Map<string, Archive>();
  private readonly languages = new Map<string, QueryLanguage>();
  private readonly starters: Array<{ plugin: string; fn: () => void | Promise<void> }> = [];
  private readonly stoppers: Array<{ plugin: string; fn: () => void | Promise<void> }> = [];
  private readonly upgrades = new Map<string, UpgradeHandler>();
  private storage: StorageBackend | undefined;
  private server: Server | undefined;
  private ready = false;
  private stopping: Promise<void> | undefined;

  constructor(private readonly opts: KernelOptions) {
    this.config = opts.config;
    this.logger = opts.logger ?? createLogger(opts.config.log.level);
    this.http = new HttpRoutes({
      logger: this.logger,
      metrics: this.metrics,
      maxBodyBytes: this.config.limits.maxBodyBytes,
      accessLog: this.config.log.access,
      authProviders: () => this.authProviders,
      enrichers: () => this.enrichers,
    });
    this.ingest = new IngestPipeline(this.config, () => this.getStorage(), this.logger, this.metrics);
    this.bind(Tokens.Config, this.config);
    this.bind(Tokens.Logger, this.logger);
    this.bind(Tokens.Clock, opts.clock ?? systemClock);
    this.bind(Tokens.Metrics, this.metrics);
    this.bind(Tokens.Ingest, this.ingest);
    this.bind(Tokens.ScopeResolver, { scopeFor: async () => undefined } satisfies ScopeResolver);
    this.bind(Tokens.Identities, identityDirectory(this.config));
    this.bind(Tokens.Archives, {
      names: () => [...this.archives.keys()],
      get: (n: string) => this.archives.get(n),
    });
    this.bind(Tokens.QueryLanguages, {
      get: <L extends QueryLanguage>(n: string) => this.languages.get(n) as L | undefined,
      names: () => [...this.languages.keys()],
    });
    this.bind(Tokens.Authenticator, { authenticateBearer: (t, h) => this.http.authenticateBearer(t, h) });
    this.registerKernelRoutes();
  }

  bind<T>(token: Token<T>, value: T): void {
    if (this.container.isBound(token.id)) this.container.unbind(token.id);
    this.container.bind<T>(token.id).toConstantValue(value);
  }

  get<T>(token: Token<T>): T {
    if (!this.container.isBound(token.id)) throw new Error(`service "${token.name}" is not available`);
    return this.container.get<T>(token.id);
  }

  tryGet<T>(token: Token<T>): T | undefined {
    return this.container.isBound(token.id) ? this.container.get<T>(token.id) : undefined;
  }

  getStorage(): StorageBackend {
    if (!this.storage) throw new Error('storage is not open yet');
    return this.storage;
  }

  /** Loads, orders and registers plugins, opens storage and runs every plugin's onStart. */
  async init(): Promise<void> {
    const baseDir = this.opts.baseDir ?? process.cwd();
    this.bootstrapAdminToken();
    const third: PluginDefinition[] = [];
    const firstPartyNames = new Set(this.opts.firstParty.map((p) => p.name));
    const moduleEntries = new Set<string>();
    for (const entry of this.config.plugins) {
      if (entry === '*' || entry.startsWith('-')) continue;
      // A bare name that no first-party plugin has is an npm package name.
      if (isModuleSpecifier(entry) || !firstPartyNames.has(entry)) {
        moduleEntries.add(entry);
        third.push(...(await importPluginModule(entry, baseDir)));
      }
    }
    third.push(...(this.opts.extraPlugins ?? []));
    this.plugins = orderPlugins(selectPlugins(this.config.plugins, this.opts.firstParty, third, moduleEntries));
    for (const p of this.plugins) await p.register(this.contextFor(p));
    await this.openStorage();
    for (const cfg of this.config.archives) {
      const src = this.archiveSources.get(cfg.type);
      if (src) this.archives.set(cfg.name, src.open(cfg, { dataDir: this.config.dataDir, logger: this.logger }));
    }
    for (const s of this.starters) {
      try {
        await s.fn();
      } catch (e) {
        throw new PluginLoadError(`plugin "${s.plugin}" failed to start: ${(e as Error).message}`);
      }
    }
    this.ready = true;
  }

  private async openStorage(): Promise<void> {
    const name = this.config.storage.backend;
    const def = this.storageDefs.get(name);
    if (!def) {
      const known = [...this.storageDefs.keys()].join(', ') || 'none enabled';
      throw new PluginLoadError(`storage.backend "${name}" is not provided by any enabled plugin (available: ${known})`);
    }
    mkdirSync(this.config.dataDir, { recursive: true });
    this.storage = await def.create({ config: this.config, logger: this.logger, dataDir: this.config.dataDir });
    this.bind(Tokens.Storage, this.storage);
    const st = this.storage;
    if (st.dropped) {
      this.metrics
        .counter('lookout_storage_dropped_total', 'Samples or records storage dropped, by reason.')
        .collect(() => Object.entries(st.dropped!()).map(([reason, v]) => [{ reason }, v]));
    }
    if (st.sizes) {
      this.metrics
        .gauge('lookout_storage_bytes', 'Bytes used by storage, by signal.')
        .collect(() => Object.entries(st.sizes!()).map(([signal, v]) => [{ signal }, v]));
    }
  }

  private contextFor(p: PluginDefinition): PluginContext {
    const logger = this.logger.child({ plugin: p.name });
    return {
      name: p.name,
      config: this.config,
      options: this.config.pluginOptions[p.name] ?? {},
      logger,
      get: (t) => this.get(t),
      tryGet: (t) => this.tryGet(t),
      provide: (t, v) => this.bind(t, v),
      route: (def) => this.http.route(p.name, def),
      extensions: {
        receiver: (def: ReceiverDefinition) => this.ingest.mount(this.http, p.name, def),
        queryLanguage: (lang) => {
          this.languages.set(lang.name, lang);
        },
        storageBackend: (def) => {
          this.storageDefs.set(def.name, def);
        },
        archiveSource: (def) => {
          this.archiveSources.set(def.type, def);
        },
        authProvider: (prov) => {
          this.authProviders.push(prov);
        },
        principalEnricher: (fn) => {
          this.enrichers.push(fn);
        },
      },
      onStart: (fn) => this.starters.push({ plugin: p.name, fn }),
      onStop: (fn) => this.stoppers.push({ plugin: p.name, fn }),
      onUpgrade: (path, handler) => {
        this.upgrades.set(path, handler);
      },
    };
  }

  /**
   * With no Admin credential configured, generates one into `<dataDir>/admin-token` (mode 0600),
   * or reuses the file from an earlier start.
   */
  private bootstrapAdminToken(): void {
    if (this.config.auth.serviceAccounts.some((s) => s.role === 'Admin')) return;
    const dir = resolvePath(this.config.dataDir);
    mkdirSync(dir, { recursive: true });
    const file = adminTokenPath(dir);
    let token: string;
    if (existsSync(file)) {
      token = readFileSync(file, 'utf8').trim();
    } else {
      token = 'lk_' + randomBytes(24).toString('base64url');
      writeFileSync(file, token + '\n', { mode: 0o600 });
    }
    chmodSync(file, 0o600);
    this.config.auth.serviceAccounts = [
      ...this.config.auth.serviceAccounts,
      { name: 'admin', token, role: 'Admin' },
    ];
    this.adminTokenFile = file;
  }

  private registerKernelRoutes(): void {
    this.http.route('kernel', {
      method: 'GET',
      path: '/metrics',
      family: 'plain',
      auth: 'none',
      handler: () =>
        new HttpResponse(200, this.metrics.expose(), { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }),
    });
    this.http.route('kernel', {
      method: ['GET', 'HEAD'],
      path: '/-/healthy',
      family: 'plain',
      auth: 'none',
      handler: () => HttpResponse.text('Lookout is Healthy.\n'),
    });
    this.http.route('kernel', {
      method: ['GET', 'HEAD'],
      path: '/-/ready',
      family: 'plain',
      auth: 'none',
      handler: () =>
        this.ready && !this.stopping
          ? HttpResponse.text('Lookout is Ready.\n')
          : HttpResponse.text('Service Unavailable\n', 503),
    });
  }

  /** Starts listening. Call after {@link init}. */
  async listen(): Promise<StartedServer> {
    const server = createServer({ keepAliveTimeout: 65_000 }, this.http.nodeListener());
    this.server = server;
    server.on('upgrade', (req, socket, head) => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      const h = this.stopping ? undefined : this.upgrades.get(path);
      if (h) h.handle(req, socket, head);
      else socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    });
    await new Promise<void>((res, rej) => {
      server.once('error', rej);
      server.listen(this.config.server.port, this.config.server.host, () => {
        server.off('error', rej);
        res();
      });
    });
    const addr = server.address() as AddressInfo;
    const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    return { url: `http://${host}:${addr.port}`, port: addr.port, host: addr.address };
  }

  /** The node server (for WebSocket upgrades). */
  nodeServer(): Server | undefined {
    return this.server;
  }

  /**
   * Graceful stop: refuse new connections, let in-flight requests finish (up to `drainMs`),
   * stop plugins in reverse order, flush and close storage.
   */
  stop(drainMs = 10_000): Promise<void> {
    this.stopping ??= (async () => {
      const server = this.server;
      if (server) {
        const closed = new Promise<void>((res) => server.close(() => res()));
        server.closeIdleConnections();
        for (const [path, h] of this.upgrades) {
          try {
            await h.close();
          } catch (e) {
            this.logger.warn('upgrade handler close failed', { path, err: e });
          }
        }
        // Keep-alive connections become idle as their requests finish: close them as they do.
        const idle = setInterval(() => server.closeIdleConnections(), 50);
        const timer = setTimeout(() => {
          this.http.abortAll();
          server.closeAllConnections();
        }, drainMs);
        await closed;
        clearInterval(idle);
        clearTimeout(timer);
      }
      for (const s of [...this.stoppers].reverse()) {
        try {
          await s.fn();
        } catch (e) {
          this.logger.warn('plugin stop failed', { plugin: s.plugin, err: e });
        }
      }
      if (this.storage) {
        await this.storage.flush();
        await this.storage.close();
      }
    })();
    return this.stopping;
  }
}

function identityDirectory(config: LookoutConfig): IdentityDirectory {
  return {
    users: () => config.auth.users,
    serviceAccounts: () => config.auth.serviceAccounts,
    userByEmail: (email) => config.auth.users.find((u) => u.email.toLowerCase() === email.toLowerCase()),
    serviceAccount: (name) => config.auth.serviceAccounts.find((s) => s.name === name),
  };
}
