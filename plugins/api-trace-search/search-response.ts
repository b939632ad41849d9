/** Search matches in Tempo's search-response JSON (SPEC "Trace search result"). */
import type { Span } from '../../kernel/models.js';
import {
  attributeValue,
  intrinsicValue,
  rootServiceName,
  rootTraceName,
  type FieldExpr,
  type Spanset,
  type TraceMatch,
  type TraceQLPlan,
  type TraceView,
  type Value,
} from '../query-traceql/index.js';
import { anyValue, type OtlpAnyValue, type OtlpKeyValue } from './otlp-json.js';

export interface SearchSpanJson {
  spanID: string;
  name: string;
  startTimeUnixNano: string;
  durationNanos: string;
  attributes: OtlpKeyValue[];
}

export interface SpansetJson {
  spans: SearchSpanJson[];
  matched: number;
  attributes?: OtlpKeyValue[];
}

export interface TraceSearchMetadata {
  traceID: string;
  rootServiceName: string;
  rootTraceName?: string;
  startTimeUnixNano: string;
  durationMs: number;
  spanSets: SpansetJson[];
  spanSet?: SpansetJson;
}

export function valueJson(v: NonNullable<Value>): OtlpAnyValue {
  switch (v.t) {
    case 'string':
      return { stringValue: v.v };
    case 'int':
      return { intValue: String(v.v) };
    case 'float':
      return { doubleValue: v.v };
    case 'duration':
      return { intValue: String(Math.round(v.v)) };
    case 'bool':
      return { boolValue: v.v };
    case 'status':
    case 'kind':
      return { stringValue: v.v };
    case 'array':
      return { arrayValue: { values: v.v.map(valueJson) } };
  }
}

/** Intrinsics that are already span fields (or trace-level) and so are not repeated as attributes. */
const NOT_REPORTED = new Set(['name', 'duration', 'spanID', 'traceID', 'rootName', 'rootServiceName', 'traceDuration']);

function fieldKey(f: FieldExpr): string | undefined {
  if (f.kind === 'attribute') return f.name;
  if (f.kind === 'intrinsic') return NOT_REPORTED.has(f.name) ? undefined : f.text;
  return undefined;
}

function spanJson(v: TraceView, i: number, fields: readonly FieldExpr[]): SearchSpanJson {
  const s: Span = v.spans[i]!;
  const attributes: OtlpKeyValue[] = [];
  const seen = new Set<string>();
  const add = (key: string, val: Value) => {
    if (val === undefined || seen.has(key)) return;
    seen.add(key);
    attributes.push({ key, value: valueJson(val) });
  };
  for (const f of fields) {
    const key = fieldKey(f);
    if (key === undefined) continue;
    add(key, f.kind === 'attribute' ? attributeValue(s, f.scope, f.name) : f.kind === 'intrinsic' ? intrinsicValue(f.name, v, i) : undefined);
  }
  // Grafana's result table shows each span's service.
  const svc = s.resource['service.name'];
  if (typeof svc === 'string' && !seen.has('service.name')) attributes.push({ key: 'service.name', value: anyValue(svc) });
  return {
    spanID: s.spanId,
    name: s.name,
    startTimeUnixNano: s.startTimeUnixNano.toString(),
    durationNanos: (s.endTimeUnixNano - s.startTimeUnixNano).toString(),
    attributes,
  };
}

function spansetJson(v: TraceView, set: Spanset, fields: readonly FieldExpr[], spss: number): SpansetJson {
  const out: SpansetJson = {
    spans: set.spans.slice(0, spss).map((i) => spanJson(v, i, fields)),
    matched: set.spans.length,
  };
  const attrs = set.attributes.filter((a) => a.value !== undefined).map((a) => ({ key: a.key, value: valueJson(a.value!) }));
  if (attrs.length) out.attributes = attrs;
  return out;
}

export function traceSearchMetadata(m: TraceMatch, plan: TraceQLPlan, spss: number): TraceSearchMetadata {
  const v = m.view;
  const fields = [...plan.reported, ...plan.selected];
  const spanSets = m.spansets.map((s) => spansetJson(v, s, fields, spss));
  const out: TraceSearchMetadata = {
    traceID: v.traceId,
    rootServiceName: rootServiceName(v),
    startTimeUnixNano: v.startNs.toString(),
    durationMs: Math.floor(Number(v.endNs - v.startNs) / 1e6),
    spanSets,
  };
  const rootName = rootTraceName(v);
  if (rootName !== undefined) out.rootTraceName = rootName;
  if (spanSets.length) out.spanSet = spanSets[0];
  return out;
}
