/**
 * Events over GraphQL (GRAPHQL.md "Events"): getEvents pages Kubernetes, webhook and bus events
 * (stored by the ingestion plugins) matching a SvcQL search expression; getEventFacetValues
 * counts the values of a label or @attribute over them. Both read inside the `events` scope.
 */
import { definePlugin } from '../../kernel/plugin.js';
import { checkLimit, checkQueryText, cursorArg, parseRange } from '../api-graphql/arguments.js';
import { GraphQLSchemaToken, type GraphQLContribution, type GraphQLRequestContext } from '../api-graphql/index.js';
import { InputError } from '../api-graphql/errors.js';
import { parseEventSearch, type SvcQuery } from '../query-svcql/index.js';
import { eventFacetValues, pageEvents, type EventQueryContext } from './query.js';

export const EVENTS_TYPEDEFS = /* GraphQL */ `
extend type Query {
  getEvents(query: String = "*", startTs: Time!, endTs: Time!, limit: Int = 100, cursor: String): EventPage!
  getEventFacetValues(facet: String!, query: String = "*", startTs: Time!, endTs: Time!, limit: Int = 100): [ValueCount!]!
}
type Event { id: ID!  timestamp: String!  title: String!  text: String!  labels: JSON!  attributes: JSON! }
type EventPage { events: [Event!]!  cursor: String }
type ValueCount { value: String!  count: Int! }
`;

function eventQuery(text: unknown): SvcQuery {
  const t = checkQueryText(text ?? '*');
  return parseEventSearch(t.trim() === '' ? '*' : t);
}

async function queryContext(ctx: GraphQLRequestContext): Promise<EventQueryContext> {
  return { events: ctx.query.storage.events, scope: await ctx.scope('events'), signal: ctx.query.signal };
}

export function eventsContribution(): GraphQLContribution {
  return {
    typeDefs: EVENTS_TYPEDEFS,
    fields: {
      Query: {
        getEvents: {
          component: 'events',
          async resolve(_s, a, ctx) {
            const q = eventQuery(a.query);
            const range = parseRange(a.startTs, a.endTs);
            const limit = checkLimit(a.limit, 100);
            return pageEvents(q, range, { limit, cursor: cursorArg(a.cursor) }, await queryContext(ctx));
          },
        },
        getEventFacetValues: {
          component: 'events',
          async resolve(_s, a, ctx) {
            if (typeof a.facet !== 'string' || a.facet.replace(/^@/, '') === '') {
              throw new InputError('facet must name a label or an @attribute');
            }
            const q = eventQuery(a.query);
            const range = parseRange(a.startTs, a.endTs);
            const limit = checkLimit(a.limit, 100);
            return eventFacetValues(a.facet, q, range, limit, await queryContext(ctx));
          },
        },
      },
    },
  };
}

const plugin = definePlugin({
  name: 'events',
  description: 'Event queries (GraphQL): getEvents, getEventFacetValues',
  dependsOn: ['api-graphql'],
  register(ctx) {
    ctx.get(GraphQLSchemaToken).contribute(eventsContribution());
  },
});

export default plugin;
