/** First-party storage backends and archive sources. Each is a plugin. */
import type { PluginDefinition } from '../kernel/plugin.js';
import memory from './memory/index.js';
import embedded from './embedded/index.js';

export const backendPlugins: PluginDefinition[] = [memory, embedded];
