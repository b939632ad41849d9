/**
 * Principals and the AuthProvider extension point. The kernel asks providers in registration
 * order; the first that recognises the credentials decides.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Role } from './config.js';

export type { Role };

export type PrincipalKind = 'service_account' | 'user' | 'ingest' | 'anonymous';

export interface Principal {
  kind: PrincipalKind;
  /** Service account name, user e-mail, or "ingest". */
  name: string;
  role: Role;
  email?: string;
  login?: string;
  displayName?: string;
  /** Team names (filled by the teams plugin's enricher, when enabled). */
  teams: string[];
}

/** Header families of SPEC.md's ingestion authentication table. */
export type IngestAuthFamily = 'svc' | 'compat' | 'remote-write' | 'firehose';

export type AuthInput =
  | { scheme: 'bearer'; token: string; headers: IncomingHttpHeaders }
  | { scheme: 'ingest'; family: IngestAuthFamily; headers: IncomingHttpHeaders };

/** `null`: not mine, ask the next provider. `'invalid'`: credentials present but wrong. */
export type AuthOutcome = Principal | 'invalid' | null;

export interface AuthProvider {
  readonly name: string;
  authenticate(input: AuthInput): AuthOutcome | Promise<AuthOutcome>;
}

/** Adds facts (e.g. team membership) to a principal after authentication. */
export type PrincipalEnricher = (p: Principal) => Principal | Promise<Principal>;

const ROLE_RANK: Record<Role, number> = { Viewer: 1, Editor: 2, Admin: 3 };
export function hasRole(p: Principal, min: Role): boolean {
  return ROLE_RANK[p.role] >= ROLE_RANK[min];
}

/**
 * Constant-time comparison of secrets. Both sides are hashed first so neither the length nor
 * the content of the expected secret leaks through timing.
 */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

/** The token from `Authorization: Bearer <token>`, or undefined. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const h = headers.authorization;
  if (!h) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(h.trim());
  return m ? m[1]!.trim() : undefined;
}
