/**
 * The columnar remote-write path: the columnar decoder gives the same series and sample bits as
 * the general decoder (cache cold and warm), label sets that differ by one byte or only in order
 * stay distinct, hash collisions are caught by the byte comparison, anything the columns do not
 * carry falls back; and the embedded store's appendColumns (series ids cached in the handles,
 * the columnar WAL record) survives restarts and dropped series.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedBackend, type EmbeddedBackend } from '../../backends/embedded/index.js';
import { createLogger } from '../../kernel/logger.js';
import { labelsKey, STALE_NAN, isStaleMarker, type MetricColumns, type SeriesHandle } from '../../kernel/models.js';
import { decodeWriteRequestV1Columns } from '../../plugins/ingest-remote-write/decode-columns.js';
import { decodeWriteRequestV1 } from '../../plugins/ingest-remote-write/decode-v1.js';
import { LabelSetCache } from '../../plugins/ingest-remote-write/label-cache.js';
import { WireError } from '../../plugins/ingest-remote-write/wire.js';
import { encodeWriteRequest } from '../helpers/remote-write.js';
import { INGEST_KEY, startTestServer } from '../helpers/server.js';
import { Tokens } from '../../kernel/services.js';
import snappy from 'snappyjs';

const T0 = 1_700_000_000_000;
const bits = (v: number) => {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(v);
  return b.toString('hex');
};

/** Rows `labelsKey | t | value bits` of a columnar batch. */
function columnRows(c: MetricColumns): string[] {
  const out: string[] = [];
  c.series.forEach((h, k) => {
    for (let i = c.offsets[k]!; i < c.offsets[k + 1]!; i++) out.push(`${labelsKey(h.labels)}|${c.timestamps[i]}|${bits(c.values[i]!)}`);
  });
  return out;
}

// ---- raw protobuf encoding with labels in a chosen order --------------------------------------
function varint(n: number, out: number[]): void {
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
}
function field(tag: number, body: Uint8Array): Buffer {
  const head: number[] = [tag];
  varint(body.length, head);
  return Buffer.concat([Buffer.from(head), body]);
}
function rawSeries(labels: [string, string][], samples: [number, number][]): Buffer {
  const parts = labels.map(([n, v]) => field(0x0a, Buffer.concat([field(0x0a, Buffer.from(n)), field(0x12, Buffer.from(v))])));
  for (const [t, v] of samples) {
    const s = Buffer.alloc(9);
    s[0] = 0x09;
    s.writeDoubleLE(v, 1);
    const ts: number[] = [0x10];
    varint(t, ts);
    parts.push(field(0x12, Buffer.concat([s, Buffer.from(ts)])));
  }
  return field(0x0a, Buffer.concat(parts));
}

test('columnar decoder equals the general decoder, cold and warm cache', () => {
  const series = [];
  for (let i = 0; i < 300; i++) {
    const samples = [];
    for (let j = 0; j < (i % 4); j++) samples.push({ t: T0 + j * 15_000 + (i % 3 === 0 ? -T0 - 9000 : 0), v: j === 2 ? STALE_NAN : i * 1.25 - j });
    series.push({ labels: { __name__: `m_${i % 7}`, instance: `h${i % 11}`, i: String(i) }, samples });
  }
  series.push({ labels: { __name__: 'zero_t' }, samples: [{ t: 0, v: -0 }] });
  const body = encodeWriteRequest(series, [{ metric: 'm_1', type: 'counter', help: 'h', unit: '' }]);
  const general = decodeWriteRequestV1(body);
  const expect: string[] = [];
  for (const s of general.series) for (const x of s.samples) expect.push(`${labelsKey(s.labels)}|${x.t}|${bits(x.v)}`);
  const cache = new LabelSetCache();
  const handles: SeriesHandle[][] = [];
  for (const pass of [1, 2]) {
    const d = decodeWriteRequestV1Columns(body, undefined, cache)!;
    assert.ok(d, `pass ${pass} decodes in columns`);
    assert.equal(columnRows(d.columns), expect, `pass ${pass}`);
    assert.is(d.samples, general.samples);
    assert.equal(d.metadata, general.metadata);
    handles.push(d.columns.series);
  }
  // The warm pass hands back the very same handles (what stores key their cached ids on).
  assert.ok(handles[0]!.every((h, k) => h === handles[1]![k]));
  const stale = decodeWriteRequestV1Columns(body, undefined, cache)!.columns;
  let staleCount = 0;
  for (const v of stale.values) if (isStaleMarker(v)) staleCount++;
  assert.is(staleCount, series.filter((s) => s.samples.length > 2).length, 'staleness markers keep their bits');
});

