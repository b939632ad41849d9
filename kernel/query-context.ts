import type { Principal } from './auth.js';
import { LookoutError } from './errors.js';
import type { QueryContext, SignalStream } from './extension-points.js';
import type { MatcherAlternatives } from './matchers.js';
import { Tokens } from './services.js';
import type { PluginContext } from './plugin.js';

/**
 * Builds the context of one query: the principal, its RBAC scope per stream (resolved once,
 * by the kernel's ScopeResolver — the single place authorization is decided) and its deadline.
 */
export function createQueryContext(
  services: Pick<PluginContext, 'get'>,
  principal: Principal,
  opts: { signal?: AbortSignal; timeoutMs?: number } = {},
): QueryContext {
  const config = services.get(Tokens.Config);
  const timeoutMs = Math.min(opts.timeoutMs ?? Infinity, config.limits.queryTimeoutSeconds * 1000);
  const deadline = Date.now() + timeoutMs;
  const resolver = services.get(Tokens.ScopeResolver);
  const cache = new Map<SignalStream, Promise<MatcherAlternatives | undefined>>();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new LookoutError('timeout', 'query timed out')), timeoutMs);
  timer.unref();
  opts.signal?.addEventListener('abort', () => controller.abort(opts.signal!.reason), { once: true });
  return {
    principal,
    storage: services.get(Tokens.Storage),
    scope(stream) {
      let p = cache.get(stream);
      if (!p) cache.set(stream, (p = resolver.scopeFor(principal, stream)));
      return p;
    },
    signal: controller.signal,
    deadline,
  };
}

/** Throws a timeout error once the query is past its deadline or aborted. */
export function checkDeadline(ctx: QueryContext): void {
  if (ctx.signal.aborted || Date.now() > ctx.deadline) throw new LookoutError('timeout', 'query timed out');
}

/**
 * Runs one query and records its duration in `lookout_query_duration_seconds{language,outcome}`
 * on /metrics.
 */
export async function timeQuery<T>(
  services: Pick<PluginContext, 'get'>,
  language: string,
  fn: () => Promise<T>,
): Promise<T> {
  const hist = services
    .get(Tokens.Metrics)
    .histogram('lookout_query_duration_seconds', 'Query execution time by language and outcome.');
  const start = performance.now();
  let outcome = 'error';
  try {
    const out = await fn();
    outcome = 'ok';
    return out;
  } finally {
    hist.observe({ language, outcome }, (performance.now() - start) / 1000);
  }
}
