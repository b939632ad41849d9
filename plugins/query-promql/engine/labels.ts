/** Label-set helpers used by the evaluator (computed once per series, never per step). */
import type { Labels } from '../../../kernel/models.js';

export const METRIC_NAME = '__name__';

/** Labels dropped together with the metric name (Prometheus' schema.IsMetadataLabel). */
export function isMetadataLabel(n: string): boolean {
  return n === '__name__' || n === '__type__' || n === '__unit__';
}

export function dropMetricName(l: Labels): Labels {
  if (!('__name__' in l) && !('__type__' in l) && !('__unit__' in l)) return l;
  const out: Record<string, string> = {};
  for (const k in l) if (!isMetadataLabel(k)) out[k] = l[k]!;
  return out;
}

/** Canonical key (sorted names). */
export function keyOf(l: Labels): string {
  const names = Object.keys(l).sort();
  let k = '';
  for (const n of names) k += n + '\xff' + l[n] + '\xfe';
  return k;
}

/** Key over a subset: `on` labels (include) or all but `ignoring` (+ name). */
export function signature(l: Labels, names: readonly string[], on: boolean): string {
  let k = '';
  if (on) {
    const sorted = [...names].sort();
    for (const n of sorted) {
      const v = l[n];
      if (v !== undefined && v !== '') k += n + '\xff' + v + '\xfe';
    }
    return k;
  }
  const names2 = Object.keys(l).sort();
  for (const n of names2) {
    if (n === '__name__' || names.includes(n)) continue;
    k += n + '\xff' + l[n] + '\xfe';
  }
  return k;
}

export function sortLabels(l: Record<string, string>): Labels {
  const out: Record<string, string> = {};
  for (const k of Object.keys(l).sort()) if (l[k] !== '') out[k] = l[k]!;
  return out;
}

/** Prometheus' label-set string `{a="b", c="d"}` (name first as in Go's Labels.String). */
export function labelsString(l: Labels): string {
  const names = Object.keys(l).sort();
  return '{' + names.map((n) => `${n}=${JSON.stringify(l[n])}`).join(', ') + '}';
}

/** Compares label sets as Prometheus' labels.Compare (sorted name/value pairs). */
export function compareLabels(a: Labels, b: Labels): number {
  const an = Object.keys(a).sort();
  const bn = Object.keys(b).sort();
  const n = Math.min(an.length, bn.length);
  for (let i = 0; i < n; i++) {
    if (an[i] !== bn[i]) return an[i]! < bn[i]! ? -1 : 1;
    const av = a[an[i]!]!;
    const bv = b[bn[i]!]!;
    if (av !== bv) return av < bv ? -1 : 1;
  }
  return an.length - bn.length;
}

export function isValidLabelName(n: string): boolean {
  // Prometheus 3 accepts any valid UTF-8 label name that is not empty.
  if (n === '') return false;
  return isValidUTF8(n);
}

/** The lexer keeps bytes that are not valid UTF-8 as lone surrogates (see lexer.ts): any lone surrogate means invalid. */
export function isValidUTF8(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return false;
  }
  return true;
}
