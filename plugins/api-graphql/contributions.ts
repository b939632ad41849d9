/**
 * How plugins add operations to the one GraphQL schema at /query. The schema is assembled in
 * api-graphql's onStart from every contribution made during `register`, so a disabled plugin's
 * operations simply do not exist.
 */
import type { GraphQLFieldResolver } from 'graphql';
import { createToken } from '../../kernel/tokens.js';
import type { GraphQLRequestContext } from './context.js';

/** The `extensions.component` of errors raised by an operation. */
export type GraphQLComponent = 'graphql' | 'logs' | 'events' | 'facets';

export type RootType = 'Query' | 'Mutation' | 'Subscription';

/** A root field's resolver; `subscribe` only for Subscription fields. */
export interface RootFieldDefinition {
  component: GraphQLComponent;
  resolve?: GraphQLFieldResolver<unknown, GraphQLRequestContext, Record<string, unknown>>;
  subscribe?: GraphQLFieldResolver<unknown, GraphQLRequestContext, Record<string, unknown>>;
}

export interface GraphQLContribution {
  /** SDL: types, `extend type Query { … }`, or a full `type Mutation { … }`. */
  typeDefs: string;
  /** Root fields by type, then field name. */
  fields: Partial<Record<RootType, Record<string, RootFieldDefinition>>>;
  /** Resolvers of non-root types (rarely needed: default resolvers read properties). */
  types?: Record<string, Record<string, GraphQLFieldResolver<unknown, GraphQLRequestContext, Record<string, unknown>>>>;
}

export interface GraphQLSchemaRegistry {
  contribute(c: GraphQLContribution): void;
}

export const GraphQLSchemaToken = createToken<GraphQLSchemaRegistry>('graphql-schema');
