/**
 * Tag names and tag values for autocomplete, read from the spans a TraceQL query matches in the
 * time range (`{}` when no `q`), within the caller's RBAC scope. The scan is bounded by
 * `maxInspectedTraces`, as Tempo bounds tag queries by bytes.
 */
import { badRequest } from '../../kernel/errors.js';
import type { QueryContext } from '../../kernel/extension-points.js';
import type { Attributes } from '../../kernel/models.js';
import {
  INTRINSIC_TAGS,
  TraceQLParseError,
  evalField,
  parseTraceQL,
  searchTraces,
  valueText,
  type FieldExpr,
  type Scalar,
  type TraceQLPlan,
} from '../query-traceql/index.js';
import type { TimeRange } from './params.js';

export type TagScope = 'span' | 'resource' | 'event' | 'link' | 'instrumentation' | 'intrinsic';
const ATTRIBUTE_SCOPES: readonly TagScope[] = ['resource', 'span', 'event', 'link', 'instrumentation'];

export interface TagLimits {
  maxInspectedTraces: number;
  maxValues: number;
}

/** Intrinsics Tempo lists under the `intrinsic` scope. */
export const INTRINSIC_TAG_NAMES: readonly string[] = INTRINSIC_TAGS;

/** Parses the `scope` parameter: undefined = all attribute scopes (v1) / every scope (v2). */
export function tagScopeParam(raw: string | null): TagScope | undefined {
  if (raw === null || raw === '' || raw === 'all' || raw === 'none') return undefined;
  if ((ATTRIBUTE_SCOPES as string[]).includes(raw) || raw === 'intrinsic') return raw as TagScope;
  throw badRequest(`invalid scope "${raw}": expected one of resource, span, event, link, instrumentation, intrinsic, all`);
}

async function matchedSpans(
  plan: TraceQLPlan,
  range: TimeRange,
  limits: TagLimits,
  ctx: QueryContext,
  visit: (view: import('../query-traceql/index.js').TraceView, i: number) => void,
): Promise<void> {
  const res = await searchTraces(plan, { ...range, limit: limits.maxInspectedTraces, maxInspectedTraces: limits.maxInspectedTraces }, ctx);
  for (const m of res.matches) for (const set of m.spansets) for (const i of set.spans) visit(m.view, i);
}

/** Attribute names per scope of the matched spans, sorted. */
export async function tagNamesByScope(plan: TraceQLPlan, range: TimeRange, limits: TagLimits, ctx: QueryContext): Promise<Map<TagScope, string[]>> {
  const sets = new Map<TagScope, Set<string>>(ATTRIBUTE_SCOPES.map((s) => [s, new Set<string>()]));
  const addAll = (scope: TagScope, attrs: Attributes | undefined) => {
    if (!attrs) return;
    const set = sets.get(scope)!;
    for (const k in attrs) if (set.size < limits.maxValues) set.add(k);
  };
  await matchedSpans(plan, range, limits, ctx, (v, i) => {
    const s = v.spans[i]!;
    addAll('span', s.attributes);
    addAll('resource', s.resource);
    addAll('instrumentation', s.scope.attributes);
    for (const e of s.events) addAll('event', e.attributes);
    for (const l of s.links) addAll('link', l.attributes);
  });
  const out = new Map<TagScope, string[]>();
  for (const [scope, set] of sets) out.set(scope, [...set].sort());
  out.set('intrinsic', [...INTRINSIC_TAG_NAMES]);
  return out;
}

/**
 * The field a tag name denotes: `span.x`, `resource.x`, `.x`, an intrinsic (`status`,
 * `span:name`), or — for a bare name like `service.name` — an unscoped attribute.
 */
export function tagField(tag: string): FieldExpr {
  if (tag === '') throw badRequest('tag name is required');
  try {
    const q = parseTraceQL(`{ ${tag} }`);
    const st = q.pipeline.stages[0];
    if (st && st.kind === 'filter' && st.expr && (st.expr.kind === 'attribute' || st.expr.kind === 'intrinsic')) return st.expr;
  } catch (e) {
    if (!(e instanceof TraceQLParseError)) throw e;
  }
  return { kind: 'attribute', scope: 'unscoped', name: tag, pos: { offset: 0, line: 1, col: 1 } };
}

export type TypedTagValue = { type: string; value: string };

const TYPE_NAMES: Record<Scalar['t'], string> = {
  string: 'string',
  int: 'int',
  float: 'float',
  duration: 'duration',
  bool: 'bool',
  status: 'keyword',
  kind: 'keyword',
};

/** Distinct values of a field over the matched spans, with Tempo's v2 types. */
export async function tagValues(
  field: FieldExpr,
  plan: TraceQLPlan,
  range: TimeRange,
  limits: TagLimits,
  ctx: QueryContext,
): Promise<TypedTagValue[]> {
  const seen = new Map<string, TypedTagValue>();
  const add = (x: Scalar) => {
    if (seen.size >= limits.maxValues) return;
    const tv = { type: TYPE_NAMES[x.t], value: valueText(x) };
    const k = tv.type + '\u0000' + tv.value;
    if (!seen.has(k)) seen.set(k, tv);
  };
  await matchedSpans(plan, range, limits, ctx, (v, i) => {
    const val = evalField(field, v, i);
    if (val === undefined) return;
    if (val.t === 'array') val.v.forEach(add);
    else add(val);
  });
  return [...seen.values()].sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
}
