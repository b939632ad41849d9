/**
 * The shipper's single-pass bulk parser (plugins/ingest-shipper/bulk.ts + doc-scan.ts):
 * the scanner must map every document exactly as JSON.parse + documentToLog do (facet order
 * included) or decline it, and the line handling keeps the bulk API's behaviour (CRLF, blank
 * lines, a missing final newline, escaped newlines inside strings, create vs index, per-item
 * errors for update/delete, a malformed document failing the whole request with nothing
 * written). Edge cases are also sent over HTTP to the real server.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseBulk } from '../../plugins/ingest-shipper/bulk.js';
import { documentToLog, scannedDocumentToLog } from '../../plugins/ingest-shipper/documents.js';
import type { LogRecord } from '../../kernel/models.js';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';
import { allLogs } from './store.js';

const NOW = 1_700_000_000_000_000_000n;

/** A comparable form of a record: facets as ordered entries. */
const shape = (l: LogRecord) => ({ ts: String(l.timestampNs), message: l.message, labels: l.labels, facets: Object.entries(l.facets) });

function viaScanner(line: string): LogRecord | undefined {
  const b = Buffer.from(line);
  return scannedDocumentToLog(b, 0, b.length, 'idx', NOW);
}
/** The record's shape, or the error it throws. */
function outcome(f: () => LogRecord | undefined): ReturnType<typeof shape> | string | undefined {
  try {
    const r = f();
    return r === undefined ? undefined : shape(r);
  } catch (e) {
    return 'ERR ' + (e as Error).message;
  }
}
function viaJson(line: string): LogRecord {
  return documentToLog(JSON.parse(line) as Record<string, unknown>, 'idx', NOW);
}

const READ = [
  '{"@timestamp":"2025-11-22T10:00:00.123Z","message":"GET /a 200","log":{"level":"ERROR"},"service":{"name":"svc"},"host":{"name":"web-1"},"http":{"response":{"status_code":200}},"event":{"duration":1.5e6}}',
  '{"message":"multi\\nline \\"quoted\\" tab\\t \\u00e9 \\ud83d\\ude00","level":"warn"}',
  '{"message":"é ü 中 😀","service.name":"dotted","host.name":"h","log.level":"info"}',
  ' { "message" : "spaces" ,\t"n" : -0 , "big" : 12345678901234567890, "f": 0.1, "e": 2E-3, "z": -12.5e+2 } ',
  '{"msg":"from msg","message":"","level":5,"b":true,"c":false,"d":null,"e":{}}',
  '{"message":"m","kubernetes":{"namespace":"ns","pod":{"name":"p"},"container":{"name":"c"}},"a":{"b":{"c":{"d":{"e":{"f":{"g":1}}}}}}}',
  '{"message":"m","timestamp":1700000000123,"__proto__":"x","constructor":"y"}',
  '{"message":"m","-1":"not an array index","1.5":"neither"}',
];

const DECLINED = [
  '{"message":"m","tags":["a","b"]}', // arrays: JSON text of the parsed value
  '{"message":"m","a":1,"a":2}', // duplicate keys: JSON.parse keeps the last
  '{"message":"m","1":"index-like keys come first in JSON.parse objects"}',
  '{"message":"m","01":"all-digit keys are declined alike"}',
  '{"message":"m","":1}', // empty key
  '{"message":"m","k\\u0065y":1}', // escapes in keys
  '{"message":"m","a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}}', // past the flattening depth
  '{"level":"info"}', // no message: the message is the whole document
  JSON.stringify({ message: 'm', ...Object.fromEntries(Array.from({ length: 65 }, (_, i) => ['k' + i, i])) }), // many keys
];

const MALFORMED = ['{"message":"m",}', '{"message":oops}', '{"message":"m"', '{"message":"m"} x', '{"n":01,"message":"m"}', '{"n":1.,"message":"m"}', '{"s":"bad \\x","message":"m"}', '{"message":"tab\there"}', "{'message':'m'}"];

