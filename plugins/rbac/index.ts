/**
 * The rbac plugin: SPEC.md "RBAC policies" (policies, mappings, effective policies, allowed
 * labels), persisted in the MetaStore, and the kernel's ScopeResolver — the one place where a
 * principal's read access to each stream is decided. Teams live in the same store and are served
 * by the teams plugin.
 */
import { hasRole, type Principal } from '../../kernel/auth.js';
import type { LookoutConfig } from '../../kernel/config.js';
import { forbidden } from '../../kernel/errors.js';
import { definePlugin } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import { resolveAllowedLabels } from './allowed-labels.js';
import { registerRbacRoutes } from './routes.js';
import { CachedScopeResolver } from './scope-resolver.js';
import { createRbacService, RbacToken, type RbacService } from './service.js';
import { RbacStore } from './store.js';

export { RbacToken, type RbacService } from './service.js';
export { adminRoute } from './routes.js';
export type * from './model.js';

/**
 * The rule for mutating hydration operations (SPEC.md "Authentication" 5): with RBAC enabled,
 * starting, pausing, resuming and canceling hydration jobs needs the Admin role. Throws the
 * 403 error; returns normally when allowed.
 */
export function requireAdminForHydration(principal: Principal, config: Pick<LookoutConfig, 'rbac'>): void {
  if (config.rbac.enabled && !hasRole(principal, 'Admin')) throw forbidden('Forbidden');
}

export default definePlugin({
  name: 'rbac',
  description: 'RBAC policies, assignments and effective policies; decides every query scope.',
  register(ctx) {
    const allowed = resolveAllowedLabels(ctx.options.allowedLabels);
    const identities = ctx.get(Tokens.Identities);
    const clock = ctx.get(Tokens.Clock);
    const store = new RbacStore(identities, () => clock.now());
    const resolver = new CachedScopeResolver(store, ctx.config, allowed);
    const service: RbacService = createRbacService(store, allowed, resolver, identities);
    ctx.provide(RbacToken, service);
    ctx.provide(Tokens.ScopeResolver, resolver);
    registerRbacRoutes(ctx, () => service);
    ctx.onStart(() => store.open(ctx.get(Tokens.Storage).meta));
  },
});
