/**
 * Label keys a policy filter may name, per stream (GET /rbac/allowed-labels). The defaults are the
 * keys our receivers put on records of each stream; `pluginOptions.rbac.allowedLabels` replaces
 * the list of any stream it names. `svc_stream` is always allowed and always listed.
 */
import type { SignalStream } from '../../kernel/extension-points.js';
import { STREAMS, STREAM_KEY } from './model.js';

const COMMON = ['service', 'env', 'cluster', 'namespace', 'region', 'host', 'team', 'app', 'version'];

export const DEFAULT_ALLOWED_LABELS: Readonly<Record<SignalStream, readonly string[]>> = {
  logs: [...COMMON, 'level', 'source', 'pod', 'container', 'kube_namespace', 'kube_cluster_name', 'filename'],
  metrics: [...COMMON, 'job', 'instance', '__name__', 'pod', 'container', 'kube_namespace', 'kube_cluster_name'],
  events: [...COMMON, 'source', 'kind', 'reason', 'kube_namespace', 'kube_cluster_name'],
  apm: [...COMMON, 'service.name', 'service.namespace', 'deployment.environment', 'k8s.namespace.name', 'k8s.cluster.name'],
  rum: [...COMMON, 'application', 'view', 'browser', 'device', 'country'],
};

/** `*` in a stream's list allows every key for that stream. */
export const ANY_LABEL = '*';

export type AllowedLabels = Readonly<Record<SignalStream, readonly string[]>>;

export class AllowedLabelsError extends Error {}

/** Merges the option over the defaults; a malformed option is a startup error naming it. */
export function resolveAllowedLabels(option: unknown): AllowedLabels {
  const out: Record<string, readonly string[]> = {};
  for (const s of STREAMS) out[s] = DEFAULT_ALLOWED_LABELS[s];
  if (option !== undefined) {
    if (typeof option !== 'object' || option === null || Array.isArray(option)) {
      throw new AllowedLabelsError('pluginOptions.rbac.allowedLabels must be an object keyed by stream');
    }
    for (const [stream, keys] of Object.entries(option)) {
      if (!(STREAMS as readonly string[]).includes(stream)) {
        throw new AllowedLabelsError(`pluginOptions.rbac.allowedLabels: unknown stream "${stream}" (use ${STREAMS.join(', ')})`);
      }
      if (!Array.isArray(keys) || keys.some((k) => typeof k !== 'string' || k === '')) {
        throw new AllowedLabelsError(`pluginOptions.rbac.allowedLabels.${stream} must be an array of label keys`);
      }
      out[stream] = keys as string[];
    }
  }
  for (const s of STREAMS) {
    const list = out[s]!;
    out[s] = list.includes(STREAM_KEY) ? [...list] : [STREAM_KEY, ...list];
  }
  return out as AllowedLabels;
}

export function isLabelAllowed(allowed: AllowedLabels, stream: SignalStream, key: string): boolean {
  if (key === STREAM_KEY) return true;
  const list = allowed[stream];
  return list.includes(key) || list.includes(ANY_LABEL);
}
