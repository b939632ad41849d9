// Runs every test/**/*.test.ts file in its own Node process (uvu suites, TypeScript via tsx),
// two at a time, and ends with the line `N passed, N failed, N skipped`.
// Usage: node test/run.mjs [path-substring ...]
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2);
const FILE_TIMEOUT_MS = Number(process.env.LOOKOUT_TEST_FILE_TIMEOUT_MS ?? 15 * 60_000);
const CONCURRENCY = Number(process.env.LOOKOUT_TEST_CONCURRENCY ?? 2);

function find(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== 'fixtures') out.push(...find(p));
    } else if (e.name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const files = find(join(root, 'test'))
  .map((f) => relative(root, f))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, '');
let passed = 0, failed = 0, skipped = 0;
const failedFiles = [];

function runFile(file) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: root,
      env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => {
      out += `\n[runner] ${file} exceeded ${FILE_TIMEOUT_MS} ms; killed\n`;
      child.kill('SIGKILL');
    }, FILE_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      const text = strip(out);
      const num = (label) => {
        let n = 0;
        for (const m of text.matchAll(new RegExp(`^\\s*${label}:\\s+(\\d+)`, 'gm'))) n += Number(m[1]);
        return n;
      };
      const total = num('Total'), ok = num('Passed'), skip = num('Skipped');
      let bad = Math.max(0, total - ok - skip);
      if (code !== 0 && bad === 0) bad = 1; // crashed or failed outside a test
      passed += ok; failed += bad; skipped += skip;
      if (bad > 0) failedFiles.push(file);
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`\n=== ${file} (${secs}s): ${ok} passed, ${bad} failed, ${skip} skipped\n`);
      if (bad > 0 || process.env.LOOKOUT_TEST_VERBOSE) process.stdout.write(text.trimEnd() + '\n');
      else {
        // Always show skip reasons so a skipped suite says why.
        for (const line of text.split('\n')) if (/\bSKIP\b/.test(line)) process.stdout.write(line + '\n');
      }
      resolve();
    });
  });
}

const queue = [...files];
await Promise.all(
  Array.from({ length: Math.min(CONCURRENCY, queue.length) }, async () => {
    while (queue.length) await runFile(queue.shift());
  }),
);
if (failedFiles.length) process.stdout.write(`\nFailed files:\n${failedFiles.map((f) => '  ' + f).join('\n')}\n`);
process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
process.exit(failed > 0 ? 1 : 0);
