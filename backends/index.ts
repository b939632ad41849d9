/** First-party storage backends and archive sources. Each is a plugin. */
import type { PluginDefinition } from '../kernel/plugin.js';
import memory from './memory/index.js';
import embedded from './embedded/index.js';
import elasticsearch from './elasticsearch/index.js';
import archiveFs from './archive-fs/index.js';
import archiveS3 from './archive-s3/index.js';

export const backendPlugins: PluginDefinition[] = [memory, embedded, elasticsearch, archiveFs, archiveS3];
