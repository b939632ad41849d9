/**
 * One trace indexed for evaluation: spans by position, parent links, root and trace bounds.
 * Structural operators and trace-level intrinsics read only this.
 */
import type { Span } from '../../kernel/models.js';

export const NO_ROOT_SERVICE = '<root span not yet received>';

export interface TraceView {
  readonly traceId: string;
  readonly spans: readonly Span[];
  /** parent[i] = index of span i's parent in `spans`, -1 when absent or not present. */
  readonly parent: Int32Array;
  /** Index of the root span (no parent id), -1 when not received. */
  readonly root: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
}

const ZERO_ID = /^0*$/;

export function isRootSpan(s: Span): boolean {
  return s.parentSpanId === '' || ZERO_ID.test(s.parentSpanId);
}

export function buildTraceView(spans: readonly Span[]): TraceView {
  const byId = new Map<string, number>();
  spans.forEach((s, i) => byId.set(s.spanId, i));
  const parent = new Int32Array(spans.length).fill(-1);
  let root = -1;
  let startNs = spans.length ? spans[0]!.startTimeUnixNano : 0n;
  let endNs = spans.length ? spans[0]!.endTimeUnixNano : 0n;
  spans.forEach((s, i) => {
    if (isRootSpan(s)) {
      if (root < 0 || s.startTimeUnixNano < spans[root]!.startTimeUnixNano) root = i;
    } else {
      const p = byId.get(s.parentSpanId);
      if (p !== undefined && p !== i) parent[i] = p;
    }
    if (s.startTimeUnixNano < startNs) startNs = s.startTimeUnixNano;
    if (s.endTimeUnixNano > endNs) endNs = s.endTimeUnixNano;
  });
  return { traceId: spans[0]?.traceId ?? '', spans, parent, root, startNs, endNs };
}

export function rootServiceName(v: TraceView): string {
  if (v.root < 0) return NO_ROOT_SERVICE;
  const svc = v.spans[v.root]!.resource['service.name'];
  return typeof svc === 'string' ? svc : NO_ROOT_SERVICE;
}

export function rootTraceName(v: TraceView): string | undefined {
  return v.root < 0 ? undefined : v.spans[v.root]!.name;
}
