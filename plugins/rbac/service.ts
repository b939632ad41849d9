/**
 * What the rbac plugin shares with the teams plugin (and any other plugin that needs to ask
 * about policies): the store, the allowed labels and effective-policy computation.
 */
import { notFound } from '../../kernel/errors.js';
import { createToken } from '../../kernel/tokens.js';
import type { AllowedLabels } from './allowed-labels.js';
import { effectivePolicies } from './evaluate.js';
import type { EffectivePolicies, EntityType, Policy } from './model.js';
import type { CachedScopeResolver } from './scope-resolver.js';
import { policiesOfPrincipal } from './scope-resolver.js';
import type { RbacStore } from './store.js';
import type { IdentityDirectory } from '../../kernel/services.js';

export interface RbacService {
  readonly store: RbacStore;
  readonly allowedLabels: AllowedLabels;
  readonly resolver: CachedScopeResolver;
  /** SPEC.md "Effective policies" of a team, user or service account; 404 when it does not exist. */
  effective(type: EntityType, name: string): EffectivePolicies;
}

export const RbacToken = createToken<RbacService>('rbac');

export function createRbacService(
  store: RbacStore,
  allowedLabels: AllowedLabels,
  resolver: CachedScopeResolver,
  identities: IdentityDirectory,
): RbacService {
  return {
    store,
    allowedLabels,
    resolver,
    effective(type, name) {
      let direct: Policy[];
      let total: Policy[];
      let entity = name;
      switch (type) {
        case 'group':
          if (!store.team(name)) throw notFound(`team "${name}" not found`);
          direct = total = store.directPolicies('group', name);
          break;
        case 'service_account': {
          const sa = identities.serviceAccount(name);
          if (!sa) throw notFound(`service account "${name}" not found`);
          direct = total = store.directPolicies('service_account', name);
          break;
        }
        case 'user': {
          const u = identities.userByEmail(name);
          if (!u) throw notFound(`user "${name}" not found`);
          entity = u.email;
          direct = store.directPolicies('user', u.email);
          total = policiesOfPrincipal(store, { kind: 'user', name: u.email, role: u.role, teams: [] });
          break;
        }
      }
      return effectivePolicies(entity, type, direct, total, allowedLabels);
    },
  };
}
