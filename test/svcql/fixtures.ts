/** SVCQL.md's example data: 12 records on 2025-11-22 from 10:00:05Z, ingested in order. */
import type { FacetValue, LogRecord } from '../../kernel/models.js';
import { Tokens } from '../../kernel/services.js';
import type { TestServer } from '../helpers/server.js';

export const T0 = 1763805600;
export const ns = (secondsAfter10: number) => BigInt(T0 + secondsAfter10) * 1_000_000_000n;
/** Mk of SVCQL.md: 10:0k in ms. */
export const M = (k: number) => 1763805600000 + k * 60000;

type Row = [number, string, string, string, string, Record<string, FacetValue>, string];
const hms = (s: string) => {
  const [h, m, sec] = s.split(':').map(Number);
  return (h! - 10) * 3600 + m! * 60 + sec!;
};

export const EXAMPLE: Row[] = [
  [1, '10:00:05', 'api', 'web-1', 'info', { status: 200, duration_ms: 12 }, 'GET /api/users 200 12ms'],
  [2, '10:00:20', 'api', 'web-2', 'info', { status: 200, duration_ms: 30 }, 'GET /api/orders 200 30ms'],
  [3, '10:00:45', 'api', 'web-1', 'error', { status: 500, duration_ms: 250 }, 'GET /api/orders 500 250ms upstream timeout'],
  [4, '10:01:10', 'auth', 'web-3', 'warn', { user: 'ana' }, '{"user":"ana","ok":false,"attempts":3}'],
  [5, '10:01:30', 'auth', 'web-3', 'info', { user: 'bob' }, '{"user":"bob","ok":true,"attempts":1}'],
  [6, '10:01:50', 'api', 'web-2', 'info', { status: 404, duration_ms: 5 }, 'GET /api/items 404 5ms'],
  [7, '10:02:15', 'billing', 'web-1', 'error', { retry: true }, 'charge failed: card_declined id=ch_1'],
  [8, '10:02:40', 'billing', 'web-1', 'info', {}, 'msg="charge ok" amount=42.5'],
  [9, '10:03:05', 'api', 'web-2', 'error', { status: 503, duration_ms: 800 }, 'GET /api/orders 503 800ms Timeout'],
  [10, '10:03:30', 'billing', 'web-2', 'info', {}, 'msg="charge ok" amount=7.5'],
  [11, '10:03:55', 'api', 'web-1', 'debug', { status: 200, duration_ms: 8 }, 'GET /health 200 8ms'],
  [12, '10:04:20', 'auth', 'web-3', 'error', {}, '{"user":"ana","ok":false,"attempts":5}'],
];

export function exampleRecords(): LogRecord[] {
  return EXAMPLE.map(([, t, service, host, level, facets, message]) => ({
    timestampNs: ns(hms(t)),
    message,
    labels: { host, level, service, svc_stream: 'logs' },
    facets,
  }));
}

/** Record number (#) of SVCQL.md's table from a record. */
export function recordNo(r: Pick<LogRecord, 'message' | 'timestampNs'>): number {
  const i = EXAMPLE.findIndex((e) => e[6] === r.message && ns(hms(e[1])) === r.timestampNs);
  return EXAMPLE[i]![0];
}

/** Number from a `_timestamp` cell. */
export function recordNoByTs(tsCell: unknown): number {
  const i = EXAMPLE.findIndex((e) => ns(hms(e[1])).toString() === tsCell);
  return i < 0 ? -1 : EXAMPLE[i]![0];
}

/** Ingests through the kernel's ingest pipeline (the path every receiver uses). */
export async function ingestExamplesDirect(srv: TestServer): Promise<void> {
  await srv.lookout.kernel.get(Tokens.Ingest).write({ logs: exampleRecords() });
}

const otlpValue = (v: FacetValue) =>
  typeof v === 'number' ? { intValue: String(v) } : typeof v === 'boolean' ? { boolValue: v } : { stringValue: v };

/**
 * Ingests the example data through a real ingest endpoint (OTLP/HTTP JSON logs), one request per
 * record so ingestion order is table order. The receiver adds `source="otlp"` and keeps the
 * severity text as a facet; the examples do not look at either.
 */
export async function ingestExamples(srv: TestServer): Promise<void> {
  for (const r of exampleRecords()) {
    const { host, service, level } = r.labels as Record<string, string>;
    const body = {
      resourceLogs: [
        {
          resource: {
            attributes: [
              { key: 'service.name', value: { stringValue: service } },
              { key: 'host.name', value: { stringValue: host } },
            ],
          },
          scopeLogs: [
            {
              logRecords: [
                {
                  timeUnixNano: r.timestampNs.toString(),
                  severityText: level,
                  body: { stringValue: r.message },
                  attributes: Object.entries(r.facets).map(([key, v]) => ({ key, value: otlpValue(v) })),
                },
              ],
            },
          ],
        },
      ],
    };
    const res = await fetch(srv.url + '/ingester/otlp/v1/logs', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`OTLP ingest failed: ${res.status} ${await res.text()}`);
  }
}

export const RANGE = { startNs: ns(0), endNs: ns(300) };
