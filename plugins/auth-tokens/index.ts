/**
 * Authentication from configuration: ingest API keys (in the header of each endpoint family,
 * SPEC.md "Authentication") and bearer tokens of service accounts and users.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AuthInput, AuthOutcome, IngestAuthFamily, Principal } from '../../kernel/auth.js';
import { safeEqual } from '../../kernel/auth.js';
import { definePlugin } from '../../kernel/plugin.js';
import type { LookoutConfig } from '../../kernel/config.js';

const header = (h: IncomingHttpHeaders, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * Candidate keys a request carries for its family. Real clients differ from the documented
 * header: the vendor API client sends DD-API-KEY, the search-engine client sends
 * `Authorization: ApiKey base64(id:key)` (or Basic), shippers send `<ignored>:<key>`.
 * `Authorization: Bearer` is the remote-write family's header only: accepting it elsewhere
 * would let a key in another family's documented header through (SPEC.md, Authentication).
 */
export function ingestKeyCandidates(family: IngestAuthFamily, h: IncomingHttpHeaders): string[] {
  const out: string[] = [];
  const add = (v: string | undefined) => {
    if (v) out.push(v.trim());
  };
  switch (family) {
    case 'svc': {
      const k = header(h, 'svc-api-key');
      add(k);
      if (k && k.includes(':')) add(k.slice(k.lastIndexOf(':') + 1));
      const auth = header(h, 'authorization');
      if (auth) {
        const m = /^ApiKey\s+(.+)$/i.exec(auth.trim());
        if (m) {
          const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
          add(decoded.includes(':') ? decoded.slice(decoded.indexOf(':') + 1) : decoded);
          add(m[1]);
        }
        const basic = /^Basic\s+(.+)$/i.exec(auth.trim());
        if (basic) {
          const d = Buffer.from(basic[1]!, 'base64').toString('utf8');
          add(d.slice(d.indexOf(':') + 1));
        }
      }
      break;
    }
    case 'compat':
      add(header(h, 'compat-api-key'));
      add(header(h, 'dd-api-key'));
      break;
    case 'remote-write': {
      const auth = header(h, 'authorization');
      const m = auth ? /^Bearer\s+(.+)$/i.exec(auth.trim()) : null;
      if (m) add(m[1]);
      break;
    }
    case 'firehose':
      add(header(h, 'x-cloud-firehose-access-key'));
      add(header(h, 'x-amz-firehose-access-key'));
      break;
  }
  return out;
}

const INGEST_PRINCIPAL: Principal = { kind: 'ingest', name: 'ingest', role: 'Viewer', teams: [] };

export function authenticate(config: LookoutConfig, input: AuthInput): AuthOutcome {
  if (input.scheme === 'ingest') {
    const keys = config.auth.ingestApiKeys;
    if (keys.length === 0) return INGEST_PRINCIPAL;
    const candidates = ingestKeyCandidates(input.family, input.headers);
    if (candidates.length === 0) return 'invalid';
    // Compare every candidate with every key so timing does not depend on which one matched.
    let ok = false;
    for (const c of candidates) for (const k of keys) if (safeEqual(c, k)) ok = true;
    return ok ? INGEST_PRINCIPAL : 'invalid';
  }
  let found: Principal | null = null;
  for (const sa of config.auth.serviceAccounts) {
    if (safeEqual(input.token, sa.token) && !found) {
      found = { kind: 'service_account', name: sa.name, role: sa.role, teams: [] };
    }
  }
  for (const u of config.auth.users) {
    if (u.token && safeEqual(input.token, u.token) && !found) {
      found = {
        kind: 'user',
        name: u.email,
        email: u.email,
        login: u.login,
        displayName: u.name,
        role: u.role,
        teams: [],
      };
    }
  }
  return found ?? 'invalid';
}

export default definePlugin({
  name: 'auth-tokens',
  description: 'Ingest API keys and bearer tokens from configuration.',
  register(ctx) {
    ctx.extensions.authProvider({ name: 'config-tokens', authenticate: (input) => authenticate(ctx.config, input) });
  },
});
