/** Time source, injectable so tests can pin "now". */
export interface Clock {
  /** Unix milliseconds. */
  now(): number;
}
export const systemClock: Clock = { now: () => Date.now() };
