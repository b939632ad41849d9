/**
 * The teams plugin: SPEC.md "Teams" (groups and their members, stored by the rbac plugin's
 * store) and the principal enricher that tells every request which teams its user is in.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { RbacToken } from '../rbac/index.js';
import { registerTeamRoutes } from './routes.js';

export default definePlugin({
  name: 'teams',
  description: 'Teams (groups) and memberships; fills principal.teams for users.',
  dependsOn: ['rbac'],
  register(ctx) {
    const rbac = ctx.get(RbacToken);
    registerTeamRoutes(ctx, () => rbac);
    ctx.extensions.principalEnricher((p) =>
      p.kind === 'user' ? { ...p, teams: [...new Set([...p.teams, ...rbac.store.teamsOf(p.name)])] } : p,
    );
  },
});
