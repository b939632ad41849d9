import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac } from 'node:crypto';
import { INGEST_KEY, startTestServer, type TestServer } from '../helpers/server.js';
import { allEvents } from './store.js';

const SECRET = 'webhook-secret';
let open: TestServer; // no secret, no ingest keys
let signed: TestServer; // webhooks.secret + ingest keys
test.before(async () => {
  open = await startTestServer();
  signed = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] }, webhooks: { secret: SECRET } });
});
test.after(async () => {
  await open.stop();
  await signed.stop();
});

const push = {
  ref: 'refs/heads/main',
  before: 'a'.repeat(40),
  after: 'b'.repeat(40),
  repository: { id: 1, full_name: 'org/repo', name: 'repo', owner: { login: 'org' } },
  sender: { login: 'ana', id: 7 },
  pusher: { name: 'ana' },
  commits: [{ id: 'b'.repeat(40), message: 'Fix the bug' }],
  head_commit: { id: 'b'.repeat(40), message: 'Fix the bug' },
};

const sig = (body: string) => 'sha256=' + createHmac('sha256', SECRET).update(body).digest('hex');

const hook = (srv: TestServer, body: string, headers: Record<string, string>) =>
  fetch(srv.url + '/ingester/webhook_a/events', { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

test('push webhook → event with repository/event labels and a title', async () => {
  const res = await hook(open, JSON.stringify(push), { 'x-github-event': 'push', 'x-github-delivery': 'd-1' });
  assert.is(res.status, 200);
  const [e] = await allEvents(open);
  assert.is(e!.id, 'd-1');
  assert.equal(e!.labels, { svc_stream: 'events', source: 'webhook', event: 'push', repository: 'org/repo' });
  assert.is(e!.title, 'push to org/repo (main)');
  assert.match(e!.text, /Fix the bug/);
  assert.is(e!.attributes.sender, 'ana');
  assert.is(e!.attributes.repository, 'org/repo');
  assert.is(e!.attributes.delivery, 'd-1');
});

test('pull_request webhook as form-encoded payload → action label, title with number', async () => {
  const payload = { action: 'opened', number: 12, pull_request: { number: 12, title: 'Add cache', body: 'Details' }, repository: { full_name: 'org/repo' } };
  const res = await fetch(open.url + '/ingester/webhook_a/events', {
    method: 'POST',
    body: new URLSearchParams({ payload: JSON.stringify(payload) }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-github-event': 'pull_request', 'x-github-delivery': 'd-2' },
  });
  assert.is(res.status, 200);
  const e = (await allEvents(open)).find((x) => x.id === 'd-2')!;
  assert.is(e.labels.action, 'opened');
  assert.is(e.title, 'pull_request opened on org/repo: #12 Add cache');
  assert.is(e.text, 'Details');
});

test('signed server: valid signature accepted; missing/invalid signature 400; bad key 400; nothing written', async () => {
  const body = JSON.stringify(push);
  let res = await hook(signed, body, { 'x-github-event': 'push', 'x-github-delivery': 's-1', 'x-hub-signature-256': sig(body), 'svc-api-key': INGEST_KEY });
  assert.is(res.status, 200);
  res = await hook(signed, body, { 'x-github-event': 'push', 'svc-api-key': INGEST_KEY });
  assert.is(res.status, 400);
  assert.match(await res.text(), /missing X-Hub-Signature-256/);
  res = await hook(signed, body, { 'x-github-event': 'push', 'x-hub-signature-256': sig(body + ' '), 'svc-api-key': INGEST_KEY });
  assert.is(res.status, 400);
  assert.match(await res.text(), /invalid X-Hub-Signature-256/);
  res = await hook(signed, body, { 'x-github-event': 'push', 'x-hub-signature-256': 'sha256=zz', 'svc-api-key': INGEST_KEY });
  assert.is(res.status, 400);
  res = await hook(signed, body, { 'x-github-event': 'push', 'x-hub-signature-256': sig(body), 'svc-api-key': 'nope' });
  assert.is(res.status, 400);
  assert.equal((await allEvents(signed)).map((e) => e.id), ['s-1']);
});

test('webhook errors: no event header, malformed JSON, unsupported type', async () => {
  const before = (await allEvents(open)).length;
  let res = await hook(open, JSON.stringify(push), {});
  assert.is(res.status, 400);
  assert.match(await res.text(), /X-GitHub-Event/);
  res = await hook(open, '{"ref":', { 'x-github-event': 'push' });
  assert.is(res.status, 400);
  res = await hook(open, '{}', { 'x-github-event': 'push', 'content-type': 'text/html' });
  assert.is(res.status, 400);
  assert.is((await allEvents(open)).length, before);
});

const busEvent = {
  version: '0',
  id: 'bus-1',
  'detail-type': 'EC2 Instance State-change Notification',
  source: 'aws.ec2',
  account: '123456789012',
  time: '2025-11-22T10:00:00Z',
  region: 'eu-west-1',
  resources: ['arn:aws:ec2:eu-west-1:123456789012:instance/i-1'],
  detail: { 'instance-id': 'i-1', state: 'running' },
};

test('/bus_events: single envelope and arrays → events labelled source=bus', async () => {
  let res = await fetch(open.url + '/ingester/bus_events', { method: 'POST', body: JSON.stringify(busEvent), headers: { 'content-type': 'application/json' } });
  assert.is(res.status, 200);
  res = await fetch(open.url + '/ingester/bus_events', {
    method: 'POST',
    body: JSON.stringify([{ ...busEvent, id: 'bus-2' }, { ...busEvent, id: 'bus-3', detail: { message: 'hello' } }]),
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(await res.json(), { accepted: 2 });
  const events = (await allEvents(open)).filter((e) => e.labels.source === 'bus');
  assert.equal(events.map((e) => e.id).sort(), ['bus-1', 'bus-2', 'bus-3']);
  const e = events.find((x) => x.id === 'bus-1')!;
  assert.equal(e.labels, {
    svc_stream: 'events',
    source: 'bus',
    event_source: 'aws.ec2',
    detail_type: 'EC2 Instance State-change Notification',
    region: 'eu-west-1',
    account: '123456789012',
  });
  assert.is(e.timestampNs, 1763805600000000000n);
  assert.is(e.title, 'EC2 Instance State-change Notification from aws.ec2');
  assert.equal(e.attributes.detail, { 'instance-id': 'i-1', state: 'running' });
  assert.is(events.find((x) => x.id === 'bus-3')!.text, 'hello');
});

test('/bus_events errors: missing detail-type in one element → 400, nothing written', async () => {
  const before = (await allEvents(open)).length;
  const { ['detail-type']: _omit, ...noType } = busEvent;
  const res = await fetch(open.url + '/ingester/bus_events', { method: 'POST', body: JSON.stringify([{ ...busEvent, id: 'bus-9' }, noType]), headers: { 'content-type': 'application/json' } });
  assert.is(res.status, 400);
  assert.match(await res.text(), /event 2: "detail-type" is required/);
  const res2 = await fetch(open.url + '/ingester/bus_events', { method: 'POST', body: JSON.stringify({ ...busEvent, time: 'noon' }), headers: { 'content-type': 'application/json' } });
  assert.is(res2.status, 400);
  // SPEC.md lists JSON only for /bus_events: any other type is 400 (acceptance audit).
  const res3 = await fetch(open.url + '/ingester/bus_events', { method: 'POST', body: JSON.stringify(busEvent), headers: { 'content-type': 'text/plain' } });
  assert.is(res3.status, 400);
  assert.match(await res3.text(), /unsupported content type/);
  assert.is((await allEvents(open)).length, before);
});

test.run();
