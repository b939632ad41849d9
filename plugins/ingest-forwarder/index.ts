/**
 * Log forwarder HTTP outputs: `/v1/forwarder_a` (JSON array, single object or msgpack, with the
 * forwarder's `date` key) and `/v1/forwarder_b` (NDJSON). Fluent Bit, Vector and Logstash point
 * their `http` outputs here unchanged.
 */
import { definePlugin } from '../../kernel/plugin.js';
import type { IngestDecoded, IngestRequest } from '../../kernel/extension-points.js';
import type { LogRecord } from '../../kernel/models.js';
import { parseJsonRecords, parseNdjson } from './log-fields.js';
import { decodeMsgpackRecords } from './msgpack.js';
import { DEFAULT_DATE_KEYS, forwarderRecordToLog, type RecordOptions } from './records.js';

const JSON_TYPES = ['application/json', 'text/json'];
const MSGPACK_TYPES = ['application/msgpack', 'application/x-msgpack', 'application/vnd.msgpack'];
// No text/plain: outputs sending it (Vector `codec: text`, Logstash `format => message`) send raw
// lines, not records, and SPEC.md lists only JSON, msgpack and NDJSON here (400 otherwise).
const NDJSON_TYPES = ['application/x-ndjson', 'application/ndjson', 'application/jsonlines', 'application/x-jsonlines', 'application/json-lines', 'application/jsonl'];

const accepted = (n: number) => () => ({
  status: 200,
  contentType: 'application/json',
  body: JSON.stringify({ accepted: n }),
});

/** `?date_key=` (per output) and the plugin option `dateKey` put a custom key first. */
function recordOptions(req: IngestRequest, configured: string | undefined): RecordOptions {
  const custom = req.query.get('date_key') ?? configured;
  return { dateKeys: custom ? [custom, ...DEFAULT_DATE_KEYS.filter((k) => k !== custom)] : DEFAULT_DATE_KEYS };
}

export default definePlugin({
  name: 'ingest-forwarder',
  description: 'Log forwarder HTTP outputs (Fluent Bit, Vector, Logstash): JSON, msgpack, NDJSON.',
  register(ctx) {
    const dateKey = typeof ctx.options.dateKey === 'string' ? ctx.options.dateKey : undefined;
    ctx.extensions.receiver({
      name: 'forwarder',
      routes: [
        {
          path: '/v1/forwarder_a',
          auth: 'svc',
          contentTypes: [...JSON_TYPES, ...MSGPACK_TYPES, ...NDJSON_TYPES],
          decode(req): IngestDecoded {
            const opts = recordOptions(req, dateKey);
            let logs: LogRecord[];
            if (MSGPACK_TYPES.includes(req.contentType)) {
              logs = decodeMsgpackRecords(req.body).map((r, i) => forwarderRecordToLog(r.record, i, opts, r.timestampNs));
            } else {
              logs = parseJsonRecords(req.body, 'records').map((r, i) => forwarderRecordToLog(r, i, opts));
            }
            return { batch: { logs }, respond: accepted(logs.length) };
          },
        },
        {
          path: '/v1/forwarder_b',
          auth: 'svc',
          contentTypes: [...NDJSON_TYPES, ...JSON_TYPES],
          decode(req): IngestDecoded {
            const opts = recordOptions(req, dateKey);
            const text = req.body.toString('utf8');
            // Vector/Fluent Bit may still send a JSON array here when framing is not newline-delimited.
            const records = text.trimStart().startsWith('[') ? parseJsonRecords(req.body, 'records') : parseNdjson(text, 'NDJSON body');
            const logs = records.map((r, i) => forwarderRecordToLog(r, i, opts));
            return { batch: { logs }, respond: accepted(logs.length) };
          },
        },
      ],
    });
  },
});
