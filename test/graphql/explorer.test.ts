/**
 * GET /query from a browser: the explorer page (served locally, no CDN) loads in headless
 * Chromium, runs a query and a subscription, and shows the results. Screenshot:
 * .test-artifacts/graphql-explorer.png.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Tokens } from '../../kernel/services.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';
import { at, ingestExampleData } from './helpers.js';

const CHROMIUM = '/usr/bin/chromium';

/** The page's DOM, typed just enough for the checks below (the tests compile without lib.dom). */
interface PageDom {
  document: { querySelector(sel: string): { textContent: string | null } | null };
}
type Page = import('playwright-core').Page;
/** Waits until the element's text includes `needle` (or equals it when `exact`). */
const waitText = (page: Page, sel: string, needle: string, exact = false, timeout = 10_000) =>
  page.waitForFunction(
    ([s, n, e]) => {
      const t = (globalThis as unknown as PageDom).document.querySelector(s as string)?.textContent ?? '';
      return e ? t === n : t.includes(n as string);
    },
    [sel, needle, exact] as const,
    { timeout },
  );
const ARTIFACTS = join(process.cwd(), '.test-artifacts');

let srv: TestServer;
test.before(async () => {
  srv = await startTestServer({ pluginOptions: { 'api-graphql': { liveIntervalMs: 200 } } });
  await ingestExampleData(srv);
});
test.after(async () => srv.stop());

test('GET /query: HTML for browsers (CSP, no external URLs); JSON error otherwise; assets served', async () => {
  const html = await srv.fetch('/query', { token: null, headers: { accept: 'text/html,application/xhtml+xml' } });
  assert.is(html.status, 200);
  assert.match(html.headers.get('content-type') ?? '', /text\/html/);
  assert.match(html.headers.get('content-security-policy') ?? '', /default-src 'self'/);
  const page = await html.text();
  assert.match(page, /Lookout GraphQL/);
  assert.not.match(page, /https?:\/\//);
  for (const a of ['explorer.js', 'explorer.css']) {
    const r = await srv.fetch(`/query/assets/${a}`, { token: null });
    assert.is(r.status, 200);
    assert.not.match(await r.text(), /https?:\/\/(?!localhost)/);
  }
  assert.is((await srv.fetch('/query/assets/../../package.json', { token: null })).status, 404);
  const json = await srv.fetch('/query', { token: null, headers: { accept: 'application/json' } });
  assert.is(json.status, 200);
  const body = (await json.json()) as { errors: { extensions: { code: string } }[] };
  assert.is(body.errors[0]!.extensions.code, 'BAD_USER_INPUT');
});

if (!existsSync(CHROMIUM)) {
  console.log(`SKIP: ${CHROMIUM} is not installed (apt-get install -y chromium)`);
  test.skip('explorer in headless Chromium', () => undefined);
} else {
  test('explorer in headless Chromium: runs a query and a live subscription', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      const external: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(srv.url) && !r.url().startsWith(srv.url.replace('http', 'ws'))) external.push(r.url());
      });
      await page.goto(srv.url + '/query');
      await page.fill('#token', ADMIN_TOKEN);
      await page.dispatchEvent('#token', 'change');
      // The first example (a SvcQL table) over SVCQL.md's data.
      await page.fill('#vars', JSON.stringify({ q: '* | count by service', startTs: at('10:00:00'), endTs: at('10:05:00') }));
      await page.click('#run');
      await waitText(page, '#result', 'TableResult');
      const table = JSON.parse((await page.textContent('#result')) ?? '{}');
      assert.equal(table.data.getLogMetricsResultWithSvcQl.TableResult, [['api', 6], ['auth', 3], ['billing', 3]]);
      assert.match((await page.textContent('#status')) ?? '', /HTTP 200/);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'graphql-explorer.png') });
      // A mutation then a query, through the UI.
      await page.fill('#doc', 'mutation { addFavoriteFacet(facet: "@status", displayName: "Status", datatype: "NUMBER", facetGroup: "http") }');
      await page.fill('#vars', '{}');
      await page.click('#run');
      await waitText(page, '#result', 'addFavoriteFacet');
      await page.fill('#doc', '{ getFavoriteFacets { name dataType group displayName } }');
      await page.click('#run');
      await waitText(page, '#result', '"displayName": "Status"');
      const result = JSON.parse((await page.textContent('#result')) ?? '{}');
      assert.equal(result, { data: { getFavoriteFacets: [{ name: '@status', dataType: 'NUMBER', group: 'http', displayName: 'Status' }] } });
      // A live-tail subscription over the page's own graphql-transport-ws client.
      await page.fill('#doc', 'subscription { getLogsWithSvcQlStream(query: "*", live: true) { logs { message } } }');
      await page.click('#run');
      await waitText(page, '#status', 'subscribed', true);
      await new Promise((r) => setTimeout(r, 200));
      await srv.lookout.kernel.get(Tokens.Ingest).write({
        logs: [{ timestampNs: BigInt(Date.now()) * 1_000_000n, message: 'seen in the browser', labels: { svc_stream: 'logs' }, facets: {} }],
      });
      await waitText(page, '#result', 'seen in the browser');
      // The schema panel lists the operations.
      await page.click('#schema');
      await waitText(page, '#docs-body', 'getLogsWithSvcQlStream');
      await page.click('#stop');
      assert.equal(external, []);
    } finally {
      await browser.close();
    }
  });
}

test.run();
