/**
 * Policy evaluation, the single definition of what a set of policies grants on a stream
 * (SPEC.md "RBAC policies": AND within a policy, OR across policies; `all` grants everything,
 * `none` nothing, `custom` restricts to its filters).
 *
 * Which streams a policy speaks about:
 * - `all` and `none`: every stream (their filters are ignored for access decisions);
 * - `custom`: the streams its `svc_stream` filters accept (every stream when it has none), and of
 *   those only the streams for which every other filter key is an allowed label. A filter on a
 *   key a stream does not carry can never be evaluated there, so such a policy grants nothing on
 *   that stream instead of granting too much (a `!=` on a missing key would match everything).
 */
import type { SignalStream } from '../../kernel/extension-points.js';
import { compileMatcher, type LabelMatcher, type MatcherAlternatives } from '../../kernel/matchers.js';
import { isLabelAllowed, type AllowedLabels } from './allowed-labels.js';
import {
  DEFAULT_DENY_POLICY,
  STREAMS,
  STREAM_KEY,
  type EffectivePolicies,
  type EntityType,
  type Policy,
  type PolicyFilter,
  type ScopeEntry,
} from './model.js';

/** Streams accepted by every `svc_stream` filter of the list (all streams when there is none). */
export function streamsSelected(filters: readonly PolicyFilter[]): SignalStream[] {
  const preds = filters.filter((f) => f.key === STREAM_KEY).map((f) => compileMatcher({ name: f.key, op: f.op, value: f.value }));
  return STREAMS.filter((s) => preds.every((p) => p(s)));
}

export function coversStream(policy: Policy, stream: SignalStream, allowed: AllowedLabels): boolean {
  const { type, filters } = policy.scope;
  if (type !== 'custom') return true;
  if (!streamsSelected(filters).includes(stream)) return false;
  return filters.every((f) => isLabelAllowed(allowed, stream, f.key));
}

/** A custom policy's record filters as one conjunction; `svc_stream` is decided by stream selection. */
export function recordMatchers(policy: Policy): LabelMatcher[] {
  return policy.scope.filters.filter((f) => f.key !== STREAM_KEY).map((f) => ({ name: f.key, op: f.op, value: f.value }));
}

/**
 * What the policies grant on a stream: `undefined` = everything, alternatives = the OR of the
 * granting custom policies' conjunctions, `null` = no policy grants the stream (the caller
 * applies the default policy).
 */
export function grantFor(
  policies: readonly Policy[],
  stream: SignalStream,
  allowed: AllowedLabels,
): MatcherAlternatives | undefined | null {
  const alts: LabelMatcher[][] = [];
  const seen = new Set<string>();
  for (const p of policies) {
    if (p.scope.type === 'none' || !coversStream(p, stream, allowed)) continue;
    if (p.scope.type === 'all') return undefined;
    const ms = recordMatchers(p);
    // A custom policy without record filters grants the whole stream.
    if (ms.length === 0) return undefined;
    // Identical conjunctions (the same filters in several policies) are evaluated once.
    const key = JSON.stringify(ms);
    if (seen.has(key)) continue;
    seen.add(key);
    alts.push(ms);
  }
  return alts.length === 0 ? null : alts;
}

function scopeEntry(p: Policy): ScopeEntry {
  if (p.scope.type === 'none') return { type: 'none', policy_name: p.name };
  return { type: p.scope.type, filters: p.scope.filters.map((f) => ({ ...f })), policy_name: p.name };
}

/** SPEC.md "Effective policies" for an entity with its direct and its total (direct + inherited) policies. */
export function effectivePolicies(
  name: string,
  entityType: EntityType,
  direct: readonly Policy[],
  total: readonly Policy[],
  allowed: AllowedLabels,
): EffectivePolicies {
  const scopes = {} as Record<SignalStream, ScopeEntry[]>;
  for (const s of STREAMS) {
    const entries = total.filter((p) => coversStream(p, s, allowed)).map(scopeEntry);
    if (!entries.some((e) => e.type !== 'none')) entries.push({ type: 'none', policy_name: DEFAULT_DENY_POLICY });
    scopes[s] = entries;
  }
  return {
    name,
    entity_type: entityType,
    policies: direct.map(clonePolicy),
    scopes,
    direct_policy_count: direct.length,
    total_policy_count: total.length,
  };
}

export function clonePolicy(p: Policy): Policy {
  return { name: p.name, scope: { type: p.scope.type, filters: p.scope.filters.map((f) => ({ ...f })) } };
}
