/**
 * The RBAC data model as SPEC.md shows it on the wire ("Policy", "Policy mapping", "Team",
 * "Team member", "Effective policies"), shared by the rbac and teams plugins.
 */
import type { MatchOp } from '../../kernel/matchers.js';
import type { SignalStream } from '../../kernel/extension-points.js';

/** The streams a policy scope speaks about, in the order effective policies list them. */
export const STREAMS: readonly SignalStream[] = ['logs', 'metrics', 'events', 'apm', 'rum'];

/** The pseudo label that selects streams instead of records. */
export const STREAM_KEY = 'svc_stream';

export const SCOPE_TYPES = ['all', 'none', 'custom'] as const;
export type ScopeType = (typeof SCOPE_TYPES)[number];

export const FILTER_OPS: readonly MatchOp[] = ['=', '!=', '=~', '!~'];

export interface PolicyFilter {
  key: string;
  op: MatchOp;
  value: string;
}

export interface PolicyScope {
  type: ScopeType;
  filters: PolicyFilter[];
}

export interface Policy {
  name: string;
  scope: PolicyScope;
}

export const ENTITY_TYPES = ['group', 'user', 'service_account'] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];

export interface PolicyMapping {
  policy_name: string;
  entity_type: EntityType;
  entity_name: string;
  /** ISO 8601 UTC with microseconds. */
  created_at: string;
}

export interface Team {
  name: string;
  email: string;
  member_count: number;
  local_dashboard_id: number;
}

export const MEMBER_ROLES = ['Member', 'Admin'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];

export interface TeamMember {
  email: string;
  name: string;
  login: string;
  role: MemberRole;
}

/** One entry of `scopes[stream]` in effective policies; `filters` is omitted for type none. */
export interface ScopeEntry {
  type: ScopeType;
  filters?: PolicyFilter[];
  policy_name: string;
}

export interface EffectivePolicies {
  name: string;
  entity_type: EntityType;
  policies: Policy[];
  scopes: Record<SignalStream, ScopeEntry[]>;
  direct_policy_count: number;
  total_policy_count: number;
}

/** The name of the synthetic entry for a stream that no assigned policy grants. */
export const DEFAULT_DENY_POLICY = 'default-deny-policy';