test('label sets that differ by one byte or only in label order are distinct series', () => {
  const cache = new LabelSetCache();
  const body = Buffer.concat([
    rawSeries([['__name__', 'up'], ['job', 'a']], [[T0, 1]]),
    rawSeries([['__name__', 'up'], ['job', 'b']], [[T0, 2]]),
    rawSeries([['job', 'a'], ['__name__', 'up']], [[T0, 3]]), // same labels, other order: other bytes
    rawSeries([['__name__', 'up'], ['job', 'a']], [[T0 + 1, 4]]),
  ]);
  for (let pass = 0; pass < 2; pass++) {
    const c = decodeWriteRequestV1Columns(body, undefined, cache)!.columns;
    assert.equal(c.series.map((h) => ({ ...h.labels })), [
      { __name__: 'up', job: 'a' },
      { __name__: 'up', job: 'b' },
      { __name__: 'up', job: 'a' },
      { __name__: 'up', job: 'a' },
    ]);
    assert.ok(c.series[0] === c.series[3], 'identical bytes share one handle');
    assert.ok(c.series[0] !== c.series[2], 'different bytes get their own entry');
    assert.equal([...c.values], [1, 2, 3, 4]);
  }
});

test('a label run that starts with the expected series\' bytes but goes on is another series', () => {
  const cache = new LabelSetCache();
  const a = rawSeries([['__name__', 'a']], [[T0, 1]]);
  const b = rawSeries([['__name__', 'b']], [[T0, 2]]);
  // Same first label bytes as b, one more label after them; and b without samples.
  const bMore = rawSeries([['__name__', 'b'], ['x', 'y']], [[T0, 3]]);
  const bEmpty = rawSeries([['__name__', 'b']], []);
  const names = (body: Buffer) => decodeWriteRequestV1Columns(body, undefined, cache)!.columns.series.map((h) => ({ ...h.labels }));
  assert.equal(names(Buffer.concat([a, b])), [{ __name__: 'a' }, { __name__: 'b' }]);
  assert.equal(names(Buffer.concat([a, bMore])), [{ __name__: 'a' }, { __name__: 'b', x: 'y' }]);
  assert.equal(names(Buffer.concat([a, b])), [{ __name__: 'a' }, { __name__: 'b' }]);
  assert.equal(names(Buffer.concat([a, bEmpty, b])), [{ __name__: 'a' }, { __name__: 'b' }], 'a series without samples stores nothing');
});

test('hash collisions are caught by the byte comparison', () => {
  const realHash = LabelSetCache.hash;
  LabelSetCache.hash = () => 42; // every label set collides
  try {
    const cache = new LabelSetCache();
    const body = Buffer.concat([
      rawSeries([['__name__', 'a']], [[T0, 1]]),
      rawSeries([['__name__', 'b']], [[T0, 2]]),
      rawSeries([['__name__', 'c']], [[T0, 3]]),
    ]);
    for (let pass = 0; pass < 3; pass++) {
      const c = decodeWriteRequestV1Columns(body, undefined, cache)!.columns;
      assert.equal(c.series.map((h) => h.labels.__name__), ['a', 'b', 'c'], `pass ${pass}`);
      assert.equal([...c.values], [1, 2, 3]);
    }
    assert.is(cache.size, 1, 'one entry per hash; the others decode every time');
  } finally {
    LabelSetCache.hash = realHash;
  }
});

