/**
 * GRAPHQL.md "Logs" and "Errors and limits", and every SVCQL.md example, over POST /query on
 * SVCQL.md's example data (written through the kernel's ingest pipeline).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { at, exampleRecords, gql, ingestExampleDataOverHttp as ingestExampleData, M, recordNo } from './helpers.js';

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({});
  await ingestExampleData(srv);
});
test.after(async () => srv.stop());

const TABLE = `query T($q: String!, $s: Time!, $e: Time!) {
  getLogMetricsResultWithSvcQl(query: $q, startTs: $s, endTs: $e) { ColumnHeaders GroupKeys AggrValues TableResult }
}`;
const LOGS = `query L($q: String!, $s: Time!, $e: Time!, $limit: Int, $cursor: String) {
  getLogsWithSvcQl(query: $q, startTs: $s, endTs: $e, limit: $limit, cursor: $cursor) { logs { timestamp message labels facets } cursor }
}`;
const RANGE = { s: at('10:00:00'), e: at('10:05:00') };
const recs = exampleRecords();
const ts = (n: number) => recs[n - 1]!.timestampNs.toString();

type Cell = string | number | boolean | null;
interface Example {
  q: string;
  range?: { s: string; e: string };
  /** Records in result order. */
  records?: number[];
  /** Aggregated rows, exactly. */
  rows?: Cell[][];
  /** Non-aggregated rows: record number, then the cells after `_timestamp`. */
  recRows?: [number, Cell[]][];
  error?: { code: string; message: string; line: number; column: number };
}

// SVCQL.md "Examples", one entry each.
const EXAMPLES: Example[] = [
  { q: '*', records: [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1] },
  { q: 'service=api level!=info', records: [11, 9, 3] },
  { q: 'host=~"web"', records: [] },
  { q: '"timeout" OR @user="ana"', records: [9, 4, 3] },
  { q: 'level=~"warn|error" NOT service=api', records: [12, 7, 4] },
  { q: 'service=api | where @duration_ms / 1000 > 0.01 and @status != 500', records: [9, 2, 1] },
  { q: '* | where @status not in (200, 404)', records: [9, 3] },
  { q: '* | where @status = null', records: [12, 10, 8, 7, 5, 4] },
  { q: '* | where _message matches "GET /api/.*"', records: [9, 6, 3, 2, 1] },
  {
    q: 'service=api | parse "GET * * *ms" as path, code, ms | where code = 200 | fields path, ms',
    recRows: [[11, ['/health', '8']], [2, ['/api/orders', '30']], [1, ['/api/users', '12']]],
  },
  {
    q: 'service=api | parse "GET * * *ms" as path, code, ms | avg(ms) as avg_ms, max(ms) by code',
    rows: [['200', 16.666666666666668, 30], ['404', 5, 5], ['500', 250, 250], ['503', 800, 800]],
  },
  { q: 'service=billing | parse regex "id=(?<charge>ch_[0-9]+)" nodrop | count by charge', rows: [['ch_1', 1], [null, 2]] },
  { q: 'service=auth | json "user", "attempts" | sum(attempts) as total by user', rows: [['ana', 8], ['bob', 1]] },
  { q: 'service=auth | json | where ok = false | count by user', rows: [['ana', 2]] },
  { q: 'service=billing | logfmt | where amount > 10 | fields msg, amount', recRows: [[8, ['charge ok', '42.5']]] },
  { q: '* | timeslice 1m | count by _timeslice', rows: [[M(0), 3], [M(1), 3], [M(2), 2], [M(3), 3], [M(4), 1]] },
  { q: '* | timeslice 1m | count by _timeslice', range: { s: at('10:00:20'), e: at('10:02:15') }, rows: [[M(0), 2], [M(1), 3]] },
  {
    q: 'level=error | timeslice 2m | count by _timeslice, service',
    rows: [[M(0), 'api', 1], [M(2), 'api', 1], [M(2), 'billing', 1], [M(4), 'auth', 1]],
  },
  { q: '* | count, count_distinct(host) as hosts by service', rows: [['api', 6, 2], ['auth', 3, 1], ['billing', 3, 2]] },
  { q: '* | count by level | sort by _count', rows: [['info', 6], ['error', 4], ['debug', 1], ['warn', 1]] },
  { q: '* | top 2 host', rows: [['web-1', 5], ['web-2', 4]] },
  { q: '* | pct(@duration_ms, 50) as p50, pct(@duration_ms, 95), sum(@duration_ms)', rows: [[12, 800, 1105]] },
  { q: 'level=error | first(service), last(service)', rows: [['api', 'auth']] },
  { q: '* | dedup by host | fields host', recRows: [[12, ['web-3']], [11, ['web-1']], [10, ['web-2']]] },
  { q: 'service=nope | count', rows: [[0]] },
  { q: 'timeout NOT service=billing', records: [9, 3] },
  { q: 'service=', error: { code: 'SVCQL_SYNTAX_ERROR', message: 'unexpected end of query at 1:9, expected value', line: 1, column: 9 } },
  {
    q: '* | parse "a=* b=*" as x',
    error: { code: 'SVCQL_INVALID_ARGUMENT', message: 'parse pattern has 2 wildcards but 1 names at 1:11', line: 1, column: 11 },
  },
  {
    q: '* | count, count by host',
    error: { code: 'SVCQL_INVALID_ARGUMENT', message: 'duplicate column "_count" at 1:12', line: 1, column: 12 },
  },
];

