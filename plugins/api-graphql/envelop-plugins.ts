/**
 * The envelop plugins around every operation, HTTP or WebSocket: auth context, RBAC scope,
 * document limits (length, depth), the operation timeout and GRAPHQL.md's error shape.
 */
import type { Plugin } from '@envelop/core';
import {
  GraphQLError,
  getOperationAST,
  Kind,
  type ASTVisitor,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import { createQueryContext } from '../../kernel/query-context.js';
import type { GraphQLComponent } from './contributions.js';
import type { GraphQLRequestContext, GraphQLTransportContext } from './context.js';
import { ApiError, documentError, formatResult, withCode } from './errors.js';

/** A document longer than this is refused before parsing (a SvcQL query is at most 8192). */
export const MAX_DOCUMENT_CHARS = 65_536;
/** Deep enough for the standard introspection query, far below anything abusive. */
export const MAX_DEPTH = 15;

type Ctx = GraphQLTransportContext & Partial<GraphQLRequestContext>;

/** Refuses operations without an authenticated principal (transports authenticate first). */
export function useAuthContext(): Plugin<Ctx> {
  return {
    onContextBuilding({ context }) {
      if (!context.principal) throw documentError('missing or invalid Authorization header', 'UNAUTHENTICATED');
    },
  };
}

/**
 * Resolves the principal's RBAC scope through the kernel (once per stream per operation) and
 * gives the operation its deadline.
 */
export function useRbacScope(timeoutMs: number): Plugin<Ctx> {
  return {
    onContextBuilding({ context, extendContext }) {
      const query = createQueryContext(context.services, context.principal!, { signal: context.signal, timeoutMs });
      extendContext({ query, scope: (stream) => query.scope(stream), timeoutMs });
    },
  };
}

/** Document length before parsing; selection depth during validation. */
export function useDocumentLimits(): Plugin<Ctx> {
  return {
    onParse({ params }) {
      const src = params.source;
      const len = typeof src === 'string' ? src.length : typeof src?.body === 'string' ? src.body.length : 0;
      if (len > MAX_DOCUMENT_CHARS) {
        throw documentError(`document is ${len} characters long, maximum ${MAX_DOCUMENT_CHARS}`, 'QUERY_TOO_LONG');
      }
    },
    onValidate({ addValidationRule }) {
      addValidationRule(depthLimitRule(MAX_DEPTH));
    },
  };
}

export function depthLimitRule(max: number): (ctx: ValidationContext) => ASTVisitor {
  return (ctx) => {
    const depthOf = (set: SelectionSetNode, seen: Set<string>): number => {
      let deepest = 0;
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) {
          deepest = Math.max(deepest, 1 + (sel.selectionSet ? depthOf(sel.selectionSet, seen) : 0));
        } else if (sel.kind === Kind.INLINE_FRAGMENT) {
          deepest = Math.max(deepest, depthOf(sel.selectionSet, seen));
        } else {
          const name = sel.name.value;
          if (seen.has(name)) continue; // cycles are reported by NoFragmentCycles
          const frag: FragmentDefinitionNode | null | undefined = ctx.getFragment(name);
          if (frag) deepest = Math.max(deepest, depthOf(frag.selectionSet, new Set([...seen, name])));
        }
        if (deepest > max) return deepest;
      }
      return deepest;
    };
    return {
      OperationDefinition(node) {
        const depth = depthOf(node.selectionSet, new Set());
        if (depth > max) ctx.reportError(new GraphQLError(`query depth ${depth} exceeds the maximum of ${max}`, { nodes: [node] }));
      },
    };
  };
}

function rootKeys(args: ExecutionArgs): { key: string; field: string }[] {
  const op = getOperationAST(args.document, args.operationName);
  const out: { key: string; field: string }[] = [];
  for (const sel of op?.selectionSet.selections ?? []) {
    if (sel.kind === Kind.FIELD) out.push({ key: sel.alias?.value ?? sel.name.value, field: sel.name.value });
  }
  return out;
}

/**
 * Races execution against the operation's deadline (QUERY_TIMEOUT). Resolvers also get the
 * deadline and signal, so the work itself stops; this guarantees the answer comes in time.
 */
export function useTimeout(components: ReadonlyMap<string, GraphQLComponent>): Plugin<Ctx> {
  return {
    onExecute({ executeFn, setExecuteFn }) {
      setExecuteFn(async (args: ExecutionArgs) => {
        const ctx = args.contextValue as GraphQLRequestContext;
        const signal = ctx.query.signal;
        let onAbort: (() => void) | undefined;
        const timedOut = new Promise<ExecutionResult>((resolve) => {
          onAbort = () => {
            const errors = rootKeys(args).map(
              ({ key, field }) =>
                new GraphQLError('query timed out', {
                  path: [key],
                  extensions: { code: 'QUERY_TIMEOUT', component: components.get(field) ?? 'graphql' },
                }),
            );
            resolve({ data: null, errors });
          };
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        });
        try {
          return await Promise.race([executeFn(args) as Promise<ExecutionResult>, timedOut]);
        } finally {
          if (onAbort) signal.removeEventListener('abort', onAbort);
        }
      });
    },
  };
}

/** Gives every error GRAPHQL.md's shape, whichever phase raised it. */
export function useErrorFormatting(): Plugin<Ctx> {
  const operationOf = (args: { document: DocumentNode; operationName?: string | null }) =>
    getOperationAST(args.document, args.operationName ?? undefined) ?? undefined;
  return {
    onParse() {
      return ({ result, replaceParseResult }) => {
        if (result instanceof GraphQLError) replaceParseResult(withCode(result, 'GRAPHQL_PARSE_FAILED'));
        else if (result instanceof Error) replaceParseResult(documentError(result.message, 'GRAPHQL_PARSE_FAILED'));
      };
    },
    onValidate() {
      return ({ result, setResult }) => {
        if (result.length) {
          setResult(
            result.map((e) =>
              e instanceof GraphQLError ? withCode(e, 'GRAPHQL_VALIDATION_FAILED') : documentError(String(e), 'GRAPHQL_VALIDATION_FAILED'),
            ),
          );
        }
      };
    },
    onExecute() {
      return {
        onExecuteDone({ args, result, setResult }) {
          if (!isAsyncIterable(result)) setResult(formatExecution(result, operationOf(args)));
        },
      };
    },
    onSubscribe() {
      return {
        onSubscribeResult({ args, result, setResult }) {
          if (!isAsyncIterable(result)) {
            setResult(formatExecution(result, operationOf(args)));
            return undefined;
          }
          return {
            onNext({ result: r, setResult: set }) {
              set(formatExecution(r, operationOf(args)));
            },
          };
        },
      };
    },
  };
}

function formatExecution(result: ExecutionResult, op: ReturnType<typeof getOperationAST> | undefined): ExecutionResult {
  // An execution-phase failure without data (variable coercion) also answers data.<op>: null.
  const r = result.errors?.length && result.data === undefined ? { ...result, data: null } : result;
  return formatResult(r, op ?? undefined);
}

function isAsyncIterable(v: ExecutionResult | AsyncIterable<unknown>): v is AsyncIterable<unknown> {
  return typeof v === 'object' && v !== null && Symbol.asyncIterator in v;
}

export { ApiError };