test('the 8-byte comparison tells apart label bytes that are equal doubles (+0/-0) and NaNs', () => {
  // Label values whose bytes read, at some 8-byte step of the comparison, as +0 against -0 or as
  // NaNs with different payloads: equal or unordered as doubles, different as bytes. Every
  // placement of the pattern is tried, so one of them falls on a step's word.
  const values: string[] = ['\u0000'.repeat(24)];
  for (let p = 0; p < 16; p++) values.push('\u0000'.repeat(p) + '\u0080' + '\u0000'.repeat(23 - p));
  for (let p = 0; p < 16; p++) {
    for (const payload of ['\u0001', '\u0002']) values.push('\u0000'.repeat(p) + payload + '\u0000'.repeat(5) + '\u00f0\u007f' + '\u0000'.repeat(16 - p));
  }
  const raw = (value: string, v: number) => {
    // The value's bytes go in as they are (latin1, not UTF-8) so the words above reach the cache.
    const lv = Buffer.from(value, 'latin1');
    const name = Buffer.concat([Buffer.from([0x0a, 8]), Buffer.from('__name__'), Buffer.from([0x12, 2]), Buffer.from('up')]);
    const val = Buffer.concat([Buffer.from([0x0a, 1]), Buffer.from('k'), Buffer.from([0x12, lv.length]), lv]);
    const sample = Buffer.alloc(11);
    sample[0] = 0x09;
    sample.writeDoubleLE(v, 1);
    sample[9] = 0x10;
    sample[10] = 1;
    const labels = Buffer.concat([Buffer.from([0x0a, name.length]), name, Buffer.from([0x0a, val.length]), val]);
    const ts = Buffer.concat([labels, Buffer.from([0x12, sample.length]), sample]);
    return Buffer.concat([Buffer.from([0x0a, ts.length]), ts]);
  };
  const labelsOf = (body: Buffer, cache: LabelSetCache) => decodeWriteRequestV1Columns(body, undefined, cache)!.columns.series.map((h) => h.labels.k);
  const decoded = (v: string) => Buffer.from(v, 'latin1').toString('utf8'); // as the decoder reads the bytes
  // The "next" guess: after "m" came the all-zero value, so the value that follows "m" next is
  // first compared with it.
  const cache = new LabelSetCache();
  for (const v of values) {
    labelsOf(Buffer.concat([raw('m', 1), raw(values[0]!, 2)]), cache);
    assert.equal(labelsOf(Buffer.concat([raw('m', 1), raw(v, 2)]), cache), ['m', decoded(v)], 'guess path');
  }
  // The hash path: every label set hashes alike, so each is compared with the cached all-zero one.
  const realHash = LabelSetCache.hash;
  LabelSetCache.hash = () => 7;
  try {
    const c2 = new LabelSetCache();
    for (let pass = 0; pass < 2; pass++) {
      assert.equal(labelsOf(Buffer.concat(values.map((v, k) => raw(v, k))), c2), values.map(decoded), `hash path, pass ${pass}`);
    }
  } finally {
    LabelSetCache.hash = realHash;
  }
});

test('histograms and labels after samples fall back; malformed input throws', () => {
  const cache = new LabelSetCache();
  const labelAfter = field(0x0a, Buffer.concat([rawSeries([['__name__', 'x']], [[T0, 1]]).subarray(2), field(0x0a, Buffer.concat([field(0x0a, Buffer.from('job')), field(0x12, Buffer.from('j'))]))]));
  assert.is(decodeWriteRequestV1Columns(labelAfter, undefined, cache), undefined);
  const general = decodeWriteRequestV1(labelAfter, undefined, cache);
  assert.equal({ ...general.series[0]!.labels }, { __name__: 'x', job: 'j' });
  const hist = Buffer.concat([rawSeries([['__name__', 'h']], []), Buffer.from([0x22, 0x00])]);
  hist[1]! += 2; // the histogram (tag 4, empty) inside the series
  assert.is(decodeWriteRequestV1Columns(hist, undefined, cache), undefined);
  const good = rawSeries([['__name__', 'ok']], [[T0, 1]]);
  for (let cut = 1; cut < good.length; cut++) {
    assert.throws(() => decodeWriteRequestV1Columns(good.subarray(0, cut), undefined, cache), (e: unknown) => e instanceof WireError, `cut ${cut}`);
  }
  assert.throws(() => decodeWriteRequestV1Columns(rawSeries([['job', 'x']], [[T0, 1]]), undefined, cache), /metric name/);
  assert.throws(() => decodeWriteRequestV1Columns(rawSeries([['__name__', 'x'], ['__name__', 'y']], [[T0, 1]]), undefined, cache), /duplicate/);
});

