/**
 * scripts/check-imports.mjs: src/ has no import circle (type-only imports count) and imports
 * nothing from outside src/; a tree with a circle and an outside import fails, naming both.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const SCRIPT = join(ROOT, 'scripts', 'check-imports.mjs');

function check(dir?: string) {
  return spawnSync(process.execPath, [SCRIPT, ...(dir ? [dir] : [])], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
}

test('check-imports - src/ has no import circle and no import from outside it', () => {
  const r = check();
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^ok: \d+ files, no import circle, no import from outside the tree\n$/);
});

test('check-imports - a circle (one edge type-only) and an outside import fail, named', () => {
  const tmp = tempDir('sessiond-check-imports-');
  try {
    const src = join(tmp.dir, 'src');
    mkdirSync(join(src, 'sub'), { recursive: true });
    writeFileSync(join(tmp.dir, 'outside.ts'), 'export const outside = 1;\n');
    writeFileSync(join(src, 'a.ts'), "import { b } from './sub/b.ts';\nexport const a = b + 1;\n");
    writeFileSync(join(src, 'sub', 'b.ts'), "import type { C } from '../c.ts';\nexport const b: C = 2;\n");
    writeFileSync(join(src, 'c.ts'), "export type { A } from './a.ts';\nexport type C = number;\n");
    writeFileSync(
      join(src, 'leaf.ts'),
      "import { outside } from '../outside.ts';\nimport { readFileSync } from 'node:fs';\nexport const leaf = [outside, readFileSync];\n",
    );
    writeFileSync(join(src, 'ok.ts'), "import { leaf } from './leaf.ts';\nexport const ok = leaf;\n");
    const r = check(src);
    assert.is(r.status, 1, r.stdout + r.stderr);
    assert.is(r.stdout, '');
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines, [
      `import circle: a.ts -> ${join('sub', 'b.ts')} -> c.ts -> a.ts`,
      'import from outside the tree: leaf.ts imports ../outside.ts',
      '2 import problems in 5 files',
    ]);
  } finally {
    tmp.remove();
  }
});

test('check-imports - a file importing itself is a circle', () => {
  const tmp = tempDir('sessiond-check-imports-');
  try {
    writeFileSync(join(tmp.dir, 'self.ts'), "export * from './self.ts';\n");
    const r = check(tmp.dir);
    assert.is(r.status, 1);
    assert.match(r.stderr, 'import circle: self.ts -> self.ts');
  } finally {
    tmp.remove();
  }
});

test.run();
