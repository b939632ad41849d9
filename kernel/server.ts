/**
 * Composition root: config + first-party plugins → a started Kernel.
 */
import { loadConfig, type ConfigSources, type LookoutConfig } from './config.js';
import { Kernel, type StartedServer } from './kernel.js';
import type { PluginDefinition } from './plugin.js';
import type { Logger } from './logger.js';
import { firstPartyPlugins } from '../plugins/index.js';

export interface StartOptions {
  config?: LookoutConfig;
  sources?: ConfigSources;
  extraPlugins?: readonly PluginDefinition[];
  baseDir?: string;
  logger?: Logger;
}

export interface RunningLookout extends StartedServer {
  kernel: Kernel;
  stop(): Promise<void>;
}

/** Loads config (unless given), initialises every enabled plugin and listens. */
export async function startLookout(opts: StartOptions = {}): Promise<RunningLookout> {
  const config = opts.config ?? loadConfig(opts.sources ?? {});
  const kernel = new Kernel({
    config,
    firstParty: firstPartyPlugins,
    extraPlugins: opts.extraPlugins,
    baseDir: opts.baseDir,
    logger: opts.logger,
  });
  try {
    await kernel.init();
  } catch (e) {
    await kernel.stop().catch(() => undefined);
    throw e;
  }
  const started = await kernel.listen();
  return { ...started, kernel, stop: () => kernel.stop() };
}
