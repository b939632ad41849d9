/**
 * Favorite facets (GRAPHQL.md "Favorite facets"): one shared list in the MetaStore, keyed by
 * (group, displayName) and listed sorted by both. Every write is one MetaStore transaction, so
 * a concurrent add of the same key yields exactly one success and one CONFLICT.
 */
import { badRequest, conflict } from '../../kernel/errors.js';
import type { MetaStore, MetaValue } from '../../kernel/storage.js';

export const COLLECTION = 'favorite-facets';
export const DATATYPES = ['STRING', 'NUMBER', 'BOOLEAN'] as const;
export type FacetDataType = (typeof DATATYPES)[number];

export interface FavoriteFacet {
  name: string;
  dataType: string;
  group: string;
  displayName: string;
  source: string;
  /** null = root folder. */
  folderUid: string | null;
}

export interface FacetEdit {
  newGroup?: string | null;
  newDisplayName?: string | null;
  newFolderUid?: string | null;
}

export interface FacetListQuery {
  contains?: string;
  group?: string | null;
  /** Decimal count of items to skip. */
  cursor?: string | null;
  limit?: number;
}

/** The MetaStore key; \u0000 cannot occur in names a user types, so keys never collide. */
const keyOf = (group: string, displayName: string): string => `${group}\u0000${displayName}`;

function toFacet(v: MetaValue): FavoriteFacet | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const o = v as Record<string, MetaValue>;
  if (typeof o.name !== 'string' || typeof o.group !== 'string' || typeof o.displayName !== 'string') return undefined;
  return {
    name: o.name,
    dataType: typeof o.dataType === 'string' ? o.dataType : 'STRING',
    group: o.group,
    displayName: o.displayName,
    source: typeof o.source === 'string' ? o.source : '',
    folderUid: typeof o.folderUid === 'string' ? o.folderUid : null,
  };
}

const toMeta = (f: FavoriteFacet): MetaValue => ({ ...f });

/** Sorted by group, then display name (UTF-16 order, as everywhere else). */
function compare(a: FavoriteFacet, b: FavoriteFacet): number {
  if (a.group !== b.group) return a.group < b.group ? -1 : 1;
  return a.displayName < b.displayName ? -1 : a.displayName > b.displayName ? 1 : 0;
}

function requireName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw badRequest(`${what} must not be empty`);
  return value;
}

function checkDataType(value: unknown): FacetDataType {
  if (typeof value !== 'string' || !(DATATYPES as readonly string[]).includes(value)) {
    throw badRequest(`datatype must be one of ${DATATYPES.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as FacetDataType;
}

export class FavoriteFacetStore {
  constructor(private readonly meta: () => MetaStore) {}

  private async all(): Promise<FavoriteFacet[]> {
    const out: FavoriteFacet[] = [];
    for (const [, v] of await this.meta().list(COLLECTION)) {
      const f = toFacet(v);
      if (f) out.push(f);
    }
    return out.sort(compare);
  }

  async list(q: FacetListQuery): Promise<FavoriteFacet[]> {
    let skip = 0;
    if (q.cursor !== undefined && q.cursor !== null && q.cursor !== '') {
      if (!/^[0-9]{1,9}$/.test(q.cursor)) throw badRequest(`invalid cursor "${q.cursor}": expected a decimal count`);
      skip = Number(q.cursor);
    }
    const needle = (q.contains ?? '').toLowerCase();
    const items = (await this.all()).filter(
      (f) => (q.group === undefined || q.group === null || f.group === q.group) && f.displayName.toLowerCase().includes(needle),
    );
    return items.slice(skip, q.limit === undefined ? undefined : skip + q.limit);
  }

  async groups(limit?: number): Promise<string[]> {
    const groups = [...new Set((await this.all()).map((f) => f.group))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return limit === undefined ? groups : groups.slice(0, limit);
  }

  async add(input: {
    facet: unknown;
    displayName: unknown;
    datatype: unknown;
    facetGroup: unknown;
    source?: unknown;
    folderUid?: unknown;
  }): Promise<true> {
    const facet: FavoriteFacet = {
      name: requireName(input.facet, 'facet'),
      dataType: checkDataType(input.datatype),
      group: requireName(input.facetGroup, 'facetGroup'),
      displayName: requireName(input.displayName, 'displayName'),
      source: typeof input.source === 'string' ? input.source : '',
      folderUid: typeof input.folderUid === 'string' && input.folderUid !== '' ? input.folderUid : null,
    };
    const key = keyOf(facet.group, facet.displayName);
    return this.meta().transaction((tx) => {
      if (tx.get(COLLECTION, key) !== undefined) {
        throw conflict(`favorite facet "${facet.displayName}" already exists in group "${facet.group}"`);
      }
      tx.put(COLLECTION, key, toMeta(facet));
      return true as const;
    });
  }

  /** Applies the non-null edit fields; false when no facet has that key. */
  async edit(displayName: unknown, group: unknown, edit: FacetEdit): Promise<boolean> {
    const oldName = requireName(displayName, 'display_name');
    const oldGroup = requireName(group, 'facetGroup');
    const newGroup = edit.newGroup ?? null;
    const newName = edit.newDisplayName ?? null;
    if (newGroup !== null) requireName(newGroup, 'newGroup');
    if (newName !== null) requireName(newName, 'newDisplayName');
    return this.meta().transaction((tx) => {
      const oldKey = keyOf(oldGroup, oldName);
      const current = tx.get(COLLECTION, oldKey);
      const facet = current === undefined ? undefined : toFacet(current);
      if (!facet) return false;
      const next: FavoriteFacet = {
        ...facet,
        group: newGroup ?? facet.group,
        displayName: newName ?? facet.displayName,
        folderUid:
          edit.newFolderUid === undefined || edit.newFolderUid === null
            ? facet.folderUid
            : edit.newFolderUid === ''
              ? null
              : edit.newFolderUid,
      };
      const newKey = keyOf(next.group, next.displayName);
      if (newKey !== oldKey) {
        if (tx.get(COLLECTION, newKey) !== undefined) {
          throw conflict(`favorite facet "${next.displayName}" already exists in group "${next.group}"`);
        }
        tx.delete(COLLECTION, oldKey);
      }
      tx.put(COLLECTION, newKey, toMeta(next));
      return true;
    });
  }

  async remove(displayName: unknown, group: unknown): Promise<boolean> {
    const name = requireName(displayName, 'display_name');
    const g = requireName(group, 'facetGroup');
    return this.meta().transaction((tx) => tx.delete(COLLECTION, keyOf(g, name)));
  }

  /** Deletes the group and all its facets; false when it had none. */
  async removeGroup(group: unknown): Promise<boolean> {
    const g = requireName(group, 'facetGroup');
    return this.meta().transaction((tx) => {
      let removed = false;
      for (const [key, v] of tx.list(COLLECTION)) {
        if (toFacet(v)?.group === g) removed = tx.delete(COLLECTION, key) || removed;
      }
      return removed;
    });
  }
}
