import { createMemoryBackend } from '../../backends/memory/index.js';
import { storageConformance } from './conformance.js';

storageConformance('memory', () => ({
  persistent: false,
  open: async () => createMemoryBackend(),
  cleanup: async () => undefined,
}));
