/**
 * Persistence of policies, mappings, teams and memberships in the MetaStore. Every mutation is
 * one MetaStore transaction (a team delete removes the team, its members and its assignments
 * together). Reads are served from an in-memory snapshot rebuilt inside each transaction, so a
 * reader never sees half of a change and the scope resolver never touches storage on its hot path.
 */
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import type { IdentityDirectory } from '../../kernel/services.js';
import type { MetaStore, MetaTransaction, MetaValue } from '../../kernel/storage.js';
import { clonePolicy } from './evaluate.js';
import type { EntityType, MemberRole, Policy, PolicyMapping, Team, TeamMember } from './model.js';
import { isoMicros } from './time.js';

const C = {
  policies: 'rbac.policies',
  mappings: 'rbac.mappings',
  teams: 'rbac.teams',
  members: 'rbac.members',
  counters: 'rbac.counters',
} as const;

interface StoredPolicy extends Policy {
  seq: number;
}
interface StoredMapping extends PolicyMapping {
  seq: number;
}
interface StoredTeam {
  name: string;
  local_dashboard_id: number;
  seq: number;
}
interface StoredMember {
  team: string;
  email: string;
  role: MemberRole;
  seq: number;
}

interface Snapshot {
  policies: StoredPolicy[];
  mappings: StoredMapping[];
  teams: StoredTeam[];
  members: StoredMember[];
}

const bySeq = <T extends { seq: number }>(a: T, b: T) => a.seq - b.seq;
const mappingKey = (policy: string, type: EntityType, entity: string) => JSON.stringify([policy, type, entity]);
const memberKey = (team: string, email: string) => JSON.stringify([team, email]);
const toMeta = (v: object): MetaValue => v as unknown as MetaValue;

function readSnapshot(tx: Pick<MetaTransaction, 'list'>): Snapshot {
  const values = <T>(c: string) => tx.list(c).map(([, v]) => v as unknown as T);
  return {
    policies: values<StoredPolicy>(C.policies).sort(bySeq),
    mappings: values<StoredMapping>(C.mappings).sort(bySeq),
    teams: values<StoredTeam>(C.teams).sort(bySeq),
    members: values<StoredMember>(C.members).sort(bySeq),
  };
}

function nextCounter(tx: MetaTransaction, name: string): number {
  const cur = tx.get(C.counters, name);
  const next = (typeof cur === 'number' ? cur : 0) + 1;
  tx.put(C.counters, name, next);
  return next;
}

export type MembershipChange = 'added' | 'updated';

export class RbacStore {
  private snap: Snapshot = { policies: [], mappings: [], teams: [], members: [] };
  private version = 0;
  private readonly listeners: Array<() => void> = [];
  private meta: MetaStore | undefined;

  constructor(
    private readonly identities: IdentityDirectory,
    private readonly now: () => number,
  ) {}

  /** Opens the store on the MetaStore (storage exists only from onStart). */
  async open(meta: MetaStore): Promise<void> {
    this.meta = meta;
    await this.write(() => undefined);
  }

  /** Called after every committed change (the scope cache listens). */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  /** Runs a mutation in one transaction and swaps in the snapshot it committed. */
  private async write<T>(fn: (tx: MetaTransaction) => T): Promise<T> {
    if (!this.meta) throw new Error('rbac store used before storage opened');
    const { result, snap } = await this.meta.transaction((tx) => {
      const result = fn(tx);
      return { result, snap: readSnapshot(tx) };
    });
    this.snap = snap;
    this.version++;
    for (const l of this.listeners) l();
    return result;
  }

  /** Increases on every committed change. */
  get generation(): number {
    return this.version;
  }

  // ---- identities ---------------------------------------------------------------------------

  /** The configured user's canonical e-mail, or undefined when no such user exists. */
  canonicalEmail(email: string): string | undefined {
    return this.identities.userByEmail(email)?.email;
  }

  private entityExists(tx: MetaTransaction, type: EntityType, name: string): boolean {
    switch (type) {
      case 'group':
        return tx.get(C.teams, name) !== undefined;
      case 'user':
        return this.canonicalEmail(name) !== undefined;
      case 'service_account':
        return this.identities.serviceAccount(name) !== undefined;
    }
  }

  // ---- policies -----------------------------------------------------------------------------

  policies(): Policy[] {
    return this.snap.policies.map(clonePolicy);
  }

  policy(name: string): Policy | undefined {
    const p = this.snap.policies.find((x) => x.name === name);
    return p && clonePolicy(p);
  }

  createPolicy(p: Policy): Promise<Policy> {
    return this.write((tx) => {
      if (tx.get(C.policies, p.name) !== undefined) throw conflict(`a policy named "${p.name}" already exists`);
      tx.put(C.policies, p.name, toMeta({ ...clonePolicy(p), seq: nextCounter(tx, 'seq') }));
      return clonePolicy(p);
    });
  }

  replacePolicy(p: Policy): Promise<Policy> {
    return this.write((tx) => {
      const cur = tx.get(C.policies, p.name) as unknown as StoredPolicy | undefined;
      if (!cur) throw notFound(`policy "${p.name}" not found`);
      tx.put(C.policies, p.name, toMeta({ ...clonePolicy(p), seq: cur.seq }));
      return clonePolicy(p);
    });
  }

  /** Deletes the policy and every assignment of it. */
  deletePolicy(name: string): Promise<void> {
    return this.write((tx) => {
      if (!tx.delete(C.policies, name)) throw notFound(`policy "${name}" not found`);
      for (const [k, v] of tx.list(C.mappings)) {
        if ((v as unknown as StoredMapping).policy_name === name) tx.delete(C.mappings, k);
      }
    });
  }

