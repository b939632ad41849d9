/** GRAPHQL.md "Events": getEvents and getEventFacetValues over events written through the ingest pipeline. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { at, gql, ingestExampleEvents, type GqlResponse } from './helpers.js';

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({});
  await ingestExampleEvents(srv);
});
test.after(async () => srv.stop());

const EVENTS = `query E($q: String, $s: Time!, $e: Time!, $limit: Int, $cursor: String) {
  getEvents(query: $q, startTs: $s, endTs: $e, limit: $limit, cursor: $cursor) { events { id timestamp title text labels attributes } cursor }
}`;
const FACETS = `query F($f: String!, $q: String, $s: Time!, $e: Time!, $limit: Int) {
  getEventFacetValues(facet: $f, query: $q, startTs: $s, endTs: $e, limit: $limit) { value count }
}`;
const RANGE = { s: at('10:00:00'), e: at('10:05:00') };
const ids = (r: { data?: any }) => r.data!.getEvents.events.map((e: { id: string }) => e.id);

test('getEvents: default query "*" newest first; event shape', async () => {
  const r = await gql(srv, `query($s: Time!, $e: Time!) { getEvents(startTs: $s, endTs: $e) { events { id timestamp title text labels attributes } cursor } }`, RANGE);
  assert.is(r.errors, undefined, JSON.stringify(r.errors));
  assert.equal(ids(r), ['ev-5', 'ev-4', 'ev-3', 'ev-2', 'ev-1']);
  assert.is(r.data!.getEvents.cursor, null);
  assert.equal(r.data!.getEvents.events[1], {
    id: 'ev-4',
    timestamp: '1763805780000000000',
    title: 'order created',
    text: '{"order":"o-1"}',
    labels: { svc_stream: 'events', source: 'bus', event: 'OrderCreated' },
    attributes: { amount: 42.5, detail: { order: 'o-1' } },
  });
});

test('getEvents: search expressions (labels, free text on title or text, @attributes, boolean ops)', async () => {
  const cases: [string, string[]][] = [
    ['source=kubernetes', ['ev-5', 'ev-2', 'ev-1']],
    ['source=kubernetes namespace=prod', ['ev-2', 'ev-1']],
    ['back-off', ['ev-1']],
    ['"COMMITS"', ['ev-3']],
    ['@node="n1"', ['ev-2', 'ev-1']],
    ['@count=1', ['ev-5', 'ev-2']],
    ['@forced=false', ['ev-3']],
    ['source=webhook OR source=bus', ['ev-4', 'ev-3']],
    ['NOT source=kubernetes', ['ev-4', 'ev-3']],
    ['reason=~"Sc.*"', ['ev-5', 'ev-2']],
    ['source=nope', []],
  ];
  for (const [q, want] of cases) {
    const r = await gql(srv, EVENTS, { q, ...RANGE });
    assert.is(r.errors, undefined, `${q}: ${JSON.stringify(r.errors)}`);
    assert.equal(ids(r), want, q);
  }
  const narrow = await gql(srv, EVENTS, { q: '*', s: at('10:01:00'), e: at('10:03:00') });
  assert.equal(ids(narrow), ['ev-3', 'ev-2']);
});

test('getEvents: cursor pages; bad cursor BAD_USER_INPUT', async () => {
  const seen: string[][] = [];
  let cursor: string | null = null;
  do {
    const r: GqlResponse<any> = await gql(srv, EVENTS, { q: '*', ...RANGE, limit: 2, cursor });
    assert.is(r.errors, undefined, JSON.stringify(r.errors));
    seen.push(ids(r));
    cursor = r.data!.getEvents.cursor;
  } while (cursor !== null && seen.length < 10);
  assert.equal(seen, [['ev-5', 'ev-4'], ['ev-3', 'ev-2'], ['ev-1']]);
  const bad = await gql(srv, EVENTS, { q: '*', ...RANGE, cursor: '%%%' });
  assert.equal(bad.data, { getEvents: null });
  assert.equal(bad.errors![0]!.extensions, { code: 'BAD_USER_INPUT', component: 'events' });
  assert.equal(bad.errors![0]!.path, ['getEvents']);
});

test('getEvents errors: stages SVCQL_INVALID_ARGUMENT, syntax error with position, bad Time, limit', async () => {
  const stage = await gql(srv, EVENTS, { q: '* | count', ...RANGE });
  assert.equal(stage.data, { getEvents: null });
  assert.is(stage.errors![0]!.extensions.code, 'SVCQL_INVALID_ARGUMENT');
  assert.is(stage.errors![0]!.extensions.component, 'events');
  assert.ok(stage.errors![0]!.extensions.position);
  const syn = await gql(srv, EVENTS, { q: 'source=', ...RANGE });
  assert.equal(syn.errors![0]!, {
    message: 'unexpected end of query at 1:8, expected value',
    path: ['getEvents'],
    extensions: { code: 'SVCQL_SYNTAX_ERROR', component: 'events', position: { line: 1, column: 8 } },
  });
  for (const v of [{ s: 'x', e: RANGE.e }, { s: RANGE.e, e: RANGE.s }, { ...RANGE, limit: 0 }, { ...RANGE, limit: 1001 }]) {
    const r = await gql(srv, EVENTS, { q: '*', ...v });
    assert.equal(r.errors![0]!.extensions, { code: 'BAD_USER_INPUT', component: 'events' }, JSON.stringify(v));
  }
  const long = await gql(srv, EVENTS, { q: 'a'.repeat(8193), ...RANGE });
  assert.equal(long.errors![0]!.extensions, { code: 'QUERY_TOO_LONG', component: 'events' });
});

test('getEventFacetValues: labels and @attributes, count desc then value asc, limit, query', async () => {
  const v = async (f: string, extra: Record<string, unknown> = {}) => {
    const r = await gql(srv, FACETS, { f, ...RANGE, ...extra });
    assert.is(r.errors, undefined, JSON.stringify(r.errors));
    return r.data!.getEventFacetValues;
  };
  assert.equal(await v('source'), [
    { value: 'kubernetes', count: 3 },
    { value: 'bus', count: 1 },
    { value: 'webhook', count: 1 },
  ]);
  assert.equal(await v('@count'), [
    { value: '1', count: 2 },
    { value: '5', count: 1 },
  ]);
  assert.equal(await v('@node'), [{ value: 'n1', count: 2 }]);
  assert.equal(await v('@forced'), [{ value: 'false', count: 1 }]);
  assert.equal(await v('reason', { q: 'source=kubernetes' }), [
    { value: 'BackOff', count: 1 },
    { value: 'ScalingReplicaSet', count: 1 },
    { value: 'Scheduled', count: 1 },
  ]);
  assert.equal(await v('source', { limit: 1 }), [{ value: 'kubernetes', count: 3 }]);
  assert.equal(await v('nothing'), []);
  const bad = await gql(srv, FACETS, { f: '@', ...RANGE });
  assert.equal(bad.errors![0]!.extensions, { code: 'BAD_USER_INPUT', component: 'events' });
  assert.equal(bad.data, { getEventFacetValues: null });
});

test.run();
