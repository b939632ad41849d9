/**
 * The kernel's ScopeResolver: turns a principal's effective policies into the label filters
 * every query path pushes down to storage. Decisions are cached per principal and stream; the
 * cache is dropped whenever policies, mappings, teams or memberships change.
 */
import type { Principal } from '../../kernel/auth.js';
import type { LookoutConfig } from '../../kernel/config.js';
import type { SignalStream } from '../../kernel/extension-points.js';
import type { MatcherAlternatives } from '../../kernel/matchers.js';
import type { ScopeResolver } from '../../kernel/services.js';
import type { AllowedLabels } from './allowed-labels.js';
import { grantFor } from './evaluate.js';
import type { Policy } from './model.js';
import type { RbacStore } from './store.js';

const NOTHING: MatcherAlternatives = Object.freeze([]) as MatcherAlternatives;
const MAX_CACHED_PRINCIPALS = 10_000;

/** Direct policies plus those of every team the user is in (the store's and the principal's). */
export function policiesOfPrincipal(store: RbacStore, p: Principal): Policy[] {
  if (p.kind === 'service_account') return store.directPolicies('service_account', p.name);
  if (p.kind !== 'user') return [];
  const email = store.canonicalEmail(p.name) ?? p.name;
  const out = store.directPolicies('user', email);
  const seen = new Set(out.map((x) => x.name));
  const teams = new Set([...store.teamsOf(email), ...p.teams]);
  for (const t of teams) {
    for (const pol of store.directPolicies('group', t)) {
      if (!seen.has(pol.name)) {
        seen.add(pol.name);
        out.push(pol);
      }
    }
  }
  return out;
}

export class CachedScopeResolver implements ScopeResolver {
  private readonly cache = new Map<string, Map<SignalStream, MatcherAlternatives | undefined>>();

  constructor(
    private readonly store: RbacStore,
    private readonly config: LookoutConfig,
    private readonly allowed: AllowedLabels,
  ) {
    store.onChange(() => this.cache.clear());
  }

  async scopeFor(principal: Principal, stream: SignalStream): Promise<MatcherAlternatives | undefined> {
    return this.resolve(principal, stream);
  }

  /** Synchronous form; the store snapshot makes resolution pure computation. */
  resolve(principal: Principal, stream: SignalStream): MatcherAlternatives | undefined {
    if (!this.config.rbac.enabled || principal.role === 'Admin') return undefined;
    const key = `${principal.kind}\u0000${principal.name}\u0000${[...principal.teams].sort().join('\u0000')}`;
    let perStream = this.cache.get(key);
    if (perStream?.has(stream)) return perStream.get(stream);
    const granted = grantFor(policiesOfPrincipal(this.store, principal), stream, this.allowed);
    const scope = granted !== null ? granted : this.config.rbac.defaultPolicy === 'allow' ? undefined : NOTHING;
    if (!perStream) {
      if (this.cache.size >= MAX_CACHED_PRINCIPALS) this.cache.clear();
      this.cache.set(key, (perStream = new Map()));
    }
    perStream.set(stream, scope);
    return scope;
  }
}
