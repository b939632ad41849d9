/**
 * Request-body validation for policies and mappings: every rejection is a 400 that says what is
 * wrong (SPEC.md: invalid scope type, missing required field).
 */
import { badRequest } from '../../kernel/errors.js';
import { compileAnchoredRegex, InvalidRegexError } from '../../kernel/matchers.js';
import { isLabelAllowed, type AllowedLabels } from './allowed-labels.js';
import { streamsSelected } from './evaluate.js';
import {
  ENTITY_TYPES,
  FILTER_OPS,
  SCOPE_TYPES,
  STREAM_KEY,
  type EntityType,
  type Policy,
  type PolicyFilter,
  type ScopeType,
} from './model.js';

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function requireString(body: Record<string, unknown>, field: string): string {
  const v = body[field];
  if (v === undefined || v === null || v === '') throw badRequest(`missing required field "${field}"`);
  if (typeof v !== 'string') throw badRequest(`field "${field}" must be a string`);
  return v;
}

function parseFilter(raw: unknown, i: number): PolicyFilter {
  if (!isObject(raw)) throw badRequest(`scope.filters[${i}] must be an object with key, op and value`);
  const key = raw.key;
  if (typeof key !== 'string' || key === '') throw badRequest(`missing required field "scope.filters[${i}].key"`);
  const op = raw.op;
  if (op === undefined || op === null || op === '') throw badRequest(`missing required field "scope.filters[${i}].op"`);
  if (typeof op !== 'string' || !(FILTER_OPS as readonly string[]).includes(op)) {
    throw badRequest(`invalid filter op ${JSON.stringify(op)} in scope.filters[${i}] (use =, !=, =~ or !~)`);
  }
  const value = raw.value;
  if (value === undefined || value === null) throw badRequest(`missing required field "scope.filters[${i}].value"`);
  if (typeof value !== 'string') throw badRequest(`scope.filters[${i}].value must be a string`);
  if (op === '=~' || op === '!~') {
    try {
      compileAnchoredRegex(value);
    } catch (e) {
      if (e instanceof InvalidRegexError) throw badRequest(`scope.filters[${i}]: ${e.message}`);
      throw e;
    }
  }
  return { key, op: op as PolicyFilter['op'], value };
}

/** Parses a Policy body; the allowed-label check follows the stream rule of evaluate.ts. */
export function parsePolicy(body: unknown, allowed: AllowedLabels): Policy {
  if (!isObject(body)) throw badRequest('request body must be a JSON object with name and scope');
  const name = requireString(body, 'name');
  const scope = body.scope;
  if (scope === undefined || scope === null) throw badRequest('missing required field "scope"');
  if (!isObject(scope)) throw badRequest('field "scope" must be an object with type and filters');
  const type = scope.type;
  if (type === undefined || type === null || type === '') throw badRequest('missing required field "scope.type"');
  if (typeof type !== 'string' || !(SCOPE_TYPES as readonly string[]).includes(type)) {
    throw badRequest(`invalid scope type ${JSON.stringify(type)} (use all, none or custom)`);
  }
  const rawFilters = scope.filters ?? [];
  if (!Array.isArray(rawFilters)) throw badRequest('field "scope.filters" must be an array');
  const filters = rawFilters.map(parseFilter);
  const selected = streamsSelected(filters);
  if (selected.length === 0) throw badRequest(`the ${STREAM_KEY} filters select no stream`);
  for (const f of filters) {
    if (!selected.some((s) => isLabelAllowed(allowed, s, f.key))) {
      throw badRequest(
        `filter key "${f.key}" is not an allowed label for stream ${selected.join(', ')} (see GET /rbac/allowed-labels)`,
      );
    }
  }
  return { name, scope: { type: type as ScopeType, filters } };
}

export function parseEntityType(v: unknown): EntityType {
  if (v === undefined || v === null || v === '') throw badRequest('missing required field "entity_type"');
  if (typeof v !== 'string' || !(ENTITY_TYPES as readonly string[]).includes(v)) {
    throw badRequest(`invalid entity_type ${JSON.stringify(v)} (use group, user or service_account)`);
  }
  return v as EntityType;
}
