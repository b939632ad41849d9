// Builds dist/ when it is missing or older than any source file (used by `npm start`).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { execSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const out = join(root, 'dist', 'cli.js');
function newest(dir) {
  let m = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    m = Math.max(m, e.isDirectory() ? newest(p) : /\.(ts|proto|json)$/.test(e.name) ? statSync(p).mtimeMs : 0);
  }
  return m;
}
const srcTime = Math.max(...['kernel', 'plugins', 'backends', 'proto'].filter((d) => existsSync(join(root, d))).map((d) => newest(join(root, d))));
if (!existsSync(out) || statSync(out).mtimeMs < srcTime) {
  process.stderr.write('lookout: building…\n');
  execSync('npx tsup', { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
}
