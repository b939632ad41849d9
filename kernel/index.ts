/** Public API for plugin authors and embedders: `import { definePlugin } from 'lookout'`. */
export * from './auth.js';
export * from './config.js';
export * from './errors.js';
export * from './extension-points.js';
export * from './http/error-format.js';
export { HttpResponse, RESPONSE_HANDLED, type RequestContext, type RouteDefinition, type HttpMethod, type RouteAuth } from './http/routes.js';
export * from './matchers.js';
export * from './models.js';
export * from './plugin.js';
export * from './services.js';
export * from './storage.js';
export * from './tokens.js';
export * from './query-context.js';
export { Kernel, adminTokenPath } from './kernel.js';
export { startLookout } from './server.js';