test('scanner: same record as JSON.parse + documentToLog, facet order included', () => {
  for (const line of READ) {
    const got = viaScanner(line);
    assert.ok(got, `scanner declined ${line}`);
    assert.equal(shape(got), shape(viaJson(line)), line);
  }
});

test('scanner: declines what it cannot map identically (the JSON.parse path then does)', () => {
  for (const line of DECLINED) assert.is(viaScanner(line), undefined, line);
  // A declined document still maps the same through parseBulk.
  const many = DECLINED[DECLINED.length - 1]!;
  const { logs } = parseBulk(Buffer.from(`{"index":{}}\n${many}\n`), 'idx');
  assert.equal(shape({ ...logs[0]!, timestampNs: NOW }), shape(viaJson(many)));
});

test('scanner: never accepts malformed JSON', () => {
  for (const line of MALFORMED) {
    assert.throws(() => JSON.parse(line), undefined, `fixture is valid JSON: ${line}`);
    assert.is(viaScanner(line), undefined, line);
  }
});

test('scanner: random documents (seeded) map as JSON.parse does, malformed ones are never accepted', () => {
  let seed = 12345;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  const pick = <T,>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
  const keys = ['message', 'msg', 'log', 'level', '@timestamp', 'service', 'host', 'name', 'a', 'b.c', '7', '', '__proto__', 'é', 'kubernetes', 'pod', 'x"y'];
  const scalars = ['info', 'ERROR', '', 'q"q', 'line\nbreak', 'é ü 中 😀', '\u2028', 12, -0, 1.5e300, 12345678901234567890, 0.1, -7, true, false, null, '2025-11-22T10:00:00.123Z', 1700000000];
  const value = (d: number): unknown => {
    const r = rnd();
    if (r < 0.55 || d > 9) return pick(scalars);
    if (r < 0.62) return [pick(scalars)];
    const o: Record<string, unknown> = {};
    for (let i = Math.floor(rnd() * 4); i > 0; i--) o[pick(keys)] = value(d + 1);
    return o;
  };
  const breakers: ((t: string) => string)[] = [
    (t) => t.replace(/}$/, ',}'),
    (t) => t.replace(/"/, "'"),
    (t) => t.replace(/1/, '01'),
    (t) => t.slice(0, -2),
    (t) => t.replace(/}$/, ',"n":1.}'),
    (t) => t.replace(/}$/, ',"n":-}'),
    (t) => t.replace(/}$/, ',"n":tru}'),
    (t) => t.replace(/}$/, ',"s":"bad \\x"}'),
    (t) => t.replace(/:/, '::'),
  ];
  let read = 0;
  for (let n = 0; n < 4000; n++) {
    const doc: Record<string, unknown> = {};
    for (let i = 1 + Math.floor(rnd() * 6); i > 0; i--) doc[pick(keys)] = value(1);
    let line = JSON.stringify(doc);
    if (rnd() < 0.2) line = line.replace(/,/g, ' ,\t');
    if (rnd() < 0.25) {
      line = pick(breakers)(line);
      let valid = true;
      try {
        JSON.parse(line);
      } catch {
        valid = false;
      }
      if (!valid) {
        assert.is(viaScanner(line), undefined, line);
        continue;
      }
    }
    // Invalid timestamps (e.g. -7 in @timestamp) throw the same 400 on either path.
    const got = outcome(() => viaScanner(line));
    if (got === undefined) continue;
    read++;
    assert.equal(got, outcome(() => viaJson(line)), line);
  }
  assert.ok(read > 200, `scanner read only ${read} documents`);
});