  // ---- mappings -----------------------------------------------------------------------------

  mappingsOf(policy: string): PolicyMapping[] {
    return this.snap.mappings.filter((m) => m.policy_name === policy).map(({ seq: _s, ...m }) => m);
  }

  /** Assigns a policy; assigning twice keeps the first `created_at`. */
  addMapping(policy: string, type: EntityType, entity: string): Promise<PolicyMapping> {
    const name = type === 'user' ? (this.canonicalEmail(entity) ?? entity) : entity;
    return this.write((tx) => {
      if (tx.get(C.policies, policy) === undefined) throw notFound(`policy "${policy}" not found`);
      if (!this.entityExists(tx, type, name)) throw badRequest(`${type} "${entity}" not found`);
      const key = mappingKey(policy, type, name);
      const cur = tx.get(C.mappings, key) as unknown as StoredMapping | undefined;
      if (cur) return { policy_name: cur.policy_name, entity_type: cur.entity_type, entity_name: cur.entity_name, created_at: cur.created_at };
      const m: PolicyMapping = { policy_name: policy, entity_type: type, entity_name: name, created_at: isoMicros(this.now()) };
      tx.put(C.mappings, key, toMeta({ ...m, seq: nextCounter(tx, 'seq') }));
      return m;
    });
  }

  deleteMapping(policy: string, type: EntityType, entity: string): Promise<void> {
    const name = type === 'user' ? (this.canonicalEmail(entity) ?? entity) : entity;
    return this.write((tx) => {
      if (tx.get(C.policies, policy) === undefined) throw notFound(`policy "${policy}" not found`);
      if (!tx.delete(C.mappings, mappingKey(policy, type, name))) {
        throw notFound(`policy "${policy}" is not assigned to ${type} "${entity}"`);
      }
    });
  }

  /** Policies assigned directly to an entity, in assignment order. */
  directPolicies(type: EntityType, entity: string): Policy[] {
    const out: Policy[] = [];
    for (const m of this.snap.mappings) {
      if (m.entity_type !== type || m.entity_name !== entity) continue;
      const p = this.snap.policies.find((x) => x.name === m.policy_name);
      if (p) out.push(clonePolicy(p));
    }
    return out;
  }

  // ---- teams --------------------------------------------------------------------------------

  private toTeam(t: StoredTeam): Team {
    return {
      name: t.name,
      email: '',
      member_count: this.snap.members.filter((m) => m.team === t.name).length,
      local_dashboard_id: t.local_dashboard_id,
    };
  }

  teams(): Team[] {
    return this.snap.teams.map((t) => this.toTeam(t));
  }

  team(name: string): Team | undefined {
    const t = this.snap.teams.find((x) => x.name === name);
    return t && this.toTeam(t);
  }

  createTeam(name: string): Promise<Team> {
    return this.write((tx) => {
      if (tx.get(C.teams, name) !== undefined) throw conflict(`a team named "${name}" already exists`);
      const t: StoredTeam = { name, local_dashboard_id: nextCounter(tx, 'local_dashboard_id'), seq: nextCounter(tx, 'seq') };
      tx.put(C.teams, name, toMeta(t));
      return { name, email: '', member_count: 0, local_dashboard_id: t.local_dashboard_id };
    });
  }

  /** Deletes the team with its memberships and policy assignments. */
  deleteTeam(name: string): Promise<void> {
    return this.write((tx) => {
      if (!tx.delete(C.teams, name)) throw notFound(`team "${name}" not found`);
      for (const [k, v] of tx.list(C.members)) {
        if ((v as unknown as StoredMember).team === name) tx.delete(C.members, k);
      }
      for (const [k, v] of tx.list(C.mappings)) {
        const m = v as unknown as StoredMapping;
        if (m.entity_type === 'group' && m.entity_name === name) tx.delete(C.mappings, k);
      }
    });
  }

  members(team: string): TeamMember[] {
    return this.snap.members
      .filter((m) => m.team === team)
      .map((m) => {
        const u = this.identities.userByEmail(m.email);
        return { email: m.email, name: u?.name ?? m.email, login: u?.login ?? m.email, role: m.role };
      });
  }

  memberRole(team: string, email: string): MemberRole | undefined {
    const e = this.canonicalEmail(email) ?? email;
    return this.snap.members.find((m) => m.team === team && m.email === e)?.role;
  }

  putMember(team: string, email: string, role: MemberRole): Promise<MembershipChange> {
    const canonical = this.canonicalEmail(email);
    return this.write((tx) => {
      if (tx.get(C.teams, team) === undefined) throw notFound(`team "${team}" not found`);
      if (!canonical) throw badRequest(`user "${email}" does not exist`);
      const key = memberKey(team, canonical);
      const cur = tx.get(C.members, key) as unknown as StoredMember | undefined;
      tx.put(C.members, key, toMeta({ team, email: canonical, role, seq: cur?.seq ?? nextCounter(tx, 'seq') }));
      return cur ? 'updated' : 'added';
    });
  }

  removeMember(team: string, email: string): Promise<void> {
    const canonical = this.canonicalEmail(email) ?? email;
    return this.write((tx) => {
      if (tx.get(C.teams, team) === undefined) throw notFound(`team "${team}" not found`);
      if (!tx.delete(C.members, memberKey(team, canonical))) throw notFound(`user "${email}" is not a member of team "${team}"`);
    });
  }

  /** Teams a user belongs to. */
  teamsOf(email: string): string[] {
    const e = this.canonicalEmail(email) ?? email;
    return this.snap.members.filter((m) => m.email === e).map((m) => m.team);
  }
}
