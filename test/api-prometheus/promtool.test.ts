/**
 * `promtool query instant|range|series|labels` against Lookout: Prometheus' own client parses
 * our answers. Debian's promtool 2.42 cannot send a bearer token (no --http.config.file for
 * queries), so the test puts a loopback proxy in front that adds `Authorization: Bearer`.
 */
import { spawn } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tokens } from '../../kernel/services.js';
import { PROMTOOL_BIN, promtoolAvailable } from '../helpers/prometheus.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';

// Recent data: promtool's default label/series window is about a year around now.
const T0S = Math.floor(Date.now() / 600_000) * 600 - 600;
const T0 = T0S * 1000;

function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(PROMTOOL_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, out, err });
    });
  });
}

/** Forwards every request to Lookout with the admin bearer token added. */
function authProxy(target: string): Promise<{ url: string; server: Server }> {
  const t = new URL(target);
  const server = createServer((req, res) => {
    const up = request(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: { ...req.headers, authorization: `Bearer ${ADMIN_TOKEN}` } },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const a = server.address();
      resolve({ url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`, server });
    }),
  );
}

if (!promtoolAvailable()) {
  console.log('SKIP: /usr/bin/promtool is not installed; promtool compatibility test skipped');
  test.skip('promtool query against Lookout', () => {});
} else {
  let srv: TestServer;
  let proxy: { url: string; server: Server };

  test.before(async () => {
    srv = await startTestServer();
    const samples = [];
    for (let i = 0; i <= 40; i++) samples.push({ t: T0 - 600_000 + i * 15_000, v: i * 10 });
    await srv.lookout.kernel.get(Tokens.Ingest).write({
      metrics: [
        { labels: { __name__: 'demo_requests_total', job: 'demo', instance: 'a:1' }, samples },
        { labels: { __name__: 'demo_requests_total', job: 'demo', instance: 'b:1' }, samples: samples.map((s) => ({ t: s.t, v: s.v * 2 })) },
      ],
    });
    proxy = await authProxy(srv.url);
  });
  test.after(async () => {
    await new Promise((r) => proxy?.server.close(r));
    await srv?.stop();
  });

  test('promtool query instant', async () => {
    const r = await run(['query', 'instant', proxy.url, 'sum(demo_requests_total)', `--time=${T0S}`]);
    assert.is(r.code, 0, r.err);
    assert.ok(r.out.startsWith(`{} => 1200 @[${T0S}]`), r.out);
    const j = await run(['query', '-o', 'json', 'instant', proxy.url, 'demo_requests_total{instance="a:1"}', `--time=${T0S}`]);
    assert.is(j.code, 0, j.err);
    const parsed = JSON.parse(j.out) as { metric: Record<string, string>; value: [number, string] }[];
    assert.equal(parsed[0]!.metric, { __name__: 'demo_requests_total', instance: 'a:1', job: 'demo' });
    assert.equal(parsed[0]!.value, [T0S, '400']);
  });

  test('promtool query range', async () => {
    const r = await run([
      'query',
      'range',
      proxy.url,
      'sum(rate(demo_requests_total[2m]))',
      `--start=${T0S - 120}`,
      `--end=${T0S}`,
      '--step=1m',
    ]);
    assert.is(r.code, 0, r.err);
    assert.ok(r.out.startsWith(`{} =>\n2 @[${T0S - 120}]\n2 @[${T0S - 60}]\n2 @[${T0S}]`), r.out);
  });

  test('promtool query series and labels', async () => {
    const s = await run(['query', 'series', proxy.url, '--match=demo_requests_total', `--start=${T0S - 60}`, `--end=${T0S}`]);
    assert.is(s.code, 0, s.err);
    assert.match(s.out, /\{__name__="demo_requests_total", instance="a:1", job="demo"\}/);
    assert.match(s.out, /\{__name__="demo_requests_total", instance="b:1", job="demo"\}/);
    // Without --start/--end promtool sends Go's zero time (year 1) for both bounds' defaults.
    const all = await run(['query', 'series', proxy.url, '--match={job="demo"}']);
    assert.is(all.code, 0, all.err);
    const l = await run(['query', 'labels', proxy.url, 'instance']);
    assert.is(l.code, 0, l.err);
    assert.equal(l.out.trim().split('\n'), ['a:1', 'b:1']);
    const n = await run(['query', 'labels', proxy.url, '__name__']);
    assert.equal(n.out.trim().split('\n'), ['demo_requests_total']);
  });

  test('promtool reports our errors', async () => {
    const r = await run(['query', 'instant', proxy.url, 'sum(']);
    assert.ok(r.code !== 0);
    assert.match(r.err, /bad_data|parse error/);
  });
}

test.run();