/** Queries getLogsWithSvcQl accepts (search + where/parse/json/logfmt). */
const isRecordQuery = (q: string) =>
  q.split('|').slice(1).every((s) => /^\s*(where|parse|json|logfmt)\b/.test(s));

for (const ex of EXAMPLES) {
  test(`SVCQL.md example: ${ex.q}${ex.range ? ' (narrow range)' : ''}`, async () => {
    const r = await gql(srv, TABLE, { q: ex.q, ...(ex.range ?? RANGE) });
    assert.is(r.status, 200);
    if (ex.error) {
      assert.equal(r.data, { getLogMetricsResultWithSvcQl: null });
      assert.equal(r.errors, [
        {
          message: ex.error.message,
          path: ['getLogMetricsResultWithSvcQl'],
          extensions: { code: ex.error.code, component: 'logs', position: { line: ex.error.line, column: ex.error.column } },
        },
      ]);
      return;
    }
    assert.is(r.errors, undefined, JSON.stringify(r.errors));
    const t = r.data!.getLogMetricsResultWithSvcQl as { ColumnHeaders: string[]; GroupKeys: string[]; AggrValues: string[]; TableResult: Cell[][] };
    if (ex.records) {
      assert.equal(t.ColumnHeaders, ['_timestamp', '_message']);
      assert.equal(t.TableResult.map((row) => recordNo({ timestamp: String(row[0]), message: String(row[1]) })), ex.records);
      if (isRecordQuery(ex.q)) {
        const l = await gql(srv, LOGS, { q: ex.q, ...RANGE, limit: 1000 });
        assert.is(l.errors, undefined, JSON.stringify(l.errors));
        assert.equal(l.data!.getLogsWithSvcQl.logs.map(recordNo), ex.records);
        assert.is(l.data!.getLogsWithSvcQl.cursor, null);
      }
    } else if (ex.recRows) {
      assert.is(t.ColumnHeaders[0], '_timestamp');
      assert.equal(t.TableResult, ex.recRows.map(([n, cells]) => [ts(n), ...cells]));
      assert.equal(t.GroupKeys, []);
    } else {
      assert.equal(t.TableResult, ex.rows);
    }
  });
}

test('GRAPHQL.md: service=api level=error | limit 1', async () => {
  const r = await gql(srv, TABLE, { q: 'service=api level=error | limit 1', ...RANGE });
  assert.equal(r.data, {
    getLogMetricsResultWithSvcQl: {
      ColumnHeaders: ['_timestamp', '_message'],
      GroupKeys: [],
      AggrValues: [],
      TableResult: [['1763805785000000000', 'GET /api/orders 503 800ms Timeout']],
    },
  });
});

test('GRAPHQL.md: level=error | timeslice 2m | count by _timeslice, service', async () => {
  const r = await gql(srv, TABLE, { q: 'level=error | timeslice 2m | count by _timeslice, service', ...RANGE });
  assert.equal(r.data, {
    getLogMetricsResultWithSvcQl: {
      ColumnHeaders: ['_timeslice', 'service', '_count'],
      GroupKeys: ['_timeslice', 'service'],
      AggrValues: ['_count'],
      TableResult: [
        [1763805600000, 'api', 1],
        [1763805720000, 'api', 1],
        [1763805720000, 'billing', 1],
        [1763805840000, 'auth', 1],
      ],
    },
  });
});

