#!/usr/bin/env node
// The `lookout` command: runs the built CLI (npm start builds it when needed).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'cli.js');
if (!existsSync(cli)) {
  process.stderr.write('lookout: not built yet; run `npm run build` (npm start does it for you)\n');
  process.exit(1);
}
const { main } = await import(cli);
process.exit(await main(process.argv.slice(2)));
