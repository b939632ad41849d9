/**
 * A shipper document (Filebeat, Logstash, Fluent Bit/Vector `es` outputs, the search engine's
 * clients) to a LogRecord. ECS fields: `@timestamp`, `message`, `log.level`, `service.name`,
 * `host.name`, `kubernetes.*`; nested objects and dotted keys are flattened alike into facets.
 */
import type { FacetValue, Labels, LogRecord } from '../../kernel/models.js';
import { FieldPlan, anyTimestampNs, normalizeLevel, nowNs } from '../ingest-forwarder/log-fields.js';
import { DocScanner } from './doc-scan.js';

const plan = new FieldPlan(
  {
    ts: ['@timestamp', 'timestamp'],
    message: ['message', 'log', 'msg', 'event.original', 'log.original'],
    level: ['log.level', 'level', 'severity'],
    service: ['service.name', 'service'],
    host: ['host.name', 'host.hostname', 'hostname', 'host'],
    namespace: ['kubernetes.namespace', 'kubernetes.namespace_name'],
    pod: ['kubernetes.pod.name', 'kubernetes.pod_name'],
    container: ['kubernetes.container.name', 'kubernetes.container_name'],
  },
  ['message', 'service', 'host', 'namespace', 'pod', 'container'],
);

const LABEL_SLOTS = [
  [3, 'service'],
  [4, 'host'],
  [5, 'namespace'],
  [6, 'pod'],
  [7, 'container'],
] as const;

/**
 * Documents of one shipper repeat a handful of label sets; handing storage the same (immutable)
 * object for equal sets spares it hashing labels per record (it caches streams by object) and
 * spares the GC one surviving object per document. Looked up through one map level per slot
 * (level, then each label value): the values are mostly the scanner's interned strings, whose
 * hashes V8 keeps, so no key string is built per document. Bounded: cleared past MAX sets.
 */
type LabelTrie = Map<string | undefined, LabelTrie | Labels>;
const labelSets: LabelTrie = new Map();
let labelSetCount = 0;
const MAX_LABEL_SETS = 10_000;
const slotValues: (string | undefined)[] = new Array(LABEL_SLOTS.length);

function sharedLabels(level: string | undefined, v: readonly (FacetValue | undefined)[]): Labels {
  if (labelSetCount >= MAX_LABEL_SETS) {
    labelSets.clear();
    labelSetCount = 0;
  }
  let node = labelSets;
  let key = level;
  for (let j = 0; j < LABEL_SLOTS.length; j++) {
    let next = node.get(key) as LabelTrie | undefined;
    if (next === undefined) node.set(key, (next = new Map()));
    node = next;
    const x = v[LABEL_SLOTS[j]![0]];
    key = x === undefined ? undefined : String(x);
    slotValues[j] = key;
  }
  let labels = node.get(key) as Labels | undefined;
  if (labels === undefined) {
    const l: Record<string, string> = { svc_stream: 'logs' };
    if (level) l.level = level;
    for (let j = 0; j < LABEL_SLOTS.length; j++) if (slotValues[j] !== undefined) l[LABEL_SLOTS[j]![1]] = slotValues[j]!;
    node.set(key, (labels = l));
    labelSetCount++;
  }
  return labels;
}

const slotScratch: (FacetValue | undefined)[] = [];

export function documentToLog(doc: Record<string, unknown>, index: string | undefined, now: bigint): LogRecord {
  const v = slotScratch;
  const facets = plan.apply(doc, v);
  return toLog(facets, v, index, now, v[1] === undefined ? JSON.stringify(doc) : String(v[1]));
}

function toLog(facets: Record<string, FacetValue>, v: (FacetValue | undefined)[], index: string | undefined, now: bigint, message: string): LogRecord {
  const labels = sharedLabels(normalizeLevel(v[2]), v);
  if (index !== undefined) facets._index = index;
  return {
    timestampNs: v[0] === undefined ? now : anyTimestampNs(v[0], '@timestamp'),
    message,
    labels,
    facets,
  };
}

const scanner = new DocScanner(plan);

/**
 * The document in body[start, end) read in one pass (doc-scan.ts), exactly as documentToLog
 * would map its JSON.parse; undefined when the scanner declines it (then parse it and call
 * documentToLog) or when it has no message field (the message is then the whole document).
 */
export function scannedDocumentToLog(body: Buffer, start: number, end: number, index: string | undefined, now: bigint): LogRecord | undefined {
  const v = slotScratch;
  plan.begin(v);
  const ok = scanner.scan(body, start, end);
  const facets = plan.end();
  if (!ok || v[1] === undefined) return undefined;
  return toLog(facets, v, index, now, String(v[1]));
}

export { nowNs };
