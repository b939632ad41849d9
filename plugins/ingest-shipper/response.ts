/**
 * The bulk response `{took, errors, items:[{index:{_index, _id, _version, result, _shards,
 * _seq_no, _primary_term, status}}]}`, built as text (bytes when unfiltered): at hundreds of
 * thousands of items per second, building objects for JSON.stringify costs more than the ingest.
 * `filter_path` (Logstash sends `errors,items.*.error,items.*.status`) is honoured for the
 * common forms.
 */
import type { BulkItem } from './bulk.js';

export const PRODUCT_HEADERS = { 'x-elastic-product': 'Elasticsearch' } as const;

let seqNo = 0;

const SUCCESS_TAIL = '","_version":1,"result":"created","_shards":{"total":1,"successful":1,"failed":0},"_seq_no":';

function itemJson(it: BulkItem, indexJson: string, fields: ItemFields | undefined, nextId: () => string): string {
  if (!fields && !it.error) {
    // Hot path: generated ids are base64url and need no escaping.
    const idText = it.generated ? nextId() : JSON.stringify(it.id).slice(1, -1);
    return '{"' + it.op + '":{"_index":' + indexJson + ',"_id":"' + idText + SUCCESS_TAIL + seqNo++ + ',"_primary_term":1,"status":201}}';
  }
  const idJson = it.generated ? '"' + nextId() + '"' : JSON.stringify(it.id);
  if (it.error) {
    const status = 400;
    const err = `{"type":${JSON.stringify(it.error.type)},"reason":${JSON.stringify(it.error.reason)},"index":${indexJson}}`;
    if (fields) return pick(it.op, { _index: indexJson, _id: idJson, status: String(status), error: err }, fields);
    return `{"${it.op}":{"_index":${indexJson},"_id":${idJson},"status":${status},"error":${err}}}`;
  }
  const seq = seqNo++;
  if (fields!.errorsOnly) return '';
  return pick(it.op, { _index: indexJson, _id: idJson, _version: '1', result: '"created"', _seq_no: String(seq), _primary_term: '1', status: '201' }, fields!);
}

function pick(op: string, values: Record<string, string>, fields: ItemFields): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(values)) if (fields.all || fields.names.has(k)) parts.push(`"${k}":${v}`);
  return parts.length ? `{"${op}":{${parts.join(',')}}}` : '';
}

interface ItemFields {
  all: boolean;
  names: Set<string>;
  /** Only `items.*.error` requested: successful items disappear entirely. */
  errorsOnly: boolean;
}

interface Filter {
  took: boolean;
  errors: boolean;
  items: ItemFields | false;
}

function parseFilter(filterPath: string | null): Filter | undefined {
  if (!filterPath) return undefined;
  const f: Filter = { took: false, errors: false, items: false };
  const names = new Set<string>();
  let all = false;
  for (const raw of filterPath.split(',')) {
    const p = raw.trim();
    if (p === 'took') f.took = true;
    else if (p === 'errors') f.errors = true;
    else if (p === 'items' || p === 'items.*' || p === 'items.*.*') all = true;
    else if (p.startsWith('items.*.')) names.add(p.slice('items.*.'.length));
  }
  if (all || names.size) {
    f.items = { all, names, errorsOnly: !all && names.size > 0 && [...names].every((n) => n === 'error' || n === 'status') && names.has('error') };
    // With only `error`/`status` requested, successful items still carry status unless error alone.
    if (f.items.errorsOnly && names.has('status')) f.items.errorsOnly = false;
  }
  return f;
}

const SUCCESS_TAIL_BYTES = Buffer.from(SUCCESS_TAIL);
const SUCCESS_END_BYTES = Buffer.from(',"_primary_term":1,"status":201}}');

/**
 * The unfiltered response written straight into bytes: the same text as the string form, but
 * a 5,000-item answer costs a few constant copies per item instead of ~1 MB of string
 * concatenation followed by its UTF-8 encoding.
 */
function fullResponseBytes(items: readonly BulkItem[], tookMs: number, nextId: () => string): Buffer {
  const errors = items.some((i) => i.error);
  let buf = Buffer.allocUnsafe(64 + items.length * 200);
  let pos = buf.write(`{"took":${tookMs},"errors":${errors},"items":[`, 0, 'utf8');
  let lastOp = '';
  let lastIndex: string | undefined;
  let head = Buffer.alloc(0);
  for (let k = 0; k < items.length; k++) {
    const it = items[k]!;
    const special = it.error !== undefined || !it.generated ? itemJson(it, JSON.stringify(it.index), undefined, nextId) : undefined;
    const need = 2 + (special !== undefined ? special.length * 3 : head.length + it.index.length * 6 + 180);
    if (pos + need > buf.length) {
      const next = Buffer.allocUnsafe(Math.max(buf.length * 2, pos + need));
      buf.copy(next, 0, 0, pos);
      buf = next;
    }
    if (k > 0) buf[pos++] = 44; // ,
    if (special !== undefined) {
      pos += buf.write(special, pos, 'utf8');
      continue;
    }
    if (it.op !== lastOp || it.index !== lastIndex) {
      lastOp = it.op;
      lastIndex = it.index;
      head = Buffer.from('{"' + it.op + '":{"_index":' + JSON.stringify(it.index) + ',"_id":"');
      if (pos + head.length + 180 > buf.length) {
        const next = Buffer.allocUnsafe(buf.length * 2 + head.length + 180);
        buf.copy(next, 0, 0, pos);
        buf = next;
      }
    }
    buf.set(head, pos);
    pos += head.length;
    // Generated ids are base64url: ASCII, no escaping.
    pos += buf.write(nextId(), pos, 'latin1');
    buf.set(SUCCESS_TAIL_BYTES, pos);
    pos += SUCCESS_TAIL_BYTES.length;
    let seq = seqNo++;
    let digits = 1;
    for (let x = seq; x >= 10; x = Math.floor(x / 10)) digits++;
    for (let d = digits - 1; d >= 0; d--) {
      buf[pos + d] = 48 + (seq % 10);
      seq = Math.floor(seq / 10);
    }
    pos += digits;
    buf.set(SUCCESS_END_BYTES, pos);
    pos += SUCCESS_END_BYTES.length;
  }
  if (pos + 2 > buf.length) {
    const next = Buffer.allocUnsafe(pos + 2);
    buf.copy(next, 0, 0, pos);
    buf = next;
  }
  buf[pos++] = 93; // ]
  buf[pos++] = 125; // }
  return buf.subarray(0, pos);
}

/** The response for `items`; generated ids are drawn from `nextId` in item order. */
export function bulkResponse(items: readonly BulkItem[], tookMs: number, filterPath: string | null, nextId: () => string): string | Buffer {
  if (!filterPath) return fullResponseBytes(items, tookMs, nextId);
  const filter = parseFilter(filterPath);
  const errors = items.some((i) => i.error);
  const indexJsonCache = new Map<string, string>();
  const out: string[] = [];
  if (!filter || filter.took) out.push(`"took":${tookMs}`);
  if (!filter || filter.errors) out.push(`"errors":${errors}`);
  if (!filter || filter.items) {
    const fields = filter ? (filter.items as ItemFields) : undefined;
    const parts: string[] = [];
    for (const it of items) {
      let ij = indexJsonCache.get(it.index);
      if (ij === undefined) {
        ij = JSON.stringify(it.index);
        indexJsonCache.set(it.index, ij);
      }
      const s = itemJson(it, ij, fields, nextId);
      if (s) parts.push(s);
    }
    if (!filter || parts.length) out.push(`"items":[${parts.join(',')}]`);
  }
  return `{${out.join(',')}}`;
}
