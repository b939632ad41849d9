/**
 * The inverted index: label name → value → sorted series ids, with matcher evaluation that
 * intersects postings of the matchers that cannot match an empty value and filters the rest.
 */
import { compileMatcher, type LabelMatcher } from '../../kernel/matchers.js';
import type { Labels } from '../../kernel/models.js';

export class Postings {
  readonly byName = new Map<string, Map<string, number[]>>();
  /** Every live id, ascending. */
  all: number[] = [];

  add(id: number, labels: Labels): void {
    this.all.push(id);
    for (const n in labels) {
      let vals = this.byName.get(n);
      if (!vals) this.byName.set(n, (vals = new Map()));
      const list = vals.get(labels[n]!);
      if (list) list.push(id);
      else vals.set(labels[n]!, [id]);
    }
  }

  /** Ids of series whose labels satisfy every matcher (a missing label reads as ""). */
  select(matchers: readonly LabelMatcher[], labelsOf: (id: number) => Labels): number[] {
    let acc: number[] | undefined;
    const rest: LabelMatcher[] = [];
    for (const m of matchers) {
      const pred = compileMatcher(m);
      if (pred('')) {
        rest.push(m);
        continue;
      }
      const vals = this.byName.get(m.name);
      let ids: number[];
      if (!vals) ids = [];
      else if (m.op === '=') ids = vals.get(m.value) ?? [];
      else {
        const lists: number[][] = [];
        for (const [v, l] of vals) if (pred(v)) lists.push(l);
        ids = union(lists);
      }
      acc = acc === undefined ? ids : intersect(acc, ids);
      if (acc.length === 0) return acc;
    }
    let out = acc ?? this.all;
    if (rest.length > 0) {
      const preds = rest.map((m) => [m.name, compileMatcher(m)] as const);
      out = out.filter((id) => {
        const l = labelsOf(id);
        for (const [n, p] of preds) if (!p(l[n] ?? '')) return false;
        return true;
      });
    }
    return out;
  }
}

export function intersect(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x === y) {
      out.push(x);
      i++;
      j++;
    } else if (x < y) i++;
    else j++;
  }
  return out;
}

export function union(lists: readonly (readonly number[])[]): number[] {
  if (lists.length === 0) return [];
  if (lists.length === 1) return lists[0]!.slice();
  const all: number[] = [];
  for (const l of lists) for (const x of l) all.push(x);
  all.sort((a, b) => a - b);
  let k = 0;
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[k++] = all[i]!;
  all.length = k;
  return all;
}