test('GRAPHQL.md: the SvcQL error example, exactly', async () => {
  const res = await srv.fetch('/query', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: LOGS, variables: { q: 'service=', ...RANGE } }),
  });
  assert.is(res.status, 200);
  assert.equal(await res.json(), {
    data: { getLogsWithSvcQl: null },
    errors: [
      {
        message: 'unexpected end of query at 1:9, expected value',
        path: ['getLogsWithSvcQl'],
        extensions: { code: 'SVCQL_SYNTAX_ERROR', component: 'logs', position: { line: 1, column: 9 } },
      },
    ],
  });
});

test('getLogsWithSvcQl: record shape (ns timestamp string, labels, facets without @)', async () => {
  const r = await gql(srv, LOGS, { q: 'service=api level=error', ...RANGE, limit: 1 });
  assert.equal(r.data!.getLogsWithSvcQl.logs, [
    {
      timestamp: '1763805785000000000',
      message: 'GET /api/orders 503 800ms Timeout',
      // Ingested over OTLP/HTTP: the receiver adds source="otlp" and keeps the severity text.
      labels: { svc_stream: 'logs', service: 'api', host: 'web-2', level: 'error', source: 'otlp' },
      facets: { status: 503, duration_ms: 800, severity_text: 'error' },
    },
  ]);
  assert.type(r.data!.getLogsWithSvcQl.cursor, 'string');
});

