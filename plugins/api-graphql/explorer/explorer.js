// Lookout GraphQL explorer: runs queries/mutations with POST /query and subscriptions over a
// WebSocket at /query speaking graphql-transport-ws (connection_init → connection_ack →
// subscribe → next/error/complete). Results are rendered as text, never as HTML.
const $ = (id) => document.getElementById(id);
const doc = $('doc'), vars = $('vars'), result = $('result'), status = $('status');
const tokenInput = $('token'), runBtn = $('run'), stopBtn = $('stop');

const hour = () => {
  const end = new Date();
  const start = new Date(end.getTime() - 3600_000);
  return { startTs: start.toISOString(), endTs: end.toISOString() };
};

const EXAMPLES = {
  'Logs table (count by service)': {
    doc: 'query Table($q: String!, $startTs: Time!, $endTs: Time!) {\n  getLogMetricsResultWithSvcQl(query: $q, startTs: $startTs, endTs: $endTs) {\n    ColumnHeaders\n    GroupKeys\n    AggrValues\n    TableResult\n  }\n}',
    vars: () => ({ q: '* | count by service', ...hour() }),
  },
  'Raw logs (paged)': {
    doc: 'query Logs($q: String!, $startTs: Time!, $endTs: Time!, $cursor: String) {\n  getLogsWithSvcQl(query: $q, startTs: $startTs, endTs: $endTs, limit: 20, cursor: $cursor) {\n    logs { timestamp message labels facets }\n    cursor\n  }\n}',
    vars: () => ({ q: 'level=error', ...hour(), cursor: null }),
  },
  'Live tail (subscription)': {
    doc: 'subscription Tail($q: String!) {\n  getLogsWithSvcQlStream(query: $q, live: true, limit: 50) {\n    logs { timestamp message labels }\n  }\n}',
    vars: () => ({ q: '*' }),
  },
  'Events': {
    doc: 'query Events($startTs: Time!, $endTs: Time!) {\n  getEvents(query: "*", startTs: $startTs, endTs: $endTs, limit: 20) {\n    events { id timestamp title text labels attributes }\n    cursor\n  }\n}',
    vars: () => hour(),
  },
  'Favorite facets': {
    doc: 'query {\n  getFavoriteFacetGroups\n  getFavoriteFacets { name dataType group displayName source folderUid }\n}',
    vars: () => ({}),
  },
};

const select = $('examples');
for (const name of Object.keys(EXAMPLES)) {
  const o = document.createElement('option');
  o.textContent = name;
  select.append(o);
}
const load = (name) => {
  doc.value = EXAMPLES[name].doc;
  vars.value = JSON.stringify(EXAMPLES[name].vars(), null, 2);
};
select.addEventListener('change', () => load(select.value));
load(Object.keys(EXAMPLES)[0]);

tokenInput.value = localStorage.getItem('lookout.token') ?? '';
tokenInput.addEventListener('change', () => localStorage.setItem('lookout.token', tokenInput.value));

const show = (value, isError = false) => {
  result.textContent = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  result.classList.toggle('error', isError);
};
const setStatus = (s) => (status.textContent = s);

function operationKind(text) {
  // Comments and strings aside, the first keyword decides (a bare `{` is a query).
  const stripped = text.replace(/#[^\n]*/g, '').replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const m = /^\s*(query|mutation|subscription)\b/.exec(stripped);
  return m ? m[1] : 'query';
}

let socket = null;
function stop() {
  if (socket) {
    try {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ id: '1', type: 'complete' }));
      socket.close(1000);
    } catch {}
    socket = null;
  }
  stopBtn.disabled = true;
  runBtn.disabled = false;
}

async function run() {
  let variables = {};
  try {
    variables = vars.value.trim() ? JSON.parse(vars.value) : {};
  } catch (e) {
    return show('Variables are not valid JSON: ' + e.message, true);
  }
  const query = doc.value;
  if (operationKind(query) === 'subscription') return subscribe(query, variables);
  setStatus('running…');
  const t0 = performance.now();
  try {
    const res = await fetch('/query', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ' + tokenInput.value.trim() },
      body: JSON.stringify({ query, variables }),
    });
    const text = await res.text();
    let body;
    try { body = JSON.parse(text); } catch { body = text; }
    show(body, !res.ok || (body && body.errors));
    setStatus(`HTTP ${res.status} · ${Math.round(performance.now() - t0)} ms`);
  } catch (e) {
    show(String(e), true);
    setStatus('failed');
  }
}

function subscribe(query, variables) {
  stop();
  const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/query';
  const ws = new WebSocket(url, 'graphql-transport-ws');
  socket = ws;
  const events = [];
  const render = () => show(events, events.some((e) => e.errors || e.error));
  runBtn.disabled = true;
  stopBtn.disabled = false;
  setStatus('connecting…');
  ws.onopen = () => ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: 'Bearer ' + tokenInput.value.trim() } }));
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    switch (msg.type) {
      case 'connection_ack':
        setStatus('subscribed');
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables } }));
        break;
      case 'ping':
        ws.send(JSON.stringify({ type: 'pong' }));
        break;
      case 'next':
        events.push(msg.payload);
        setStatus(`${events.length} message(s)`);
        render();
        break;
      case 'error':
        events.push({ error: msg.payload });
        render();
        setStatus('error');
        stop();
        break;
      case 'complete':
        setStatus(`complete · ${events.length} message(s)`);
        if (events.length === 0) show('(complete, no data)');
        stop();
        break;
    }
  };
  ws.onclose = (e) => {
    if (socket === ws) {
      setStatus(e.code === 4403 ? 'closed: forbidden (check the token)' : `closed (${e.code})`);
      socket = null;
      stopBtn.disabled = true;
      runBtn.disabled = false;
    }
  };
}

const INTROSPECT = `{ __schema {
  queryType { name } mutationType { name } subscriptionType { name }
  types { name kind fields { name args { name type { ...T } defaultValue } type { ...T } } inputFields { name type { ...T } } }
} }
fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }`;

const typeName = (t) => (t.kind === 'NON_NULL' ? typeName(t.ofType) + '!' : t.kind === 'LIST' ? '[' + typeName(t.ofType) + ']' : t.name);

async function showSchema() {
  const aside = $('docs'), body = $('docs-body');
  aside.hidden = !aside.hidden;
  if (aside.hidden) return;
  body.textContent = 'loading…';
  const res = await fetch('/query', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + tokenInput.value.trim() },
    body: JSON.stringify({ query: INTROSPECT }),
  });
  const json = await res.json().catch(() => null);
  body.textContent = '';
  if (!json || !json.data) return void (body.textContent = 'Could not load the schema (' + res.status + '). Check the token.');
  const s = json.data.__schema;
  const byName = new Map(s.types.map((t) => [t.name, t]));
  for (const root of [s.queryType, s.mutationType, s.subscriptionType]) {
    if (!root) continue;
    const h = document.createElement('h3');
    h.textContent = root.name;
    body.append(h);
    for (const f of byName.get(root.name).fields) {
      const c = document.createElement('code');
      const args = f.args.map((a) => `${a.name}: ${typeName(a.type)}${a.defaultValue != null ? ' = ' + a.defaultValue : ''}`).join(', ');
      c.textContent = `${f.name}(${args}): ${typeName(f.type)}`;
      body.append(c);
    }
  }
}

runBtn.addEventListener('click', run);
stopBtn.addEventListener('click', () => { stop(); setStatus('stopped'); });
$('schema').addEventListener('click', showSchema);
document.addEventListener('keydown', (e) => {
  if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') { e.preventDefault(); run(); }
});
