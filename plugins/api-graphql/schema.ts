/**
 * Assembles the executable schema from every plugin's contribution: one SDL document, then each
 * root field gets its resolver wrapped in a guard that maps whatever it throws to GRAPHQL.md's
 * error shape for that field's component.
 */
import {
  buildSchema,
  GraphQLObjectType,
  GraphQLScalarType,
  type GraphQLFieldResolver,
  type GraphQLSchema,
} from 'graphql';
import type { Logger } from '../../kernel/logger.js';
import type { GraphQLComponent, GraphQLContribution, RootType } from './contributions.js';
import type { GraphQLRequestContext } from './context.js';
import { toFieldError } from './errors.js';

/** Scalars shared by every contribution. Both take any literal: resolvers check Time values so
 * that a bad one is BAD_USER_INPUT on the field, not a document validation error. */
const BASE_TYPEDEFS = /* GraphQL */ `
scalar JSON
scalar Time
`;

export interface BuiltSchema {
  schema: GraphQLSchema;
  /** Root field name → component, for errors raised outside resolvers (timeouts). */
  components: ReadonlyMap<string, GraphQLComponent>;
}

type Resolver = GraphQLFieldResolver<unknown, GraphQLRequestContext, Record<string, unknown>>;

function guard(fn: Resolver, component: GraphQLComponent, logger: Logger): Resolver {
  return async (source, args, ctx, info) => {
    try {
      return await fn(source, args, ctx, info);
    } catch (e) {
      throw toFieldError(e, component, ctx?.logger ?? logger);
    }
  };
}

/**
 * A subscription event is either a payload or an Error the source produced after the first
 * page; the latter becomes a `next` carrying `errors` (GRAPHQL.md).
 */
const passPayload: Resolver = (payload) => {
  if (payload instanceof Error) throw payload;
  return payload;
};

export function buildLookoutSchema(contributions: readonly GraphQLContribution[], logger: Logger): BuiltSchema {
  const sdl = [BASE_TYPEDEFS, ...contributions.map((c) => c.typeDefs)].join('\n');
  const schema = buildSchema(sdl);
  const components = new Map<string, GraphQLComponent>();
  const roots: Record<RootType, GraphQLObjectType | null | undefined> = {
    Query: schema.getQueryType(),
    Mutation: schema.getMutationType(),
    Subscription: schema.getSubscriptionType(),
  };
  for (const c of contributions) {
    for (const [rootName, fields] of Object.entries(c.fields) as [RootType, NonNullable<GraphQLContribution['fields'][RootType]>][]) {
      const root = roots[rootName];
      if (!root) throw new Error(`graphql: contribution defines ${rootName} fields but no ${rootName} type`);
      const defs = root.getFields();
      for (const [name, def] of Object.entries(fields)) {
        const field = defs[name];
        if (!field) throw new Error(`graphql: ${rootName}.${name} has a resolver but is not in the schema`);
        components.set(name, def.component);
        if (rootName === 'Subscription') {
          if (!def.subscribe) throw new Error(`graphql: Subscription.${name} needs subscribe`);
          field.subscribe = guard(def.subscribe, def.component, logger) as typeof field.subscribe;
          field.resolve = guard(def.resolve ?? passPayload, def.component, logger) as typeof field.resolve;
        } else {
          if (!def.resolve) throw new Error(`graphql: ${rootName}.${name} needs resolve`);
          field.resolve = guard(def.resolve, def.component, logger) as typeof field.resolve;
        }
      }
    }
    for (const [typeName, resolvers] of Object.entries(c.types ?? {})) {
      const type = schema.getType(typeName);
      if (!(type instanceof GraphQLObjectType)) throw new Error(`graphql: no object type ${typeName}`);
      const defs = type.getFields();
      for (const [name, fn] of Object.entries(resolvers)) {
        const field = defs[name];
        if (!field) throw new Error(`graphql: ${typeName}.${name} is not in the schema`);
        field.resolve = fn as typeof field.resolve;
      }
    }
  }
  // Every root field must be served by someone: an unresolved one would silently return null.
  for (const [rootName, root] of Object.entries(roots)) {
    if (!root) continue;
    for (const name of Object.keys(root.getFields())) {
      if (!components.has(name)) throw new Error(`graphql: ${rootName}.${name} has no resolver`);
    }
  }
  const json = schema.getType('JSON');
  if (json instanceof GraphQLScalarType) json.description = 'Any JSON value.';
  const time = schema.getType('Time');
  if (time instanceof GraphQLScalarType) time.description = 'ISO 8601 time with offset, e.g. 2025-11-22T10:00:00Z.';
  return { schema, components };
}
