/**
 * The five extension points: the kernel's contract with plugins.
 */
import type { Readable } from 'node:stream';
import type { IncomingHttpHeaders } from 'node:http';
import type { AuthProvider, IngestAuthFamily, Principal } from './auth.js';
import type { ArchiveConfig, LookoutConfig } from './config.js';
import type { Logger } from './logger.js';
import type { MatcherAlternatives } from './matchers.js';
import type { IngestBatch } from './models.js';
import type { StorageBackend } from './storage.js';

export type { AuthProvider };

// ---- Receiver ---------------------------------------------------------------------------------

/** A decoded ingest request, as a receiver route sees it. */
export interface IngestRequest {
  /** Body after Content-Encoding decoding, within the size limits. */
  readonly body: Buffer;
  /** Media type without parameters, lowercased ("" when absent). */
  readonly contentType: string;
  /** Full Content-Type header (parameters included). */
  readonly contentTypeHeader: string;
  readonly headers: IncomingHttpHeaders;
  readonly query: URLSearchParams;
  readonly path: string;
  readonly principal: Principal;
}

/** A response a receiver wants sent (status defaults to 200). */
export interface IngestResponse {
  status?: number;
  body?: string | Uint8Array;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface IngestDecoded {
  batch: IngestBatch;
  /** Records the receiver dropped as invalid while accepting the rest (partial success). */
  rejected?: number;
  rejectedReason?: string;
  /** Builds the success response once storage has accepted the batch. */
  respond?: () => IngestResponse;
}

export interface ReceiverRoute {
  /** Path under `/ingester`, e.g. `/otlp/v1/logs`. */
  path: string | readonly string[];
  method?: 'POST' | 'PUT';
  /** Header family used for the ingest API key, or 'none'. */
  auth: IngestAuthFamily | 'none';
  /** Accepted media types (without parameters); others are 400 "unsupported content type". */
  contentTypes?: readonly string[];
  /** A Content-Encoding that must be present (remote write requires snappy). */
  requiredEncoding?: 'snappy';
  /**
   * The decoder reads `req.body` only until `decode` returns (or its promise settles) and keeps
   * no view of it in what it returns: the kernel may then reuse that memory for the next
   * request's decompressed body.
   */
  transientBody?: boolean;
  /**
   * Turns the request into normalized records. Throw a LookoutError (400) for malformed input;
   * nothing is written then.
   */
  decode(req: IngestRequest): IngestDecoded | Promise<IngestDecoded>;
  /** Formats an error in this protocol's shape (default: plain text). */
  formatError?(
    status: number,
    message: string,
    req: { contentType: string; /** Request headers (e.g. a request id to echo). */ headers?: IncomingHttpHeaders },
  ): IngestResponse;
}

export interface ReceiverDefinition {
  /** Family name used in metrics labels, e.g. "otlp". */
  name: string;
  routes: readonly ReceiverRoute[];
}

// ---- QueryLanguage ------------------------------------------------------------------------------

export type SignalStream = 'logs' | 'metrics' | 'events' | 'apm' | 'rum';

/** Everything a query needs besides its text: who asks, their scope, and its budget. */
export interface QueryContext {
  readonly principal: Principal;
  readonly storage: StorageBackend;
  /** RBAC scope for a stream; undefined = unrestricted. Resolved once per query. */
  scope(stream: SignalStream): Promise<MatcherAlternatives | undefined>;
  readonly signal: AbortSignal;
  /** Unix ms after which the query must stop. */
  readonly deadline: number;
}

/** Parse, plan and execute kept apart, as Prometheus and Tempo do. */
export interface QueryLanguage<Ast = unknown, Options = unknown, Result = unknown> {
  readonly name: string;
  parse(text: string): Ast;
  execute(ast: Ast, options: Options, ctx: QueryContext): Promise<Result>;
}

// ---- StorageBackend -----------------------------------------------------------------------------

export interface StorageBackendFactoryContext {
  readonly config: LookoutConfig;
  readonly logger: Logger;
  readonly dataDir: string;
}

export interface StorageBackendDefinition {
  /** Value of `storage.backend` that selects this backend. */
  name: string;
  create(ctx: StorageBackendFactoryContext): Promise<StorageBackend>;
}

// ---- ArchiveSource ------------------------------------------------------------------------------

export interface ArchiveObject {
  key: string;
  size: number;
}

export interface Archive {
  readonly name: string;
  /** Objects under one hour partition (`YYYY/MM/DD/HH/`), relative to the archive root. */
  listHour(hourStartMs: number): AsyncIterable<ArchiveObject>;
  read(key: string): Promise<Readable>;
  write?(key: string, body: Buffer): Promise<void>;
}

export interface ArchiveSourceDefinition {
  /** Archive `type` in config this source serves ("fs", "s3"). */
  type: string;
  open(cfg: ArchiveConfig, ctx: { dataDir: string; logger: Logger }): Archive;
}