test('getLogsWithSvcQl: cursor pages newest first, null when nothing is left; default limit 100', async () => {
  const seen: number[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const r = await gql(srv, LOGS, { q: '*', ...RANGE, limit: 5, cursor });
    assert.is(r.errors, undefined, JSON.stringify(r.errors));
    const page = r.data!.getLogsWithSvcQl as { logs: { timestamp: string; message: string }[]; cursor: string | null };
    assert.ok(page.logs.length <= 5);
    seen.push(...page.logs.map(recordNo));
    cursor = page.cursor;
    pages++;
  } while (cursor !== null && pages < 10);
  assert.equal(seen, [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
  assert.is(pages, 3);
  const all = await gql(srv, `query($s: Time!, $e: Time!) { getLogsWithSvcQl(query: "*", startTs: $s, endTs: $e) { logs { message } cursor } }`, RANGE);
  assert.is(all.data!.getLogsWithSvcQl.logs.length, 12);
  assert.is(all.data!.getLogsWithSvcQl.cursor, null);
});

test('getLogsWithSvcQl: stages other than where/parse/json/logfmt are SVCQL_INVALID_ARGUMENT', async () => {
  for (const q of ['* | count', '* | limit 5', '* | fields host', '* | sort by host']) {
    const r = await gql(srv, LOGS, { q, ...RANGE });
    assert.equal(r.data, { getLogsWithSvcQl: null });
    const e = r.errors![0]!;
    assert.is(e.extensions.code, 'SVCQL_INVALID_ARGUMENT');
    assert.is(e.extensions.component, 'logs');
    assert.match(e.message, /^stage "[a-z]+" not allowed here at 1:\d+$/);
    assert.ok(e.extensions.position);
  }
});

const errorOf = async (query: string, variables: Record<string, unknown>, field: string) => {
  const r = await gql(srv, query, variables);
  assert.is(r.status, 200);
  assert.equal(r.data, { [field]: null });
  assert.is(r.errors!.length, 1);
  assert.equal(r.errors![0]!.path, [field]);
  return r.errors![0]!;
};

test('BAD_USER_INPUT: bad Time, endTs <= startTs, bad cursor, limit outside 1..1000', async () => {
  const cases: Record<string, unknown>[] = [
    { q: '*', s: 'yesterday', e: RANGE.e },
    { q: '*', s: '2025-11-22T10:00:00', e: RANGE.e }, // no offset
    { q: '*', s: '2025-13-22T10:00:00Z', e: RANGE.e },
    { q: '*', s: RANGE.e, e: RANGE.s },
    { q: '*', s: RANGE.s, e: RANGE.s },
    { q: '*', ...RANGE, cursor: 'not-a-cursor' },
    { q: '*', ...RANGE, limit: 0 },
    { q: '*', ...RANGE, limit: 1001 },
  ];
  for (const v of cases) {
    const e = await errorOf(LOGS, v, 'getLogsWithSvcQl');
    assert.equal(e.extensions, { code: 'BAD_USER_INPUT', component: 'logs' }, JSON.stringify(v));
  }
  const t = await errorOf(TABLE, { q: '*', s: RANGE.e, e: RANGE.s }, 'getLogMetricsResultWithSvcQl');
  assert.equal(t.extensions, { code: 'BAD_USER_INPUT', component: 'logs' });
  // A literal bad Time in the document is the same error, not a validation failure.
  const lit = await gql(srv, `{ getLogsWithSvcQl(query: "*", startTs: "x", endTs: "y") { cursor } }`);
  assert.equal(lit.errors![0]!.extensions, { code: 'BAD_USER_INPUT', component: 'logs' });
  // Offsets and nanosecond fractions are honoured: [10:04:20+00:00, 11:04:20.000000001+01:00) holds record 12 only.
  const off = await gql(srv, LOGS, { q: '*', s: '2025-11-22T10:04:20+00:00', e: '2025-11-22T11:04:20.000000001+01:00' });
  assert.equal(off.data!.getLogsWithSvcQl.logs.map(recordNo), [12]);
});

test('QUERY_TOO_LONG over 8192 characters of SvcQL', async () => {
  const long = '*' + ' '.repeat(8192);
  const e = await errorOf(LOGS, { q: long, ...RANGE }, 'getLogsWithSvcQl');
  assert.equal(e.extensions, { code: 'QUERY_TOO_LONG', component: 'logs' });
  const ok = await gql(srv, LOGS, { q: '*' + ' '.repeat(8191), ...RANGE, limit: 1 });
  assert.is(ok.errors, undefined);
});

test('document errors: GRAPHQL_PARSE_FAILED and GRAPHQL_VALIDATION_FAILED with path []', async () => {
  const p = await gql(srv, '{ getLogsWithSvcQl(', {});
  assert.is(p.status, 200);
  assert.is(p.data, undefined);
  assert.equal(p.errors![0]!.extensions, { code: 'GRAPHQL_PARSE_FAILED', component: 'graphql' });
  assert.equal(p.errors![0]!.path, []);
  const v = await gql(srv, '{ nope }', {});
  assert.equal(v.errors![0]!.extensions, { code: 'GRAPHQL_VALIDATION_FAILED', component: 'graphql' });
  assert.equal(v.errors![0]!.path, []);
  const missing = await gql(srv, `{ getLogsWithSvcQl(query: "*") { cursor } }`, {});
  assert.is(missing.errors![0]!.extensions.code, 'GRAPHQL_VALIDATION_FAILED');
  const deep = `{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } } } } } }`;
  const d = await gql(srv, deep, {});
  assert.is(d.errors![0]!.extensions.code, 'GRAPHQL_VALIDATION_FAILED');
  assert.match(d.errors![0]!.message, /depth/);
  const noBody = await gql(srv, '', {});
  assert.is(noBody.errors![0]!.extensions.code, 'GRAPHQL_PARSE_FAILED');
});

test('HTTP statuses: bad token 401, non-JSON body 400, otherwise 200', async () => {
  const bad = await srv.fetch('/query', { method: 'POST', token: 'nope', headers: { 'content-type': 'application/json' }, body: '{"query":"{ getFavoriteFacetGroups }"}' });
  assert.is(bad.status, 401);
  const b = (await bad.json()) as { errors: { extensions: { code: string } }[] };
  assert.is(b.errors[0]!.extensions.code, 'UNAUTHENTICATED');
  const none = await srv.fetch('/query', { method: 'POST', token: null, headers: { 'content-type': 'application/json' }, body: '{"query":"{ getFavoriteFacetGroups }"}' });
  assert.is(none.status, 401);
  const nj = await srv.fetch('/query', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{not json' });
  assert.is(nj.status, 400);
  const nb = (await nj.json()) as { errors: unknown[] };
  assert.ok(Array.isArray(nb.errors));
  const variables = await srv.fetch('/query', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ getFavoriteFacetGroups }","variables":[1]}' });
  assert.is(variables.status, 200);
  const sub = await gql(srv, 'subscription { getLogsWithSvcQlStream(query: "*", live: true) { cursor } }', {});
  assert.is(sub.status, 200);
  assert.is(sub.errors![0]!.extensions.code, 'BAD_USER_INPUT');
});

test('aliases: data.<alias> null on error, other fields unaffected when they succeed alone', async () => {
  const r = await gql(srv, `query($s: Time!, $e: Time!) { a: getLogsWithSvcQl(query: "service=", startTs: $s, endTs: $e) { cursor } }`, RANGE);
  assert.equal(r.data, { a: null });
  assert.equal(r.errors![0]!.path, ['a']);
});

test.run();
