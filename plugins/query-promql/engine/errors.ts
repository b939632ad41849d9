/** Errors raised while evaluating (as opposed to parsing) a query. */
export class PromQLExecutionError extends Error {
  constructor(
    message: string,
    readonly kind: 'execution' | 'timeout' | 'bad_data' = 'execution',
  ) {
    super(message);
    this.name = 'PromQLExecutionError';
  }
}

export const TOO_MANY_SAMPLES = 'query processing would load too many samples into memory in query execution';
