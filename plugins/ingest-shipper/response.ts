/**
 * The bulk response `{took, errors, items:[{index:{_index, _id, _version, result, _shards,
 * _seq_no, _primary_term, status}}]}`, built as a string: at hundreds of thousands of items per
 * second, building objects for JSON.stringify costs more than the ingest itself.
 * `filter_path` (Logstash sends `errors,items.*.error,items.*.status`) is honoured for the
 * common forms.
 */
import type { BulkItem } from './bulk.js';

export const PRODUCT_HEADERS = { 'x-elastic-product': 'Elasticsearch' } as const;

let seqNo = 0;

const SUCCESS_TAIL = '","_version":1,"result":"created","_shards":{"total":1,"successful":1,"failed":0},"_seq_no":';

function itemJson(it: BulkItem, indexJson: string, fields: ItemFields | undefined): string {
  if (!fields && !it.error) {
    // Hot path: generated ids are base64url and need no escaping.
    const idText = it.generated ? it.id : JSON.stringify(it.id).slice(1, -1);
    return '{"' + it.op + '":{"_index":' + indexJson + ',"_id":"' + idText + SUCCESS_TAIL + seqNo++ + ',"_primary_term":1,"status":201}}';
  }
  const idJson = JSON.stringify(it.id);
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

export function bulkResponse(items: readonly BulkItem[], tookMs: number, filterPath: string | null): string {
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
      const s = itemJson(it, ij, fields);
      if (s) parts.push(s);
    }
    if (!filter || parts.length) out.push(`"items":[${parts.join(',')}]`);
  }
  return `{${out.join(',')}}`;
}
