/** Shared setup of the RBAC suites: a server with users and JSON request helpers. */
import { startTestServer, type ConfigOverrides, type TestServer } from '../helpers/server.js';

export const USERS = [
  { email: 'ana@example.com', name: 'Ana', login: 'ana', token: 'ana-token' },
  { email: 'bob@example.com', name: 'Bob', login: 'bob', token: 'bob-token' },
  { email: 'cy+ops@example.com', name: 'Cy', login: 'cy', token: 'cy-token' },
];

export function rbacServer(overrides: ConfigOverrides = {}, opts: Parameters<typeof startTestServer>[1] = {}) {
  return startTestServer({ auth: { users: USERS }, rbac: { enabled: true, defaultPolicy: 'deny' }, ...overrides }, opts);
}

export interface JsonResult<T = any> {
  status: number;
  body: T;
  text: string;
  contentType: string;
}

/** Sends JSON (when a body is given) and parses JSON replies. `token: null` sends no Authorization. */
export async function call<T = any>(
  srv: TestServer,
  method: string,
  path: string,
  body?: unknown,
  token?: string | null,
): Promise<JsonResult<T>> {
  const init: RequestInit & { token?: string | null } = { method, token };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  const res = await srv.fetch(path, init);
  const text = await res.text();
  let parsed: any = undefined;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed as T, text, contentType: res.headers.get('content-type') ?? '' };
}

export const enc = encodeURIComponent;
