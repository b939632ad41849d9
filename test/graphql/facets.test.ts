import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN_TOKEN, EDITOR_TOKEN, TEST_BACKEND, VIEWER_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';
import { gql } from './helpers.js';

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({
    auth: { users: [{ email: 'uma@example.com', name: 'Uma', login: 'uma', token: 'uma-token', role: 'Viewer' }] },
  });
});
test.after(async () => srv.stop());

const ADD = `mutation Add($facet: String!, $dn: String!, $dt: String!, $g: String!, $src: String, $f: String) {
  addFavoriteFacet(facet: $facet, displayName: $dn, datatype: $dt, facetGroup: $g, source: $src, folderUid: $f)
}`;
const LIST = `query L($contains: String, $group: String, $cursor: String, $limit: Int) {
  getFavoriteFacets(contains: $contains, group: $group, cursor: $cursor, limit: $limit) { name dataType group displayName source folderUid }
}`;
const add = (v: Record<string, unknown>, token = EDITOR_TOKEN) => gql(srv, ADD, v, token);

test('add, list sorted by group then displayName, defaults', async () => {
  for (const [facet, dn, dt, g] of [
    ['@status', 'Status', 'NUMBER', 'http'],
    ['@duration_ms', 'Duration', 'NUMBER', 'http'],
    ['service', 'Service', 'STRING', 'app'],
    ['@retry', 'Retry', 'BOOLEAN', 'billing'],
  ]) {
    const r = await add({ facet, dn, dt, g });
    assert.equal(r.status, 200);
    assert.equal(r.data, { addFavoriteFacet: true }, JSON.stringify(r));
  }
  const r = await gql(srv, LIST, {}, VIEWER_TOKEN);
  assert.equal(
    r.data!.getFavoriteFacets.map((f: { group: string; displayName: string }) => `${f.group}/${f.displayName}`),
    ['app/Service', 'billing/Retry', 'http/Duration', 'http/Status'],
  );
  assert.equal(r.data!.getFavoriteFacets[0], {
    name: 'service',
    dataType: 'STRING',
    group: 'app',
    displayName: 'Service',
    source: '',
    folderUid: null,
  });
});

test('contains (case-insensitive), group (exact), cursor and limit', async () => {
  const c = await gql(srv, LIST, { contains: 'stat' });
  assert.equal(c.data!.getFavoriteFacets.map((f: { displayName: string }) => f.displayName), ['Status']);
  const g = await gql(srv, LIST, { group: 'http' });
  assert.equal(g.data!.getFavoriteFacets.map((f: { displayName: string }) => f.displayName), ['Duration', 'Status']);
  const g2 = await gql(srv, LIST, { group: 'HTTP' });
  assert.equal(g2.data!.getFavoriteFacets, []);
  const p1 = await gql(srv, LIST, { limit: 2 });
  assert.equal(p1.data!.getFavoriteFacets.length, 2);
  const p2 = await gql(srv, LIST, { cursor: '2', limit: 2 });
  assert.equal(p2.data!.getFavoriteFacets.map((f: { displayName: string }) => f.displayName), ['Duration', 'Status']);
  const p3 = await gql(srv, LIST, { cursor: '4' });
  assert.equal(p3.data!.getFavoriteFacets, []);
  const bad = await gql(srv, LIST, { cursor: 'abc' });
  assert.equal(bad.status, 200);
  assert.equal(bad.data, { getFavoriteFacets: null });
  assert.equal(bad.errors![0]!.extensions, { code: 'BAD_USER_INPUT', component: 'facets' });
  assert.equal(bad.errors![0]!.path, ['getFavoriteFacets']);
  const badLimit = await gql(srv, LIST, { limit: 0 });
  assert.equal(badLimit.errors![0]!.extensions.code, 'BAD_USER_INPUT');
});

test('groups sorted, with limit', async () => {
  const r = await gql(srv, `{ getFavoriteFacetGroups }`);
  assert.equal(r.data, { getFavoriteFacetGroups: ['app', 'billing', 'http'] });
  const l = await gql(srv, `{ getFavoriteFacetGroups(limit: 1) }`);
  assert.equal(l.data, { getFavoriteFacetGroups: ['app'] });
});

test('bad datatype, empty name: BAD_USER_INPUT; taken key: CONFLICT', async () => {
  const dt = await add({ facet: 'x', dn: 'X', dt: 'DATE', g: 'misc' });
  assert.equal(dt.data, { addFavoriteFacet: null });
  assert.equal(dt.errors![0]!.extensions, { code: 'BAD_USER_INPUT', component: 'facets' });
  const empty = await add({ facet: 'x', dn: '', dt: 'STRING', g: 'misc' });
  assert.equal(empty.errors![0]!.extensions.code, 'BAD_USER_INPUT');
  const taken = await add({ facet: '@other', dn: 'Status', dt: 'STRING', g: 'http' });
  assert.equal(taken.errors![0]!.extensions, { code: 'CONFLICT', component: 'facets' });
  assert.equal(taken.errors![0]!.path, ['addFavoriteFacet']);
  // Same display name in another group is a different key.
  const other = await add({ facet: '@status', dn: 'Status', dt: 'NUMBER', g: 'misc', src: 'apm', f: 'folder-1' });
  assert.equal(other.data, { addFavoriteFacet: true });
});

