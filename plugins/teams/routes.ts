/**
 * SPEC.md "Teams" under /rbac/groups. Everything needs the Admin role, except the membership
 * routes, which a user who is an Admin member of that team may also use (SPEC.md "Team member":
 * a team Admin can manage the team's membership).
 */
import { hasRole, type Principal } from '../../kernel/auth.js';
import { badRequest, forbidden, notFound } from '../../kernel/errors.js';
import { HttpResponse, type RequestContext } from '../../kernel/http/routes.js';
import type { PluginContext } from '../../kernel/plugin.js';
import { adminRoute, type RbacService } from '../rbac/index.js';
import { MEMBER_ROLES, type MemberRole } from '../rbac/model.js';

/** Global Admin, or a user who is an Admin member of the team. */
export function mayManageMembers(rbac: RbacService, principal: Principal, team: string): boolean {
  if (hasRole(principal, 'Admin')) return true;
  return principal.kind === 'user' && rbac.store.memberRole(team, principal.name) === 'Admin';
}

function teamOr404(rbac: RbacService, name: string) {
  const t = rbac.store.team(name);
  if (!t) throw notFound(`team "${name}" not found`);
  return t;
}

async function parseRole(req: RequestContext): Promise<MemberRole> {
  const raw = await req.body();
  if (raw.length === 0) throw badRequest('missing required field "role"');
  const body = await req.json<unknown>();
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('request body must be a JSON object');
  const role = (body as Record<string, unknown>).role;
  if (role === undefined || role === null || role === '') throw badRequest('missing required field "role"');
  if (typeof role !== 'string' || !(MEMBER_ROLES as readonly string[]).includes(role)) {
    throw badRequest(`invalid role ${JSON.stringify(role)} (use Member or Admin)`);
  }
  return role as MemberRole;
}

export function registerTeamRoutes(ctx: PluginContext, rbac: () => RbacService): void {
  /** Membership routes: authenticated by the kernel, authorized here. */
  const memberRoute = (method: 'GET' | 'PUT' | 'DELETE', path: string, handler: (req: RequestContext) => unknown) =>
    ctx.route({
      method,
      path,
      family: 'json',
      auth: 'bearer',
      handler: (req) => {
        if (!mayManageMembers(rbac(), req.principal, req.params.team!)) throw forbidden('Forbidden');
        return handler(req);
      },
    });

  adminRoute(ctx, {
    method: 'GET',
    path: '/rbac/groups',
    handler: () => {
      const groups = rbac().store.teams();
      return { groups, total: groups.length };
    },
  });

  adminRoute(ctx, {
    method: 'POST',
    path: '/rbac/groups',
    handler: async (req) => {
      const raw = await req.body();
      const body = raw.length === 0 ? {} : await req.json<unknown>();
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('request body must be a JSON object');
      const name = (body as Record<string, unknown>).name;
      if (name === undefined || name === null || name === '') throw badRequest('missing required field "name"');
      if (typeof name !== 'string') throw badRequest('field "name" must be a string');
      return HttpResponse.json(await rbac().store.createTeam(name), 201);
    },
  });

  adminRoute(ctx, {
    method: 'GET',
    path: '/rbac/groups/:team',
    handler: (req) => teamOr404(rbac(), req.params.team!),
  });

  adminRoute(ctx, {
    method: 'DELETE',
    path: '/rbac/groups/:team',
    handler: async (req) => {
      await rbac().store.deleteTeam(req.params.team!);
      return HttpResponse.empty(204);
    },
  });

  memberRoute('GET', '/rbac/groups/:team/users', (req) => {
    teamOr404(rbac(), req.params.team!);
    return { members: rbac().store.members(req.params.team!) };
  });

  memberRoute('PUT', '/rbac/groups/:team/users/:email', async (req) => {
    const team = req.params.team!;
    teamOr404(rbac(), team);
    const role = await parseRole(req);
    const email = req.params.email!;
    const change = await rbac().store.putMember(team, email, role);
    const who = rbac().store.canonicalEmail(email) ?? email;
    return {
      message: change === 'added' ? `user ${who} added to team ${team} as ${role}` : `role of user ${who} in team ${team} set to ${role}`,
    };
  });

  memberRoute('DELETE', '/rbac/groups/:team/users/:email', async (req) => {
    const team = req.params.team!;
    const email = req.params.email!;
    await rbac().store.removeMember(team, email);
    return { message: `user ${rbac().store.canonicalEmail(email) ?? email} removed from team ${team}` };
  });

  adminRoute(ctx, {
    method: 'GET',
    path: '/rbac/groups/:team/policies',
    handler: (req) => {
      teamOr404(rbac(), req.params.team!);
      return { policies: rbac().store.directPolicies('group', req.params.team!) };
    },
  });

  adminRoute(ctx, {
    method: 'GET',
    path: '/rbac/groups/:team/effective-policies',
    handler: (req) => rbac().effective('group', req.params.team!),
  });
}
