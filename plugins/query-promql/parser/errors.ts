/** Parse errors positioned like Prometheus: `1:14: parse error: unexpected ...`. */
export interface SourcePosition {
  line: number;
  column: number;
}

export function positionOf(input: string, offset: number): SourcePosition {
  let line = 1;
  let col = 1;
  for (let i = 0; i < offset && i < input.length; i++) {
    if (input[i] === '\n') {
      line++;
      col = 1;
    } else col++;
  }
  return { line, column: col };
}

export class PromQLParseError extends Error {
  /** The message without the position prefix. */
  readonly detail: string;
  constructor(
    detail: string,
    readonly position: SourcePosition,
    readonly offset: number = 0,
  ) {
    super(`${position.line}:${position.column}: parse error: ${detail}`);
    this.name = 'PromQLParseError';
    this.detail = detail;
  }
}