test('edit: rename, move group, folder; false when missing; CONFLICT when taken', async () => {
  const EDIT = `mutation E($dn: String!, $g: String!, $e: FacetEdit!) { editFavoriteFacet(display_name: $dn, facetGroup: $g, editInfo: $e) }`;
  const moved = await gql(srv, EDIT, { dn: 'Status', g: 'misc', e: { newGroup: 'apm', newDisplayName: 'HTTP status', newFolderUid: 'f2' } }, EDITOR_TOKEN);
  assert.equal(moved.data, { editFavoriteFacet: true });
  const l = await gql(srv, LIST, { group: 'apm' });
  assert.equal(l.data!.getFavoriteFacets, [
    { name: '@status', dataType: 'NUMBER', group: 'apm', displayName: 'HTTP status', source: 'apm', folderUid: 'f2' },
  ]);
  const root = await gql(srv, EDIT, { dn: 'HTTP status', g: 'apm', e: { newFolderUid: '' } });
  assert.equal(root.data, { editFavoriteFacet: true });
  assert.equal((await gql(srv, LIST, { group: 'apm' })).data!.getFavoriteFacets[0].folderUid, null);
  const missing = await gql(srv, EDIT, { dn: 'Nope', g: 'apm', e: { newDisplayName: 'X' } });
  assert.equal(missing.data, { editFavoriteFacet: false });
  const clash = await gql(srv, EDIT, { dn: 'Duration', g: 'http', e: { newDisplayName: 'Status' } });
  assert.equal(clash.errors![0]!.extensions, { code: 'CONFLICT', component: 'facets' });
});

test('remove facet and group; false when nothing matched', async () => {
  const RM = `mutation R($dn: String!, $g: String!) { removeFavoriteFacet(display_name: $dn, facetGroup: $g) }`;
  assert.equal((await gql(srv, RM, { dn: 'Retry', g: 'billing' })).data, { removeFavoriteFacet: true });
  assert.equal((await gql(srv, RM, { dn: 'Retry', g: 'billing' })).data, { removeFavoriteFacet: false });
  const RG = `mutation G($g: String!) { removeFacetGroup(facetGroup: $g) }`;
  assert.equal((await gql(srv, RG, { g: 'http' })).data, { removeFacetGroup: true });
  assert.equal((await gql(srv, RG, { g: 'http' })).data, { removeFacetGroup: false });
  assert.equal((await gql(srv, `{ getFavoriteFacetGroups }`)).data, { getFavoriteFacetGroups: ['apm', 'app'] });
});

test('roles: Viewer service account FORBIDDEN; users count as Editor; Admin ok', async () => {
  const v = await add({ facet: 'a', dn: 'A', dt: 'STRING', g: 'roles' }, VIEWER_TOKEN);
  assert.equal(v.status, 200);
  assert.equal(v.data, { addFavoriteFacet: null });
  assert.equal(v.errors![0]!.extensions, { code: 'FORBIDDEN', component: 'facets' });
  const RM = `mutation { removeFacetGroup(facetGroup: "app") }`;
  assert.equal((await gql(srv, RM, {}, VIEWER_TOKEN)).errors![0]!.extensions.code, 'FORBIDDEN');
  const u = await add({ facet: 'a', dn: 'A', dt: 'STRING', g: 'roles' }, 'uma-token');
  assert.equal(u.data, { addFavoriteFacet: true }, JSON.stringify(u));
  const a = await add({ facet: 'b', dn: 'B', dt: 'STRING', g: 'roles' }, ADMIN_TOKEN);
  assert.equal(a.data, { addFavoriteFacet: true });
});

if (TEST_BACKEND === 'memory') {
  console.log('SKIP: favorite facets persistence across restart needs a durable backend (LOOKOUT_TEST_BACKEND=memory)');
  test.skip('persisted across a restart (MetaStore)', () => undefined);
} else {
  test('persisted across a restart (MetaStore)', async () => {
    const dataDir = srv.dataDir;
    const before = (await gql(srv, LIST, {})).data!.getFavoriteFacets;
    await srv.stop({ keepData: true });
    srv = await startTestServer({}, { dataDir });
    assert.equal((await gql(srv, LIST, {})).data!.getFavoriteFacets, before);
  });
}

test.run();
