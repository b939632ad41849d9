import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'kernel/index.ts', cli: 'kernel/cli.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  sourcemap: true,
  clean: true,
  dts: false,
  splitting: true,
  // Runtime dependencies stay external: users install them with npm.
  skipNodeModulesBundle: true,
});
