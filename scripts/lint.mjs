// Project rules tsc does not check. Exit 1 with one line per violation.
// - no `any` in kernel/, plugins/, backends/ (types are exact across module boundaries)
// - no `new RegExp(` / `RegExp(` outside test/ and scripts/: user patterns must run on RE2
//   (kernel/matchers.ts); a constant pattern may opt out with `lint-allow-regexp` on the line
// - no console.* in server code: use the kernel logger
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const dirs = ['kernel', 'plugins', 'backends'];
const problems = [];
function walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== 'generated') walk(p);
    } else if (/\.(ts|mts)$/.test(e.name) && !e.name.endsWith('.d.ts')) check(p);
  }
}
function check(file) {
  const lines = readFileSync(file, 'utf8').split('\n');
  lines.forEach((line, i) => {
    const where = `${relative(root, file)}:${i + 1}`;
    // Block-comment lines and line comments are prose, not code.
    if (/^\s*(\*|\/\*)/.test(line)) return;
    const code = line.replace(/\/\/.*$/, '');
    if (/(:\s*any\b|\bas any\b|<any>)/.test(code)) problems.push(`${where}: 'any' type`);
    if (/\bRegExp\s*\(/.test(code) && !line.includes('lint-allow-regexp'))
      problems.push(`${where}: RegExp constructor (use RE2 from kernel/matchers.ts)`);
    if (/\bconsole\.(log|info|warn|error|debug)\(/.test(code)) problems.push(`${where}: console.* (use the logger)`);
  });
}
for (const d of dirs) walk(join(root, d));
if (problems.length) {
  process.stdout.write(problems.join('\n') + `\n${problems.length} problem(s)\n`);
  process.exit(1);
}
process.stdout.write('lint: ok\n');
