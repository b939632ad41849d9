/**
 * Chooses the enabled plugins and orders them by dependency. Cycles and missing dependencies
 * are startup errors that name the plugins involved.
 */
import { pathToFileURL } from 'node:url';
import { resolve as resolvePath } from 'node:path';
import { createRequire } from 'node:module';
import { isPluginDefinition, type PluginDefinition } from './plugin.js';

export class PluginLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PluginLoadError';
  }
}

/**
 * An entry of `plugins` that names a module instead of a first-party plugin: a path, a scoped
 * package, or (decided by the kernel) a bare name that no first-party plugin has.
 */
export function isModuleSpecifier(entry: string): boolean {
  return entry.startsWith('.') || entry.startsWith('/') || entry.includes('/') || entry.startsWith('@');
}

/** Imports a third-party plugin module: its default export (or `plugin`/`plugins`) is used. */
export async function importPluginModule(spec: string, baseDir: string): Promise<PluginDefinition[]> {
  let url: string;
  if (spec.startsWith('.') || spec.startsWith('/')) {
    url = pathToFileURL(resolvePath(baseDir, spec)).href;
  } else {
    const req = createRequire(resolvePath(baseDir, 'package.json'));
    try {
      url = pathToFileURL(req.resolve(spec)).href;
    } catch {
      throw new PluginLoadError(
        `unknown plugin "${spec}": no first-party plugin has that name and no installed npm package either`,
      );
    }
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (e) {
    throw new PluginLoadError(`plugin module "${spec}" failed to load: ${(e as Error).message}`);
  }
  const candidates = [mod.default, mod.plugin, mod.plugins].flat().filter((x) => x !== undefined);
  const defs = candidates.filter(isPluginDefinition);
  if (defs.length === 0) {
    throw new PluginLoadError(`plugin module "${spec}" exports no plugin (export default definePlugin({...}))`);
  }
  return defs;
}

/**
 * Resolves `plugins` config entries against the available definitions: `*` is every first-party
 * plugin, a name is that plugin, a module specifier was already imported into `available`.
 */
export function selectPlugins(
  entries: readonly string[],
  firstParty: readonly PluginDefinition[],
  thirdParty: readonly PluginDefinition[],
  moduleEntries: ReadonlySet<string> = new Set(),
): PluginDefinition[] {
  const byName = new Map<string, PluginDefinition>();
  for (const p of [...firstParty, ...thirdParty]) {
    if (byName.has(p.name) && !firstParty.includes(p)) {
      throw new PluginLoadError(`two plugins are named "${p.name}"`);
    }
    byName.set(p.name, p);
  }
  const enabled = new Map<string, PluginDefinition>();
  for (const e of entries) {
    if (e === '*') {
      for (const p of firstParty) enabled.set(p.name, p);
    } else if (e.startsWith('-')) {
      enabled.delete(e.slice(1));
    } else if (!isModuleSpecifier(e) && !moduleEntries.has(e)) {
      const p = byName.get(e);
      if (!p) throw new PluginLoadError(`unknown plugin "${e}" in plugins`);
      enabled.set(e, p);
    }
  }
  for (const p of thirdParty) enabled.set(p.name, p);
  return [...enabled.values()];
}

/** Topological order (dependencies first), stable in the given order otherwise. */
export function orderPlugins(plugins: readonly PluginDefinition[]): PluginDefinition[] {
  const byName = new Map(plugins.map((p) => [p.name, p]));
  for (const p of plugins) {
    for (const d of p.dependsOn ?? []) {
      if (!byName.has(d)) {
        throw new PluginLoadError(`plugin "${p.name}" depends on "${d}", which is not enabled`);
      }
    }
  }
  const out: PluginDefinition[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (p: PluginDefinition, stack: string[]) => {
    const s = state.get(p.name);
    if (s === 'done') return;
    if (s === 'visiting') {
      const cycle = [...stack.slice(stack.indexOf(p.name)), p.name];
      throw new PluginLoadError(`plugin dependency cycle: ${cycle.join(' -> ')}`);
    }
    state.set(p.name, 'visiting');
    const deps = [...(p.dependsOn ?? []), ...(p.after ?? []).filter((d) => byName.has(d))];
    for (const d of deps) visit(byName.get(d)!, [...stack, p.name]);
    state.set(p.name, 'done');
    out.push(p);
  };
  for (const p of plugins) visit(p, []);
  return out;
}
