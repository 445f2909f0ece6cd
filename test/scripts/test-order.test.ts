/**
 * scripts/test-order.mjs: `npm test` runs its longest files first, by this machine's last runs, else
 * by the durations committed in test/durations.json (a fresh clone has no runs of its own); a partial
 * run updates the files it ran and keeps the others' durations.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
// @ts-expect-error: a plain .mjs script without types
import { inProcess, mergeDurations, orderJobs, readDurations } from '../../scripts/test-order.mjs';

test('test order - longest first: measured here over committed, unmeasured last (or as estimated)', () => {
  const measured = new Map([['a.test.ts', 1_000]]);
  const committed = new Map([
    ['a.test.ts', 90_000],
    ['b.test.ts', 30_000],
  ]);
  assert.equal(orderJobs(['c.test.ts', 'a.test.ts', 'b.test.ts'], measured, committed), ['b.test.ts', 'a.test.ts', 'c.test.ts']);
  assert.equal(
    orderJobs(['c.test.ts', 'clients/go'], new Map(), new Map(), (job: string) => (job === 'clients/go' ? 120_000 : 0)),
    ['clients/go', 'c.test.ts'],
  );
});

test('test order - a partial run keeps the durations of the files it did not run', () => {
  const earlier = new Map([
    ['a.test.ts', 5_000],
    ['b.test.ts', 7_000],
  ]);
  assert.equal(mergeDurations(earlier, [{ file: 'a.test.ts', ms: 9_000 }]), [
    { file: 'a.test.ts', ms: 9_000 },
    { file: 'b.test.ts', ms: 7_000 },
  ]);
});

test('test order - a missing or unreadable durations file reads as none', () => {
  const tmp = tempDir();
  try {
    assert.is(readDurations(join(tmp.dir, 'missing.json')).size, 0);
    writeFileSync(join(tmp.dir, 'bad.json'), '{ not json');
    assert.is(readDurations(join(tmp.dir, 'bad.json')).size, 0);
  } finally {
    tmp.remove();
  }
});

test('test order - test/durations.json names test files that exist, and most of them', () => {
  const committed: Map<string, number> = readDurations(join(ROOT, 'test', 'durations.json'));
  const files: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const name of readdirSync(dir)) {
      if (name === 'fixtures' || name === 'support') continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path, `${rel}${name}/`);
      else if (name.endsWith('.test.ts')) files.push(`${rel}${name}`);
    }
  };
  walk(join(ROOT, 'test'), '');
  const known = files.filter((f) => committed.has(f));
  assert.ok(known.length >= files.length * 0.8, `test/durations.json knows ${known.length} of ${files.length} test files: refresh it (docs/testing.md)`);
  for (const f of committed.keys()) if (!f.startsWith('clients/')) assert.ok(files.includes(f), `test/durations.json names ${f}, which is not a test file`);
  assert.ok(JSON.parse(readFileSync(join(ROOT, 'test', 'durations.json'), 'utf8')).length > 0);
});

test('test order - in-process files: none that starts a process or thread itself or through a test helper', () => {
  const tmp = tempDir();
  const put = (path: string, text: string) => {
    mkdirSync(join(tmp.dir, path, '..'), { recursive: true });
    writeFileSync(join(tmp.dir, path), text);
  };
  try {
    put('test/support/spawns.ts', "import { spawn } from 'node:child_process';\nexport const go = spawn;\n");
    put('test/support/calm.ts', "import { a } from './loop.ts';\nexport const calm = a;\n");
    put('test/support/loop.ts', "import { calm } from './calm.ts';\nexport const a = 1;\n");
    put('src/spawns-in-src.ts', "import { fork } from 'node:child_process';\n");
    put('src/testing/world.ts', "import { Worker } from 'node:worker_threads';\n");
    put('test/x/through-helper.test.ts', "import { calm } from '../support/calm.ts';\nimport { go } from '../support/spawns.ts';\n");
    put('test/x/direct.test.ts', "import { execFile } from 'child_process';\n");
    put('test/x/browser.test.ts', "import { chromium } from 'playwright-core';\n");
    put('test/x/world.test.ts', "import { w } from '../../src/testing/world.ts';\n");
    put('test/x/pure.test.ts', "import { calm } from '../support/calm.ts';\nimport { x } from '../../src/spawns-in-src.ts';\nimport { test } from 'uvu';\n");
    const at = (f: string) => inProcess(`test/x/${f}`, tmp.dir);
    assert.equal(
      ['through-helper', 'direct', 'browser', 'world', 'pure'].map((f) => at(`${f}.test.ts`)),
      [false, false, false, false, true],
      'a helper that spawns (followed through test/ and src/testing/, cycles included) marks the file; a module of src/ is not followed',
    );
  } finally {
    tmp.remove();
  }
});

test('test order - this suite: the cluster, CLI and client-world files are not in-process; the model walk is', () => {
  const at = (f: string) => inProcess(join('test', f), ROOT);
  assert.ok(at('machines/session-model.test.ts'));
  for (const f of ['cli/waits.test.ts', 'cluster/failover.test.ts', 'nats/cli.test.ts', 'inspector/browser.test.ts', 'runner/mcp.test.ts'])
    assert.not.ok(at(f), f);
});

test.run();
