/**
 * `npm run conformance:promql -- DIR`: runs every `.test` file in DIR (Prometheus' PromQL test
 * script format) and ends with `N passed, N failed`. `-v` prints every failing case.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runTestFile } from './promqltest.js';

const args = process.argv.slice(2);
const verbose = args.includes('-v');
const dir = args.find((a) => !a.startsWith('-'));
if (!dir) {
  console.error('usage: npm run conformance:promql -- DIR [-v]');
  process.exit(2);
}
let passed = 0;
let failed = 0;
for (const f of readdirSync(dir).filter((x) => x.endsWith('.test')).sort()) {
  const res = await runTestFile(f, readFileSync(join(dir, f), 'utf8'));
  const ok = res.filter((r) => r.ok).length;
  passed += ok;
  failed += res.length - ok;
  console.log(`${f}: ${ok}/${res.length}`);
  if (verbose) for (const r of res) if (!r.ok) console.log(`  ${f}:${r.line} ${r.query}\n    ${r.error}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
