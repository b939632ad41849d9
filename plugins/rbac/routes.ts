/**
 * SPEC.md "RBAC policies" under /rbac: policies, mappings, effective policies of users and
 * service accounts, allowed labels. Every route needs the Admin role (the kernel answers 401/403).
 */
import { badRequest, notFound } from '../../kernel/errors.js';
import { HttpResponse, type RequestContext, type RouteDefinition } from '../../kernel/http/routes.js';
import type { PluginContext } from '../../kernel/plugin.js';
import type { RbacService } from './service.js';
import { isObject, parseEntityType, parsePolicy, requireString } from './validate.js';

type Route = Omit<RouteDefinition, 'family' | 'auth' | 'minRole'>;

export function adminRoute(ctx: PluginContext, r: Route): void {
  ctx.route({ ...r, family: 'json', auth: 'bearer', minRole: 'Admin' });
}

async function jsonObject(req: RequestContext): Promise<Record<string, unknown>> {
  const raw = await req.body();
  if (raw.length === 0) throw badRequest('request body must be a JSON object');
  const body = await req.json<unknown>();
  if (!isObject(body)) throw badRequest('request body must be a JSON object');
  return body;
}

export function registerRbacRoutes(ctx: PluginContext, rbac: () => RbacService): void {
  adminRoute(ctx, {
    method: 'GET',
    path: '/rbac/policies',
    handler: () => ({ policies: rbac().store.policies() }),
  });

  adminRoute(ctx, {
    method: 'POST',
    path: '/rbac/policies',
    handler: async (req) => {
      const policy = parsePolicy(await jsonObject(req), rbac().allowedLabels);
      return HttpResponse.json(await rbac().store.createPolicy(policy), 201);
    },
  });

  adminRoute(ctx, {
    method: 'GET',
    path: '/rbac/policies/:name',
    handler: (req) => {
      const p = rbac().store.policy(req.params.name!);
      if (!p) throw notFoundPolicy(req.params.name!);
      return p;
    },
  });

  adminRoute(ctx, {
    method: 'PUT',
    path: '/rbac/policies/:name',
    handler: async (req) => {
      const name = req.params.name!;
      const body = await jsonObject(req);
      // The body may leave the name out; when it gives one it must be the path's (no renames).
      if (body.name === undefined) body.name = name;
      const policy = parsePolicy(body, rbac().allowedLabels);
      if (policy.name !== name) {
        throw badRequest(`policy name in body "${policy.name}" does not match the path "${name}"; renaming requires delete and recreate`);
      }
      return rbac().store.replacePolicy(policy);
    },
  });

  adminRoute(ctx, {
    method: 'DELETE',
    path: '/rbac/policies/:name',
    handler: async (req) => {
      await rbac().store.deletePolicy(req.params.name!);
      return HttpResponse.empty(204);
    },
  });

  adminRoute(ctx, {
    method: 'GET',
    path: '/rbac/policies/:name/mappings',
    handler: (req) => {
      const name = req.params.name!;
      if (!rbac().store.policy(name)) throw notFoundPolicy(name);
      return { mappings: rbac().store.mappingsOf(name) };
    },
  });

  adminRoute(ctx, {
    method: 'POST',
    path: '/rbac/policies/:name/mappings',
    handler: async (req) => {
      const name = req.params.name!;
      const body = await jsonObject(req);
      if (body.policy_name !== undefined && body.policy_name !== name) {
        throw badRequest(`policy_name in body ${JSON.stringify(body.policy_name)} does not match the path "${name}"`);
      }
      const type = parseEntityType(body.entity_type);
      const entity = requireString(body, 'entity_name');
      const m = await rbac().store.addMapping(name, type, entity);
      return HttpResponse.json(
        {
          message: `policy "${name}" assigned to ${type} "${m.entity_name}"`,
          policy_name: m.policy_name,
          entity_type: m.entity_type,
          entity_name: m.entity_name,
        },
        201,
      );
    },
  });

  adminRoute(ctx, {
    method: 'DELETE',
    path: '/rbac/policies/:name/mappings/:entity_type/:entity_name',
    handler: async (req) => {
      const type = parseEntityType(req.params.entity_type);
      await rbac().store.deleteMapping(req.params.name!, type, req.params.entity_name!);
      return HttpResponse.empty(204);
    },
  });

  adminRoute(ctx, {
    method: 'GET',
    path: '/rbac/users/:email/effective-policies',
    handler: (req) => rbac().effective('user', req.params.email!),
  });

  adminRoute(ctx, {
    method: 'GET',
    path: '/rbac/service-accounts/:name/effective-policies',
    handler: (req) => rbac().effective('service_account', req.params.name!),
  });

  adminRoute(ctx, {
    method: 'GET',
    path: '/rbac/allowed-labels',
    handler: () => rbac().allowedLabels,
  });
}

function notFoundPolicy(name: string) {
  return notFound(`policy "${name}" not found`);
}
