/**
 * Reads back what the ingest tests wrote, straight from the storage backend (the query APIs
 * are tested elsewhere).
 */
import { Tokens } from '../../kernel/services.js';
import type { EventRecord, Labels, LogRecord, Span } from '../../kernel/models.js';
import type { TestServer } from '../helpers/server.js';

const storage = (srv: TestServer) => srv.lookout.kernel.get(Tokens.Storage);

const ALL = { startNs: 0n, endNs: 4_000_000_000_000_000_000n };

export async function allLogs(srv: TestServer): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for await (const b of storage(srv).logs.scan({ ...ALL, order: 'asc' })) out.push(...b.records);
  return out;
}

export async function allEvents(srv: TestServer): Promise<EventRecord[]> {
  const out: EventRecord[] = [];
  for await (const b of storage(srv).events.scan({ ...ALL, order: 'asc' })) out.push(...b.events);
  return out;
}

export async function trace(srv: TestServer, traceId: string): Promise<Span[]> {
  return storage(srv).traces.getTrace(traceId);
}

export interface SeriesOut {
  labels: Labels;
  samples: [number, number][];
}

/** Series whose `__name__` equals `name` (every sample). */
export async function series(srv: TestServer, name: string): Promise<SeriesOut[]> {
  const out: SeriesOut[] = [];
  const matchers = [{ name: '__name__', op: '=' as const, value: name }];
  for await (const s of storage(srv).metrics.select(matchers, -1e15, 1e15)) {
    out.push({ labels: s.labels, samples: [...s.timestamps].map((t, i) => [t, s.values[i]!]) });
  }
  return out;
}

export async function seriesCount(srv: TestServer): Promise<number> {
  const all = await storage(srv).metrics.series([[{ name: '__name__', op: '=~', value: '.+' }]], -1e15, 1e15);
  return all.length;
}
