/**
 * Cloud stream delivery (`/cloud_stream`): the delivery stream's HTTP endpoint request
 * `{requestId, timestamp, records: [{data: base64}]}`, each record's data being metric-stream
 * JSON lines. Answers `{requestId, timestamp}`, and on failure the same with `errorMessage`
 * (the delivery stream retries non-2xx answers). Key: X-Cloud-Firehose-Access-Key (or the
 * provider's X-Amz-Firehose-Access-Key).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { definePlugin } from '../../kernel/plugin.js';
import { badRequest } from '../../kernel/errors.js';
import type { IngestDecoded } from '../../kernel/extension-points.js';
import { MetricStreamBatch } from './metric-stream.js';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const requestIdHeader = (h: IncomingHttpHeaders | undefined): string => {
  const v = h?.['x-amz-firehose-request-id'] ?? h?.['x-cloud-firehose-request-id'];
  return (Array.isArray(v) ? v[0] : v) ?? '';
};

export function decodeDelivery(body: Buffer): { requestId: string; batch: MetricStreamBatch; records: number } {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw badRequest(`malformed JSON: ${(e as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw badRequest('body must be a delivery request object');
  const { requestId, records } = doc as Record<string, unknown>;
  if (typeof requestId !== 'string' || requestId === '') throw badRequest('"requestId" is required');
  if (!Array.isArray(records)) throw badRequest('"records" must be an array');
  const batch = new MetricStreamBatch();
  records.forEach((r: unknown, i) => {
    const data = typeof r === 'object' && r !== null ? (r as Record<string, unknown>).data : undefined;
    if (typeof data !== 'string') throw badRequest(`record ${i + 1}: "data" must be a base64 string`);
    const compact = data.replace(/\s+/g, '');
    if (!BASE64.test(compact) || compact.length % 4 === 1) throw badRequest(`record ${i + 1}: "data" is not valid base64`);
    const text = Buffer.from(compact, 'base64').toString('utf8');
    let lineNo = 0;
    for (const line of text.split('\n')) {
      lineNo++;
      const s = line.trim();
      if (s === '') continue;
      let obj: unknown;
      try {
        obj = JSON.parse(s);
      } catch (e) {
        throw badRequest(`record ${i + 1} line ${lineNo}: malformed JSON: ${(e as Error).message}`);
      }
      batch.add(obj, `record ${i + 1} line ${lineNo}`);
    }
  });
  return { requestId, batch, records: records.length };
}

export default definePlugin({
  name: 'ingest-cloud-stream',
  description: 'Cloud metric streams delivered by a delivery stream HTTP endpoint.',
  register(ctx) {
    ctx.extensions.receiver({
      name: 'cloud_stream',
      routes: [
        {
          path: '/cloud_stream',
          auth: 'firehose',
          contentTypes: ['application/json', ''],
          formatError: (status, message, req) => ({
            status,
            contentType: 'application/json',
            body: JSON.stringify({ requestId: requestIdHeader(req.headers), timestamp: Date.now(), errorMessage: message }),
          }),
          decode(req): IngestDecoded {
            const { requestId, batch } = decodeDelivery(req.body);
            return {
              batch: batch.result(),
              respond: () => ({ status: 200, contentType: 'application/json', body: JSON.stringify({ requestId, timestamp: Date.now() }) }),
            };
          },
        },
      ],
    });
  },
});