test('parseBulk: CRLF, blank lines, missing final newline, create vs index, update/delete per-item errors', () => {
  const body = [
    '{"create":{"_index":"a","_id":"c1"}}',
    '{"message":"one\\nescaped newline","service":{"name":"s"}}',
    '',
    '   ',
    '{"index":{}}',
    '{"message":"two","tags":["x"]}',
    '{"delete":{"_id":"d"}}',
    '{"update":{"_id":"u"}}',
    '{"doc":{"a":1}}',
    '{"index":{"_index":"b","_id":7}}',
    '{"message":"three"}',
  ].join('\r\n'); // and no final newline
  const { logs, items } = parseBulk(Buffer.from(body), 'dflt');
  assert.equal(
    logs.map((l) => [l.message, l.facets._index]),
    [
      ['one\nescaped newline', 'a'],
      ['two', 'dflt'],
      ['three', 'b'],
    ],
  );
  assert.equal(logs[1]!.facets.tags, '["x"]');
  assert.equal(
    items.map((i) => [i.op, i.index, i.generated ? 'generated' : i.id, i.error?.type ?? 'ok']),
    [
      ['create', 'a', 'c1', 'ok'],
      ['index', 'dflt', 'generated', 'ok'],
      ['delete', 'dflt', 'd', 'illegal_argument_exception'],
      ['update', 'dflt', 'u', 'illegal_argument_exception'],
      ['index', 'b', '7', 'ok'],
    ],
  );
});

test('parseBulk: a malformed document fails the request naming its line; a non-object document too', () => {
  assert.throws(() => parseBulk(Buffer.from('{"index":{}}\n{"message":"ok"}\n{"index":{}}\n{"message":"m",}\n'), undefined), /malformed document on line 4/);
  assert.throws(() => parseBulk(Buffer.from('{"index":{}}\r\n\r\n"text"\r\n'), undefined), /document on line 3 is not a JSON object/);
  assert.throws(() => parseBulk(Buffer.from('{"index":{}}\n'), undefined), /has no source line/);
});

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
});
test.after(async () => {
  await srv.stop();
});

const post = (body: string) =>
  fetch(srv.url + '/ingester/api/v1/shipper/_bulk', { method: 'POST', body, headers: { 'content-type': 'application/x-ndjson', 'svc-api-key': INGEST_KEY } });

test('HTTP: CRLF body without final newline stored with labels and facets; malformed body writes nothing', async () => {
  const body = [
    '{"create":{"_index":"logs-crlf"}}',
    '{"@timestamp":"2025-11-22T10:00:00.123Z","message":"first\\r\\nwith CRLF inside","log":{"level":"WARNING"},"service":{"name":"crlf-svc"},"http":{"response":{"status_code":503}}}',
    '',
    '{"index":{"_id":"i2"}}',
    '{"@timestamp":"2025-11-22T10:00:01Z","message":"second","service":{"name":"crlf-svc"},"host":{"name":"h1"}}',
  ].join('\r\n');
  const res = await post(body);
  assert.is(res.status, 200);
  const r = (await res.json()) as { errors: boolean; items: Record<string, { status: number; _id: string }>[] };
  assert.is(r.errors, false);
  assert.is(r.items[0]!.create!.status, 201);
  assert.is(r.items[1]!.index!._id, 'i2');
  const logs = (await allLogs(srv)).filter((l) => l.labels.service === 'crlf-svc');
  assert.equal(
    logs.map((l) => [l.message, l.labels.level, l.labels.host, l.facets['http.response.status_code'], l.facets._index, String(l.timestampNs)]),
    [
      ['first\r\nwith CRLF inside', 'warn', undefined, 503, 'logs-crlf', '1763805600123000000'],
      ['second', undefined, 'h1', undefined, undefined, '1763805601000000000'],
    ],
  );
  const before = (await allLogs(srv)).length;
  const bad = await post('{"index":{}}\r\n{"message":"fine","service":{"name":"crlf-bad"}}\r\n{"index":{}}\r\n{"message":"broken"\r\n');
  assert.is(bad.status, 400);
  assert.match(await bad.text(), /line 4/);
  assert.is((await allLogs(srv)).length, before);
});

test.run();
