/** GraphQL helpers for tests: POST /query and SVCQL.md's example data. */
import type { LogRecord } from '../../kernel/models.js';
import { Tokens } from '../../kernel/services.js';
import type { TestServer } from '../helpers/server.js';

export interface GqlError {
  message: string;
  path: string[];
  extensions: { code: string; component: string; position?: { line: number; column: number } };
}
export interface GqlResponse<T = Record<string, unknown>> {
  status: number;
  data?: T | null;
  errors?: GqlError[];
}

export async function gql<T = Record<string, any>>(
  srv: TestServer,
  query: string,
  variables?: Record<string, unknown>,
  token?: string | null,
): Promise<GqlResponse<T>> {
  const res = await srv.fetch('/query', {
    method: 'POST',
    token,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  const body = JSON.parse(text) as { data?: T | null; errors?: GqlError[] };
  return { status: res.status, ...body };
}

/** 2025-11-22 10:00:00Z */
export const BASE_S = 1763805600;
export const ns = (secondsAfter10: number): bigint => BigInt(BASE_S + secondsAfter10) * 1_000_000_000n;
export const at = (hhmmss: string): string => `2025-11-22T${hhmmss}Z`;
export const M = (k: number): number => 1763805600000 + k * 60000;

type Row = [string, string, string, string, Record<string, string | number | boolean>, string];
/** SVCQL.md "Example data", in table order (row i = record i+1). */
export const EXAMPLE_ROWS: Row[] = [
  ['10:00:05', 'api', 'web-1', 'info', { status: 200, duration_ms: 12 }, 'GET /api/users 200 12ms'],
  ['10:00:20', 'api', 'web-2', 'info', { status: 200, duration_ms: 30 }, 'GET /api/orders 200 30ms'],
  ['10:00:45', 'api', 'web-1', 'error', { status: 500, duration_ms: 250 }, 'GET /api/orders 500 250ms upstream timeout'],
  ['10:01:10', 'auth', 'web-3', 'warn', { user: 'ana' }, '{"user":"ana","ok":false,"attempts":3}'],
  ['10:01:30', 'auth', 'web-3', 'info', { user: 'bob' }, '{"user":"bob","ok":true,"attempts":1}'],
  ['10:01:50', 'api', 'web-2', 'info', { status: 404, duration_ms: 5 }, 'GET /api/items 404 5ms'],
  ['10:02:15', 'billing', 'web-1', 'error', { retry: true }, 'charge failed: card_declined id=ch_1'],
  ['10:02:40', 'billing', 'web-1', 'info', {}, 'msg="charge ok" amount=42.5'],
  ['10:03:05', 'api', 'web-2', 'error', { status: 503, duration_ms: 800 }, 'GET /api/orders 503 800ms Timeout'],
  ['10:03:30', 'billing', 'web-2', 'info', {}, 'msg="charge ok" amount=7.5'],
  ['10:03:55', 'api', 'web-1', 'debug', { status: 200, duration_ms: 8 }, 'GET /health 200 8ms'],
  ['10:04:20', 'auth', 'web-3', 'error', {}, '{"user":"ana","ok":false,"attempts":5}'],
];

export function exampleRecords(): LogRecord[] {
  return EXAMPLE_ROWS.map(([time, service, host, level, facets, message]) => {
    const [h, m, s] = time.split(':').map(Number) as [number, number, number];
    return {
      timestampNs: ns((h - 10) * 3600 + m * 60 + s),
      message,
      labels: { svc_stream: 'logs', service, host, level },
      facets,
    };
  });
}

/** Writes the example data through the kernel's ingest pipeline, one record at a time so that
 * ingestion order is table order. */
export async function ingestExampleData(srv: TestServer): Promise<void> {
  const ingest = srv.lookout.kernel.get(Tokens.Ingest);
  for (const r of exampleRecords()) await ingest.write({ logs: [r] });
}

/** The same data through a real ingest endpoint (OTLP/HTTP JSON), one request per record. */
export { ingestExamples as ingestExampleDataOverHttp } from '../svcql/fixtures.js';

/** Record number (1-based, table order) of a returned log's message + timestamp. */
export function recordNo(log: { timestamp: string; message: string }): number {
  const recs = exampleRecords();
  const i = recs.findIndex((r) => r.timestampNs.toString() === log.timestamp && r.message === log.message);
  return i + 1;
}

/** A few events of each source (GRAPHQL.md "Events"), in ingestion order. */
export function exampleEvents(): import('../../kernel/models.js').EventRecord[] {
  return [
    {
      id: 'ev-1',
      timestampNs: ns(10),
      title: 'Back-off restarting failed container',
      text: 'Back-off restarting failed container api in pod api-7d9',
      labels: { svc_stream: 'events', source: 'kubernetes', namespace: 'prod', kind: 'Pod', reason: 'BackOff', type: 'Warning' },
      attributes: { count: 5, node: 'n1' },
    },
    {
      id: 'ev-2',
      timestampNs: ns(60),
      title: 'Successfully assigned prod/api-7d9 to n1',
      text: '',
      labels: { svc_stream: 'events', source: 'kubernetes', namespace: 'prod', kind: 'Pod', reason: 'Scheduled', type: 'Normal' },
      attributes: { count: 1, node: 'n1' },
    },
    {
      id: 'ev-3',
      timestampNs: ns(120),
      title: 'push to main',
      text: '3 commits by ana',
      labels: { svc_stream: 'events', source: 'webhook', repository: 'acme/api', event: 'push' },
      attributes: { commits: 3, branch: 'main', forced: false },
    },
    {
      id: 'ev-4',
      timestampNs: ns(180),
      title: 'order created',
      text: '{"order":"o-1"}',
      labels: { svc_stream: 'events', source: 'bus', event: 'OrderCreated' },
      attributes: { amount: 42.5, detail: { order: 'o-1' } },
    },
    {
      id: 'ev-5',
      timestampNs: ns(240),
      title: 'Scaled up replica set web-5f to 3',
      text: '',
      labels: { svc_stream: 'events', source: 'kubernetes', namespace: 'staging', kind: 'Deployment', reason: 'ScalingReplicaSet', type: 'Normal' },
      attributes: { count: 1 },
    },
  ];
}

export async function ingestExampleEvents(srv: TestServer): Promise<void> {
  const ingest = srv.lookout.kernel.get(Tokens.Ingest);
  for (const e of exampleEvents()) await ingest.write({ events: [e] });
}
