// `npm run bench -- <name> [args...]` runs scripts/bench/<name>.ts (TypeScript via tsx).
// Benchmarks print a human-readable table and a final JSON line with the figures.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const dir = join(root, 'scripts', 'bench');
const [name, ...rest] = process.argv.slice(2);
const available = readdirSync(dir).filter((f) => f.endsWith('.ts')).map((f) => f.slice(0, -3));
if (!name || !available.includes(name)) {
  process.stderr.write(`usage: npm run bench -- <name> [args]\navailable: ${available.join(', ') || '(none yet)'}\n`);
  process.exit(name ? 2 : 0);
}
const file = join(dir, `${name}.ts`);
if (!existsSync(file)) process.exit(2);
const r = spawnSync(process.execPath, ['--expose-gc', '--max-old-space-size=8192', '--import', 'tsx', file, ...rest], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
