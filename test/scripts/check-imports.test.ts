/**
 * scripts/check-imports.mjs: src/ has no import circle (type-only imports count), imports
 * nothing from outside src/ and crosses folders only as docs/architecture.md's layout table allows;
 * a tree with a circle and an outside import fails, naming both; an import the table does not allow
 * and a folder without a row fail, named.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/cli.ts';
// @ts-expect-error: a plain .mjs script without types
import { checkLayers, importGraph, parseLayers } from '../../scripts/check-imports.mjs';
import { tempDir } from '../support/tmp.ts';

const SCRIPT = join(ROOT, 'scripts', 'check-imports.mjs');

function check(dir?: string) {
  return spawnSync(process.execPath, [SCRIPT, ...(dir ? [dir] : [])], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
}

test('check-imports - src/ has no import circle and no import from outside it', () => {
  const r = check();
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^ok: \d+ files, no import circle, no import from outside the tree, every import between folders allowed by the layout table\n$/);
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

test('check-imports - the layout table: an import it does not allow and a folder it has no row for fail, named', () => {
  const tmp = tempDir('sessiond-check-imports-');
  try {
    for (const d of ['events', 'machines', 'cli', 'extra']) mkdirSync(join(tmp.dir, d));
    writeFileSync(join(tmp.dir, 'errors.ts'), 'export const e = 1;\n');
    writeFileSync(join(tmp.dir, 'events', 'catalog.ts'), "import { e } from '../errors.ts';\nexport const c = e;\n");
    // the pure core reaching outward
    writeFileSync(
      join(tmp.dir, 'machines', 'machine.ts'),
      "import { c } from '../events/catalog.ts';\nimport { run } from '../cli/main.ts';\nexport const m = c + run;\n",
    );
    writeFileSync(join(tmp.dir, 'cli', 'main.ts'), "import { c } from '../events/catalog.ts';\nexport const run = c;\n");
    writeFileSync(join(tmp.dir, 'extra', 'x.ts'), "import { c } from '../events/catalog.ts';\nexport const x = c;\n");
    const table = [
      '| folder | what | may import |',
      '| --- | --- | --- |',
      '| `src/events` | events | nothing |',
      '| `src/machines` | machine | `events` |',
      '| `src/cli` | cli | anything |',
      '',
    ].join('\n');
    const layers = parseLayers(table);
    const lines: string[] = checkLayers(importGraph(tmp.dir).graph, layers);
    assert.equal(lines.sort(), [
      'import across layers: machines/machine.ts imports cli/main.ts (src/machines may not import src/cli; see the layout table of docs/architecture.md)',
      'no row for src/extra in the layout table of docs/architecture.md: add one saying what it may import',
    ]);
  } finally {
    tmp.remove();
  }
});

test('check-imports - docs/architecture.md has a row for every folder of src/, and src/machines imports only src/events', () => {
  const layers = parseLayers(readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8'));
  const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name);
  for (const f of folders) assert.ok(layers.has(f), `a row for src/${f}`);
  assert.equal([...layers.get('machines')], ['events']);
  assert.equal([...layers.get('events')], []);
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
