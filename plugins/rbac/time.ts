/** Timestamps as SPEC.md's "Policy mapping" shows them: ISO 8601 UTC with microseconds. */

let lastMicros = 0;

/**
 * `2026-11-22T10:00:00.123456Z`. Date has millisecond resolution; the sub-millisecond digits come
 * from the monotonic clock and are kept strictly increasing so creation order is visible.
 */
export function isoMicros(nowMs: number): string {
  let micros = Math.floor(nowMs) * 1000 + Math.floor((performance.now() % 1) * 1000);
  if (micros <= lastMicros) micros = lastMicros + 1;
  lastMicros = micros;
  const ms = Math.floor(micros / 1000);
  const iso = new Date(ms).toISOString(); // ....sssZ
  return `${iso.slice(0, -1)}${String(micros % 1000).padStart(3, '0')}Z`;
}
