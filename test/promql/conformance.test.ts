/**
 * Runs every PromQL conformance script in ../shared/conformance/promql against the engine (fresh
 * memory backend per file, delayed name removal on, as upstream). A failing case must be listed
 * in known-failures.json with its reason; a listed case that now passes is reported so the list
 * only shrinks.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTestFile } from './promqltest.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const dir = resolve(repo, '..', 'shared', 'conformance', 'promql');
const known: Record<string, string> = JSON.parse(readFileSync(join(here, 'known-failures.json'), 'utf8'));

if (!existsSync(dir)) {
  console.log(`SKIP: conformance scripts not found at ${dir}`);
  test.skip('promql conformance', () => {});
} else {
  test('promql conformance scripts', async () => {
    const unexpected: string[] = [];
    const nowPassing: string[] = [];
    let total = 0;
    let passed = 0;
    for (const f of readdirSync(dir).filter((x) => x.endsWith('.test')).sort()) {
      const res = await runTestFile(f, readFileSync(join(dir, f), 'utf8'));
      const ok = res.filter((r) => r.ok).length;
      total += res.length;
      passed += ok;
      console.log(`${f}: ${ok}/${res.length} passed`);
      for (const r of res) {
        const key = `${f}:${r.line}`;
        if (!r.ok && !(key in known)) unexpected.push(`${key} ${r.query}\n    ${r.error}`);
        if (r.ok && key in known) nowPassing.push(key);
      }
    }
    console.log(`total: ${passed}/${total} passed, ${Object.keys(known).length} known failures`);
    if (nowPassing.length) console.log(`known failures that now pass (remove them from known-failures.json):\n  ${nowPassing.join('\n  ')}`);
    assert.is(unexpected.length, 0, `unexpected failures:\n${unexpected.join('\n')}`);
  });
}

test.run();
