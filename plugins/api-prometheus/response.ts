/**
 * Prometheus' success envelope: `{status:"success", data, warnings?, infos?}`. Errors are not
 * shaped here: handlers throw LookoutErrors and the kernel formats them for the 'prometheus'
 * family as `{status:"error", errorType, error}`.
 */
export interface PromEnvelope {
  status: 'success';
  data: unknown;
  warnings?: string[];
  infos?: string[];
}

export function success(data: unknown, warnings: readonly string[] = [], infos: readonly string[] = []): PromEnvelope {
  const out: PromEnvelope = { status: 'success', data };
  if (warnings.length) out.warnings = [...warnings];
  if (infos.length) out.infos = [...infos];
  return out;
}

export const TRUNCATED_WARNING = 'results truncated due to limit';
