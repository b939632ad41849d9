/** A typed service token: `ctx.get(Tokens.Config)` is typed as the service it names. */
export class Token<T> {
  readonly id: symbol;
  /** Phantom field that carries T for inference; never set. */
  declare readonly __type?: T;
  constructor(readonly name: string) {
    this.id = Symbol.for(`lookout:${name}`);
  }
}

export function createToken<T>(name: string): Token<T> {
  return new Token<T>(name);
}
