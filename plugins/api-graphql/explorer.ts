/**
 * The interactive explorer a browser gets from GET /query: a small self-contained page (no
 * CDN, no bundler at runtime) that runs queries over POST and subscriptions over WebSocket,
 * speaking graphql-transport-ws itself. Its files live in ./explorer and are read once.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { HttpResponse, type RouteDefinition } from '../../kernel/http/routes.js';
import { documentError, formatError } from './errors.js';

const ASSETS: Record<string, string> = {
  'explorer.js': 'text/javascript; charset=utf-8',
  'explorer.css': 'text/css; charset=utf-8',
};

/** Source tree (tsx) or the built dist/ next to the repository's plugins/. */
function assetDir(): string {
  const candidates = [
    fileURLToPath(new URL('./explorer/', import.meta.url)),
    fileURLToPath(new URL('../plugins/api-graphql/explorer/', import.meta.url)),
  ];
  return candidates.find((d) => existsSync(join(d, 'index.html'))) ?? candidates[0]!;
}

const cache = new Map<string, string>();
function asset(name: string): string {
  let text = cache.get(name);
  if (text === undefined) cache.set(name, (text = readFileSync(join(assetDir(), name), 'utf8')));
  return text;
}

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-cache',
};

export function explorerRoutes(): RouteDefinition[] {
  return [
    {
      method: 'GET',
      path: '/query',
      family: 'graphql',
      // The page holds no data; queries it sends carry the token the user types in.
      auth: 'none',
      handler(ctx) {
        const accept = String(ctx.headers.accept ?? '');
        if (!accept.includes('text/html')) {
          return HttpResponse.json({
            errors: [formatError(documentError('send GraphQL operations with POST /query; GET serves the explorer to browsers', 'BAD_USER_INPUT'))],
          });
        }
        return new HttpResponse(200, asset('index.html'), { 'content-type': 'text/html; charset=utf-8', ...SECURITY_HEADERS });
      },
    },
    {
      method: 'GET',
      path: '/query/assets/:name',
      family: 'plain',
      auth: 'none',
      handler(ctx) {
        const name = ctx.params.name ?? '';
        const type = ASSETS[name];
        if (!type) return HttpResponse.text('Not Found\n', 404);
        return new HttpResponse(200, asset(name), { 'content-type': type, ...SECURITY_HEADERS });
      },
    },
  ];
}