// ---- embedded store ----------------------------------------------------------------------------

function open(dir: string, retentionMs = 0): EmbeddedBackend {
  return openEmbeddedBackend({
    dir,
    logger: createLogger('error', {}, () => undefined),
    fsync: 'always',
    maintenanceIntervalMs: 0,
    retentionMs: { metrics: retentionMs, logs: 0, traces: 0, events: 0 },
  });
}

function columns(handles: SeriesHandle[], t: number, values: number[]): MetricColumns {
  return {
    series: handles,
    offsets: Uint32Array.from(handles.map((_, k) => k).concat(handles.length)),
    timestamps: new Float64Array(handles.length).fill(t),
    values: Float64Array.from(values),
  };
}

async function all(b: EmbeddedBackend): Promise<string[]> {
  const out: string[] = [];
  for await (const s of b.metrics.select([{ name: '__name__', op: '=~', value: '.+' }], 0, T0 * 2)) {
    for (let i = 0; i < s.timestamps.length; i++) out.push(`${labelsKey(s.labels)}|${s.timestamps[i]}|${bits(s.values[i]!)}`);
  }
  return out;
}

test('appendColumns: replayed from the WAL after a crash, stale markers kept, handles reused', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-cols-'));
  try {
    const h = (name: string): SeriesHandle => ({ labels: { __name__: name, job: 'j' }, storeOwner: null, storeRef: -1 });
    const hs = [h('a'), h('b'), h('c')];
    const a = open(dir);
    await a.metrics.appendColumns(columns(hs, T0, [1, 2, 3]));
    assert.ok(hs.every((x) => x.storeOwner === a.metrics), 'the store remembered its ids');
    const withStale = columns(hs, T0 + 1000, [4, 0, 6]);
    withStale.values[1] = STALE_NAN; // not through a JS array literal, which may canonicalise NaN
    await a.metrics.appendColumns(withStale);
    // Rows form (the general path) and columns interleave on the same series.
    await a.metrics.append([{ labels: { __name__: 'a', job: 'j' }, samples: [{ t: T0 + 2000, v: 7 }] }]);
    const before = await all(a);
    assert.is(before.length, 7);
    // No close: a second instance replays the WAL, as after kill -9.
    const b = open(dir);
    assert.equal(await all(b), before);
    for await (const s of b.metrics.select([{ name: '__name__', op: '=', value: 'b' }], 0, T0 * 2)) assert.ok(isStaleMarker(s.values[1]!));
    // Handles owned by the other store are re-resolved, not trusted.
    await b.metrics.appendColumns(columns(hs, T0 + 3000, [8, 9, 10]));
    assert.ok(hs.every((x) => x.storeOwner === b.metrics));
    assert.is((await all(b)).length, 10);
    await b.close();
    const c = open(dir);
    assert.is((await all(c)).length, 10);
    await c.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('appendColumns: a handle whose series was dropped by retention resolves to a new series', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-cols-'));
  try {
    const hs: SeriesHandle[] = [{ labels: { __name__: 'old', job: 'j' }, storeOwner: null, storeRef: -1 }];
    const b = open(dir, 3600_000);
    await b.metrics.appendColumns(columns(hs, T0, [1]));
    const oldRef = hs[0]!.storeRef;
    await b.maintenance({ flush: true, now: T0 + 10 * 3600_000 }); // flushed, then expired
    assert.equal(await all(b), []);
    await b.metrics.appendColumns(columns(hs, T0 + 11 * 3600_000, [2]));
    assert.ok(hs[0]!.storeRef !== oldRef, 'a new series id');
    assert.equal(await all(b), [`${labelsKey({ __name__: 'old', job: 'j' })}|${T0 + 11 * 3600_000}|${bits(2)}`]);
    assert.equal(await b.metrics.series([[{ name: '__name__', op: '=', value: 'old' }]], 0, T0 * 2), [{ __name__: 'old', job: 'j' }]);
    await b.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('appendColumns: label sets listed in another order are the same series', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-cols-'));
  try {
    const b = open(dir);
    const sorted: SeriesHandle = { labels: { __name__: 'o', a: '1', z: '2' }, storeOwner: null, storeRef: -1 };
    const unsorted: SeriesHandle = { labels: { z: '2', __name__: 'o', a: '1' }, storeOwner: null, storeRef: -1 };
    await b.metrics.appendColumns(columns([unsorted], T0, [1]));
    await b.metrics.appendColumns(columns([sorted], T0 + 1000, [2]));
    await b.metrics.append([{ labels: { a: '1', z: '2', __name__: 'o' }, samples: [{ t: T0 + 2000, v: 3 }] }]);
    assert.is(sorted.storeRef, unsorted.storeRef);
    const key = labelsKey({ __name__: 'o', a: '1', z: '2' });
    assert.equal(await all(b), [`${key}|${T0}|${bits(1)}`, `${key}|${T0 + 1000}|${bits(2)}`, `${key}|${T0 + 2000}|${bits(3)}`]);
    const [labels] = await b.metrics.series([[{ name: '__name__', op: '=', value: 'o' }]], 0, T0 * 2);
    assert.equal(Object.keys(labels!), ['__name__', 'a', 'z'], 'stored label sets are sorted');
    await b.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('over HTTP on both backends: columns reach embedded appendColumns and the memory fallback alike', async () => {
  for (const backend of ['embedded', 'memory']) {
    const srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] }, storage: { backend } });
    try {
      const now = Date.now();
      const series = [
        { labels: { __name__: 'col_up', job: 'a' }, samples: [{ t: now - 1000, v: 1 }, { t: now, v: 2 }] },
        { labels: { __name__: 'col_up', job: 'b' }, samples: [{ t: now, v: 3 }] },
      ];
      const body = Buffer.from(snappy.compress(encodeWriteRequest(series)));
      const headers = { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', authorization: `Bearer ${INGEST_KEY}` };
      for (const path of ['/ingester/write', '/ingester/write', '/ingester/cloud_metrics']) {
        const res = await fetch(srv.url + path, { method: 'POST', body, headers });
        assert.is(res.status, 204, `${backend} ${path}: ${await res.text()}`);
      }
      // A malformed request (truncated protobuf) is 400 and writes nothing.
      const bad = Buffer.from(snappy.compress(encodeWriteRequest([{ labels: { __name__: 'col_bad' }, samples: [{ t: now, v: 1 }] }]).subarray(0, 9)));
      assert.is((await fetch(srv.url + '/ingester/write', { method: 'POST', body: bad, headers })).status, 400);
      const storage = srv.lookout.kernel.get(Tokens.Storage);
      const got: string[] = [];
      for await (const s of storage.metrics.select([{ name: '__name__', op: '=~', value: 'col_.*' }], 0, now + 1)) {
        got.push(`${labelsKey(s.labels)}=${[...s.values].join(',')}`);
      }
      got.sort();
      assert.equal(got, [
        `${labelsKey({ __name__: 'col_up', job: 'a' })}=1,2`,
        `${labelsKey({ __name__: 'col_up', job: 'a', svc_origin: 'cloud_metrics' })}=1,2`,
        `${labelsKey({ __name__: 'col_up', job: 'b' })}=3`,
        `${labelsKey({ __name__: 'col_up', job: 'b', svc_origin: 'cloud_metrics' })}=3`,
      ], backend);
    } finally {
      await srv.stop();
    }
  }
});

test.run();
