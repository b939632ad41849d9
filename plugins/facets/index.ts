/**
 * Favorite facets over GraphQL (GRAPHQL.md "Favorite facets", SPEC.md argument names):
 * getFavoriteFacets, getFavoriteFacetGroups, addFavoriteFacet, editFavoriteFacet,
 * removeFavoriteFacet, removeFacetGroup. Persisted in the MetaStore.
 */
import { hasRole, type Principal } from '../../kernel/auth.js';
import { forbidden } from '../../kernel/errors.js';
import { definePlugin } from '../../kernel/plugin.js';
import { Tokens } from '../../kernel/services.js';
import { checkLimit } from '../api-graphql/arguments.js';
import { GraphQLSchemaToken, type GraphQLContribution } from '../api-graphql/index.js';
import { FavoriteFacetStore, type FacetEdit } from './store.js';

export { FavoriteFacetStore } from './store.js';
export type { FavoriteFacet } from './store.js';

export const FACETS_TYPEDEFS = /* GraphQL */ `
extend type Query {
  getFavoriteFacets(contains: String = "", group: String, cursor: String, limit: Int): [FavoriteFacet!]!
  getFavoriteFacetGroups(limit: Int): [String!]!
}
type Mutation {
  addFavoriteFacet(facet: String!, displayName: String!, datatype: String!, facetGroup: String!, source: String, folderUid: String): Boolean!
  editFavoriteFacet(display_name: String!, facetGroup: String!, editInfo: FacetEdit!): Boolean!
  removeFavoriteFacet(display_name: String!, facetGroup: String!): Boolean!
  removeFacetGroup(facetGroup: String!): Boolean!
}
input FacetEdit { newGroup: String, newDisplayName: String, newFolderUid: String }
type FavoriteFacet { name: String!  dataType: String!  group: String!  displayName: String!  source: String!  folderUid: String }
`;

/** Mutations need Admin or Editor; a signed-in user counts as Editor (GRAPHQL.md). */
export function canEditFacets(p: Principal): boolean {
  return p.kind === 'user' || hasRole(p, 'Editor');
}

function requireEditor(p: Principal): void {
  if (!canEditFacets(p)) throw forbidden('favorite facet changes need the Admin or Editor role');
}

export function facetsContribution(store: FavoriteFacetStore): GraphQLContribution {
  return {
    typeDefs: FACETS_TYPEDEFS,
    fields: {
      Query: {
        getFavoriteFacets: {
          component: 'facets',
          resolve: (_s, a) =>
            store.list({
              contains: typeof a.contains === 'string' ? a.contains : '',
              group: typeof a.group === 'string' ? a.group : null,
              cursor: typeof a.cursor === 'string' ? a.cursor : null,
              limit: checkLimit(a.limit, undefined),
            }),
        },
        getFavoriteFacetGroups: {
          component: 'facets',
          resolve: (_s, a) => store.groups(checkLimit(a.limit, undefined)),
        },
      },
      Mutation: {
        addFavoriteFacet: {
          component: 'facets',
          resolve(_s, a, ctx) {
            requireEditor(ctx.principal);
            return store.add({
              facet: a.facet,
              displayName: a.displayName,
              datatype: a.datatype,
              facetGroup: a.facetGroup,
              source: a.source,
              folderUid: a.folderUid,
            });
          },
        },
        editFavoriteFacet: {
          component: 'facets',
          resolve(_s, a, ctx) {
            requireEditor(ctx.principal);
            return store.edit(a.display_name, a.facetGroup, (a.editInfo ?? {}) as FacetEdit);
          },
        },
        removeFavoriteFacet: {
          component: 'facets',
          resolve(_s, a, ctx) {
            requireEditor(ctx.principal);
            return store.remove(a.display_name, a.facetGroup);
          },
        },
        removeFacetGroup: {
          component: 'facets',
          resolve(_s, a, ctx) {
            requireEditor(ctx.principal);
            return store.removeGroup(a.facetGroup);
          },
        },
      },
    },
  };
}

const plugin = definePlugin({
  name: 'facets',
  description: 'Favorite facets (GraphQL), persisted in the MetaStore',
  dependsOn: ['api-graphql'],
  register(ctx) {
    // Storage opens after register; the store resolves it per call.
    const store = new FavoriteFacetStore(() => ctx.get(Tokens.Storage).meta);
    ctx.get(GraphQLSchemaToken).contribute(facetsContribution(store));
  },
});

export default plugin;
