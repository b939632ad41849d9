/**
 * Every example of SVCQL.md, on its example data, ingested through the real server's ingest
 * pipeline and queried through the plugin's API against the server's storage.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tokens } from '../../kernel/services.js';
import {
  parseSvcQL,
  runSvcQLTable,
  SvcQLError,
  type SvcQLRunContext,
  type SvcQLTable,
  type TimeRangeNs,
} from '../../plugins/query-svcql/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ingestExamples, M, ns, RANGE, recordNoByTs } from './fixtures.js';

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

const run = (q: string, range: TimeRangeNs = RANGE): Promise<SvcQLTable> => runSvcQLTable(parseSvcQL(q), range, ctx);

/** `→ 12 11 …`: record numbers in result order. */
function records(q: string, want: number[]) {
  test(`${q} → ${want.join(' ') || 'no rows'}`, async () => {
    const t = await run(q);
    assert.equal(t.columns.slice(0, 2), ['_timestamp', '_message']);
    assert.equal(t.rows.map((r) => recordNoByTs(r[0])), want);
    assert.equal(t.groupKeys, []);
    assert.equal(t.aggrValues, []);
  });
}

/** `→ 11 [...], ...`: record numbers and the remaining cells. */
function recordRows(q: string, want: [number, unknown[]][], columns?: string[]) {
  test(`${q} → ${JSON.stringify(want)}`, async () => {
    const t = await run(q);
    if (columns) assert.equal(t.columns, columns);
    assert.equal(
      t.rows.map((r) => [recordNoByTs(r[0]), r.slice(1)]),
      want,
    );
  });
}

/** `→ [...] [...]`: aggregated rows. */
function table(q: string, want: unknown[][], range: TimeRangeNs = RANGE, columns?: string[]) {
  test(`${q} → ${JSON.stringify(want)}`, async () => {
    const t = await run(q, range);
    assert.equal(t.rows, want);
    if (columns) assert.equal(t.columns, columns);
  });
}

function error(q: string, code: string, message: string) {
  test(`${q} → ${code} ${message}`, async () => {
    try {
      await run(q);
      assert.unreachable('should have thrown');
    } catch (e) {
      assert.instance(e, SvcQLError);
      const err = e as SvcQLError;
      assert.is(err.code, code);
      assert.is(err.message, message);
      const m = /at (\d+):(\d+)/.exec(message)!;
      assert.is(err.line, Number(m[1]));
      assert.is(err.column, Number(m[2]));
    }
  });
}

records('*', [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
records('service=api level!=info', [11, 9, 3]);
records('host=~"web"', []);
records('"timeout" OR @user="ana"', [9, 4, 3]);
records('level=~"warn|error" NOT service=api', [12, 7, 4]);
records('service=api | where @duration_ms / 1000 > 0.01 and @status != 500', [9, 2, 1]);
records('* | where @status not in (200, 404)', [9, 3]);
records('* | where @status = null', [12, 10, 8, 7, 5, 4]);
records('* | where _message matches "GET /api/.*"', [9, 6, 3, 2, 1]);
recordRows(
  'service=api | parse "GET * * *ms" as path, code, ms | where code = 200 | fields path, ms',
  [
    [11, ['/health', '8']],
    [2, ['/api/orders', '30']],
    [1, ['/api/users', '12']],
  ],
  ['_timestamp', 'path', 'ms'],
);
table(
  'service=api | parse "GET * * *ms" as path, code, ms | avg(ms) as avg_ms, max(ms) by code',
  [
    ['200', 16.666666666666668, 30],
    ['404', 5, 5],
    ['500', 250, 250],
    ['503', 800, 800],
  ],
  RANGE,
  ['code', 'avg_ms', '_max'],
);
table('service=billing | parse regex "id=(?<charge>ch_[0-9]+)" nodrop | count by charge', [
  ['ch_1', 1],
  [null, 2],
]);
table('service=auth | json "user", "attempts" | sum(attempts) as total by user', [
  ['ana', 8],
  ['bob', 1],
]);
table('service=auth | json | where ok = false | count by user', [['ana', 2]]);
recordRows('service=billing | logfmt | where amount > 10 | fields msg, amount', [[8, ['charge ok', '42.5']]], [
  '_timestamp',
  'msg',
  'amount',
]);
table(
  '* | timeslice 1m | count by _timeslice',
  [
    [M(0), 3],
    [M(1), 3],
    [M(2), 2],
    [M(3), 3],
    [M(4), 1],
  ],
  RANGE,
  ['_timeslice', '_count'],
);
table(
  '* | timeslice 1m | count by _timeslice',
  [
    [M(0), 2],
    [M(1), 3],
  ],
  { startNs: ns(20), endNs: ns(135) },
);
table(
  'level=error | timeslice 2m | count by _timeslice, service',
  [
    [M(0), 'api', 1],
    [M(2), 'api', 1],
    [M(2), 'billing', 1],
    [M(4), 'auth', 1],
  ],
  RANGE,
  ['_timeslice', 'service', '_count'],
);
table(
  '* | count, count_distinct(host) as hosts by service',
  [
    ['api', 6, 2],
    ['auth', 3, 1],
    ['billing', 3, 2],
  ],
  RANGE,
  ['service', '_count', 'hosts'],
);
table('* | count by level | sort by _count', [
  ['info', 6],
  ['error', 4],
  ['debug', 1],
  ['warn', 1],
]);
table('* | top 2 host', [
  ['web-1', 5],
  ['web-2', 4],
], RANGE, ['host', '_count']);
table('* | pct(@duration_ms, 50) as p50, pct(@duration_ms, 95), sum(@duration_ms)', [[12, 800, 1105]], RANGE, [
  'p50',
  '_pct95',
  '_sum',
]);
table('level=error | first(service), last(service)', [['api', 'auth']], RANGE, ['_first', '_last']);
recordRows(
  '* | dedup by host | fields host',
  [
    [12, ['web-3']],
    [11, ['web-1']],
    [10, ['web-2']],
  ],
  ['_timestamp', 'host'],
);
table('service=nope | count', [[0]], RANGE, ['_count']);
records('timeout NOT service=billing', [9, 3]);
error('service=', 'SVCQL_SYNTAX_ERROR', 'unexpected end of query at 1:9, expected value');
error('* | parse "a=* b=*" as x', 'SVCQL_INVALID_ARGUMENT', 'parse pattern has 2 wildcards but 1 names at 1:11');
error('* | count, count by host', 'SVCQL_INVALID_ARGUMENT', 'duplicate column "_count" at 1:12');

// GRAPHQL.md's two table examples (same data, same API).
test('service=api level=error | limit 1 (GRAPHQL.md)', async () => {
  const t = await run('service=api level=error | limit 1');
  assert.equal(t, {
    columns: ['_timestamp', '_message'],
    groupKeys: [],
    aggrValues: [],
    rows: [['1763805785000000000', 'GET /api/orders 503 800ms Timeout']],
  });
});
test('level=error | timeslice 2m | count by _timeslice, service (GRAPHQL.md)', async () => {
  const t = await run('level=error | timeslice 2m | count by _timeslice, service');
  assert.equal(t, {
    columns: ['_timeslice', 'service', '_count'],
    groupKeys: ['_timeslice', 'service'],
    aggrValues: ['_count'],
    rows: [
      [1763805600000, 'api', 1],
      [1763805720000, 'api', 1],
      [1763805720000, 'billing', 1],
      [1763805840000, 'auth', 1],
    ],
  });
});

test.run();
