/**
 * Error messages and positions, record paging and cursors, record-query stage rules, RBAC
 * scope, limits, live-tail filters, event search, and the columnar fast path — against the
 * real server's storage, data ingested through the ingest pipeline.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LookoutError } from '../../kernel/errors.js';
import type { EventRecord, LogRecord } from '../../kernel/models.js';
import { Tokens } from '../../kernel/services.js';
import {
  columnarOverScan,
  compileEventFilter,
  compileRecordFilter,
  eventPushdown,
  pageSvcQLRecords,
  parseEventSearch,
  parseSvcQL,
  runSvcQLTable,
  SvcQLError,
  type SvcQLRunContext,
} from '../../plugins/query-svcql/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { exampleRecords, ingestExamplesDirect as ingestExamples, ns, RANGE, recordNo, recordNoByTs } from './fixtures.js';

let srv: TestServer;
let ctx: SvcQLRunContext;

test.before(async () => {
  srv = await startTestServer();
  await ingestExamples(srv);
  ctx = { logs: srv.lookout.kernel.get(Tokens.Storage).logs };
});
test.after(async () => {
  await srv.stop();
});

async function expectError(fn: () => unknown, code: string, message: string) {
  try {
    await fn();
    assert.unreachable(`should have thrown ${message}`);
  } catch (e) {
    if (!(e instanceof SvcQLError)) throw e;
    assert.is(e.code, code);
    assert.is(e.message, message);
  }
}

const ERRORS: [string, string, string][] = [
  ['', 'SVCQL_SYNTAX_ERROR', 'unexpected end of query at 1:1, expected search term'],
  ['service="api', 'SVCQL_SYNTAX_ERROR', 'unterminated string at 1:9'],
  ['* | timeslice 5x', 'SVCQL_SYNTAX_ERROR', 'invalid duration "5x" at 1:15'],
  ['* | timeslice 0m', 'SVCQL_SYNTAX_ERROR', 'invalid duration "0m" at 1:15'],
  ['* | frob x', 'SVCQL_SYNTAX_ERROR', 'unknown stage "frob" at 1:5'],
  ['* |', 'SVCQL_SYNTAX_ERROR', 'unexpected end of query at 1:4, expected stage'],
  ['(a', 'SVCQL_SYNTAX_ERROR', 'unexpected end of query at 1:3, expected ")"'],
  ['a )', 'SVCQL_SYNTAX_ERROR', 'unexpected ")" at 1:3, expected "|"'],
  ['*\n| where a = 1 b', 'SVCQL_SYNTAX_ERROR', 'unexpected "b" at 2:15, expected "|"'],
  ['host=~"a("', 'SVCQL_INVALID_ARGUMENT', 'invalid regex "a(" at 1:7: missing closing ): `a(`'],
  ['*\n| where _message matches "("', 'SVCQL_INVALID_ARGUMENT', 'invalid regex "(" at 2:26: missing closing ): `(`'],
  ['* | parse regex "a+"', 'SVCQL_INVALID_ARGUMENT', 'regex has no named group at 1:17'],
  ['* | json "a", "b" as x', 'SVCQL_INVALID_ARGUMENT', 'json has 2 paths but 1 names at 1:5'],
  ['* | pct(@duration_ms, 0)', 'SVCQL_INVALID_ARGUMENT', 'percentile must be in (0, 100] at 1:23'],
  ['* | pct(@duration_ms, 100.5)', 'SVCQL_INVALID_ARGUMENT', 'percentile must be in (0, 100] at 1:23'],
  ['* | limit 0', 'SVCQL_INVALID_ARGUMENT', 'limit must be between 1 and 10000 at 1:11'],
  ['* | limit 10001', 'SVCQL_INVALID_ARGUMENT', 'limit must be between 1 and 10000 at 1:11'],
  ['* | top 0 host', 'SVCQL_INVALID_ARGUMENT', 'limit must be between 1 and 10000 at 1:9'],
  ['* | count by host, host', 'SVCQL_INVALID_ARGUMENT', 'duplicate column "host" at 1:20'],
];
for (const [q, code, msg] of ERRORS) test(`error: ${JSON.stringify(q)}`, () => expectError(() => parseSvcQL(q), code, msg));

test('limit errors: timeslice buckets over the range', async () => {
  const day = { startNs: ns(0), endNs: ns(86_400) };
  await expectError(
    () => runSvcQLTable(parseSvcQL('* | timeslice 1s | count by _timeslice'), day, ctx),
    'SVCQL_LIMIT_EXCEEDED',
    'timeslice 1s makes 86400 buckets, maximum 10000 at 1:15',
  );
  // 10000 buckets exactly is fine
  const t = await runSvcQLTable(parseSvcQL('* | timeslice 1s | count'), { startNs: ns(0), endNs: ns(10_000) }, ctx);
  assert.equal(t.rows, [[12]]);
  // epoch-aligned buckets overlapping [start, end): 10:00:00.5 .. 10:00:02.5 touches 3 one-second buckets
  const r = { startNs: ns(0) + 500_000_000n, endNs: ns(2) + 500_000_000n };
  const t2 = await runSvcQLTable(parseSvcQL('* | timeslice 1s | count'), r, ctx);
  assert.equal(t2.rows, [[0]]);
});

test('limit errors: more than 10000 groups', async () => {
  const logs: LogRecord[] = [];
  for (let i = 0; i < 10_001; i++)
    logs.push({ timestampNs: ns(3600) + BigInt(i), message: `m${i}`, labels: { svc_stream: 'logs', service: 'many' }, facets: {} });
  await srv.lookout.kernel.get(Tokens.Ingest).write({ logs });
  const r = { startNs: ns(3600), endNs: ns(3700) };
  await expectError(
    () => runSvcQLTable(parseSvcQL('service=many | count by _message'), r, ctx),
    'SVCQL_LIMIT_EXCEEDED',
    'more than 10000 groups at 1:16',
  );
  const ok = await runSvcQLTable(parseSvcQL('service=many | count'), r, ctx);
  assert.equal(ok.rows, [[10_001]]);
  // without limit a record query returns at most 1000 rows; with one up to 10000
  assert.is((await runSvcQLTable(parseSvcQL('service=many'), r, ctx)).rows.length, 1000);
  assert.is((await runSvcQLTable(parseSvcQL('service=many | limit 10000'), r, ctx)).rows.length, 10_000);
});

test('record queries: only where/parse/json/logfmt stages', async () => {
  for (const [q, msg] of [
    ['* | count', 'stage "count" not allowed here at 1:5'],
    ['* | where x = 1 | sort by x', 'stage "sort" not allowed here at 1:19'],
    ['* | LIMIT 5', 'stage "limit" not allowed here at 1:5'],
    ['* | fields host', 'stage "fields" not allowed here at 1:5'],
  ])
    await expectError(() => pageSvcQLRecords(parseSvcQL(q!), RANGE, { limit: 10 }, ctx), 'SVCQL_INVALID_ARGUMENT', msg!);
});

test('record pages: newest first, unchanged records, cursor until nothing is left', async () => {
  const q = parseSvcQL('*');
  const seen: number[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: { records: LogRecord[]; cursor: string | null } = await pageSvcQLRecords(q, RANGE, { limit: 5, cursor }, ctx);
    seen.push(...page.records.map(recordNo));
    cursor = page.cursor;
    pages++;
  } while (cursor);
  assert.equal(seen, [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
  assert.is(pages, 3);
  // exactly one page worth: cursor null
  const all = await pageSvcQLRecords(q, RANGE, { limit: 12 }, ctx);
  assert.is(all.cursor, null);
  assert.equal(all.records[0], exampleRecords()[11]);
});

test('record pages: filters apply, records stay unchanged', async () => {
  const q = parseSvcQL('service=api | parse "GET * * *ms" as path, code, ms | where code = 200');
  const p1 = await pageSvcQLRecords(q, RANGE, { limit: 2 }, ctx);
  assert.equal(p1.records.map(recordNo), [11, 2]);
  assert.ok(p1.cursor);
  assert.equal(p1.records[0]!.facets, { status: 200, duration_ms: 8 });
  const p2 = await pageSvcQLRecords(q, RANGE, { limit: 2, cursor: p1.cursor }, ctx);
  assert.equal(p2.records.map(recordNo), [1]);
  assert.is(p2.cursor, null);
});

test('record pages: a bad or foreign cursor is BAD_USER_INPUT "invalid cursor"', async () => {
  const q = parseSvcQL('*');
  const p1 = await pageSvcQLRecords(q, RANGE, { limit: 2 }, ctx);
  for (const [qq, range, cursor] of [
    [q, RANGE, 'garbage!'],
    [q, RANGE, 'eyJ2IjoxfQ'],
    [parseSvcQL('level=info'), RANGE, p1.cursor!],
    [q, { startNs: ns(1), endNs: ns(300) }, p1.cursor!],
  ] as const) {
    try {
      await pageSvcQLRecords(qq, range, { limit: 2, cursor }, ctx);
      assert.unreachable();
    } catch (e) {
      assert.instance(e, LookoutError);
      assert.is((e as LookoutError).kind, 'bad_request');
      assert.is((e as LookoutError).message, 'invalid cursor');
      assert.is((e as LookoutError).code, 'BAD_USER_INPUT');
    }
  }
});

test('RBAC: a scope service="api" never sees or counts other services', async () => {
  const scoped: SvcQLRunContext = { ...ctx, scope: [[{ name: 'service', op: '=', value: 'api' }]] };
  const t = await runSvcQLTable(parseSvcQL('* | count by service'), RANGE, scoped);
  assert.equal(t.rows, [['api', 6]]);
  const c = await runSvcQLTable(parseSvcQL('service=billing | count'), RANGE, scoped);
  assert.equal(c.rows, [[0]]);
  const recs = await runSvcQLTable(parseSvcQL('"ana" OR "charge"'), RANGE, scoped);
  assert.equal(recs.rows, []);
  const page = await pageSvcQLRecords(parseSvcQL('*'), RANGE, { limit: 100 }, scoped);
  assert.equal(page.records.map(recordNo), [11, 9, 6, 3, 2, 1]);
  const none = await runSvcQLTable(parseSvcQL('* | count'), RANGE, { ...ctx, scope: [] });
  assert.equal(none.rows, [[0]]);
  // the columnar path honours the scope too
  const col = await runSvcQLTable(parseSvcQL('* | count by service'), RANGE, { ...scoped, logs: columnarOverScan(ctx.logs) });
  assert.equal(col.rows, [['api', 6]]);
});

test('columnar fast path gives the row path\'s answers', async () => {
  const colCtx = { ...ctx, logs: columnarOverScan(ctx.logs) };
  for (const q of [
    '* | count by service, level',
    '* | timeslice 1m | count by _timeslice',
    'level=error | timeslice 2m | count by _timeslice, service',
    'level=~"info|error" | count as n by host | sort by n',
    '* | top 2 host',
    '* | count by nolabel',
    '* | count',
    'service=nope | count',
  ]) {
    const a = await runSvcQLTable(parseSvcQL(q), RANGE, ctx);
    const b = await runSvcQLTable(parseSvcQL(q), RANGE, colCtx);
    assert.equal(b, a, q);
  }
});

test('expression semantics: three-valued logic, presence, numeric strings, bare operands', async () => {
  const nums = async (q: string) => (await runSvcQLTable(parseSvcQL(q), RANGE, ctx)).rows.map((r) => recordNoByTs(r[0]));
  assert.equal(await nums('* | where not @status = 200'), [9, 6, 3]);
  assert.equal(await nums('* | where @retry'), [7]);
  assert.equal(await nums('* | where @status != null and @status >= 500'), [9, 3]);
  assert.equal(await nums('* | where @status = null or @status > 1000'), [12, 10, 8, 7, 5, 4]);
  assert.equal(await nums('* | where @duration_ms % 0 = null and @status = 200'), [11, 2, 1]);
  assert.equal(await nums('* | where @duration_ms % 0 > 1 or @status = 404'), [6]);
  assert.equal(await nums('* | where @user in ("ana", null)'), [4]);
  assert.equal(await nums('* | where _message contains "Timeout"'), [9]);
  assert.equal(await nums('* | where _message matches "(?i).*timeout"'), [9, 3]);
  assert.equal(await nums('* | where -@duration_ms < -500'), [9]);
  assert.equal(await nums('* | where host > "web-2"'), [12, 5, 4]);
  assert.equal(await nums('* | where _timestamp >= 1763805785000000000'), [12, 11, 10, 9]);
  assert.equal(await nums('* | where @status == "200" | limit 2'), [11, 2]);
  assert.equal(await nums('* | where service = "api" | sort by @duration_ms asc | limit 3'), [6, 11, 1]);
  assert.equal(await nums('* | sort by @status | limit 8'), [9, 3, 6, 11, 2, 1, 12, 10]);
});

test('search semantics: facets in string form, missing reads as "", backticks, keywords', async () => {
  const nums = async (q: string) => (await runSvcQLTable(parseSvcQL(q), RANGE, ctx)).rows.map((r) => recordNoByTs(r[0]));
  assert.equal(await nums('@status=500'), [3]);
  assert.equal(await nums('@retry=true'), [7]);
  assert.equal(await nums('@status=""'), [12, 10, 8, 7, 5, 4]);
  assert.equal(await nums('`service`=auth and not level=info'), [12, 4]);
  assert.equal(await nums('host=~"(?i)WEB-3"'), [12, 5, 4]);
  assert.equal(await nums('card_declined'), [7]);
  assert.equal(await nums('(service=api OR service=auth) level=error'), [12, 9, 3]);
  assert.equal(await nums('"/api/orders"'), [9, 3, 2]);
});

test('live-tail filter: search plus filter stages', () => {
  const f = compileRecordFilter(parseSvcQL('service=api | parse "GET * * *ms" as path, code, ms | where code >= 500'));
  assert.equal(exampleRecords().filter(f).map(recordNo), [3, 9]);
  assert.throws(() => compileRecordFilter(parseSvcQL('* | count')), (e: unknown) => e instanceof SvcQLError);
});

test('event search: title or text, @attributes, labels; stages rejected', () => {
  const ev = (id: string, title: string, text: string, labels: Record<string, string>, attributes: EventRecord['attributes']): EventRecord => ({
    id,
    timestampNs: ns(1),
    title,
    text,
    labels: { svc_stream: 'events', ...labels },
    attributes,
  });
  const events = [
    ev('a', 'Pod OOMKilled', 'container api restarted', { source: 'kubernetes', namespace: 'prod', reason: 'OOMKilled' }, { count: 3 }),
    ev('b', 'push to main', 'Deploy started', { source: 'webhook', repository: 'shop' }, { commits: 2, forced: false }),
  ];
  const ids = (q: string) => events.filter(compileEventFilter(parseEventSearch(q))).map((e) => e.id);
  assert.equal(ids('oomkilled'), ['a']);
  assert.equal(ids('"deploy"'), ['b']);
  assert.equal(ids('source=webhook @forced=false'), ['b']);
  assert.equal(ids('@count=3 OR repository=shop'), ['a', 'b']);
  assert.equal(eventPushdown(parseEventSearch('source=kubernetes restarted @count=3')).matchers, [
    { name: 'source', op: '=', value: 'kubernetes' },
  ]);
  assert.equal(eventPushdown(parseEventSearch('source=a OR source=b')).matchers, []);
  try {
    parseEventSearch('* | count');
    assert.unreachable();
  } catch (e) {
    assert.instance(e, SvcQLError);
    assert.is((e as SvcQLError).code, 'SVCQL_INVALID_ARGUMENT');
    assert.is((e as SvcQLError).message, 'stage "count" not allowed here at 1:5');
  }
});

test('QueryLanguage registration: svcql is available to other plugins', async () => {
  const lang = srv.lookout.kernel.get(Tokens.QueryLanguages).get('svcql');
  assert.ok(lang);
  assert.ok(lang!.parse('* | count'));
});

test.run();
