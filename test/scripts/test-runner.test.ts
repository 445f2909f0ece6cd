/**
 * The README's test command (`npm test` = scripts/test.mjs): a test file that crashes on import is
 * counted as failed and the run goes on, so the closing line counts everything that ran (it used to
 * read `0 passed, 1 failed` after a crash, whatever had passed).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { ROOT } from '../support/cli.ts';

/** `npm test` (scripts/test.mjs) with `args`, on the fixture suite `dir` (under scripts/fixtures). */
const runTests = (dir: string, ...args: string[]) =>
  spawnSync(process.execPath, ['scripts/test.mjs', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, SESSIOND_TEST_DIR: `scripts/fixtures/${dir}` },
  });

test('test runner - a crashing file is counted as failed, the files after it still run, the closing line counts them all', () => {
  const r = runTests('crashing-suite');
  const lines = r.stdout.trim().split('\n');
  assert.is(lines.at(-1), '2 passed, 2 failed', r.stdout + r.stderr);
  assert.match(r.stdout, 'crashed (counted as failed, the run went on): b.test.ts');
  assert.is(r.status, 1);
});

test('test runner - a pattern with alternatives runs only the test files it names, never a helper beside them', () => {
  const r = runTests('crashing-suite', 'a|c');
  assert.is(r.stdout.trim().split('\n').at(-1), '2 passed, 1 failed', r.stdout + r.stderr); // c has a failing test
  assert.match(r.stdout, '(2 files,');
  assert.not.match(r.stdout, 'a-helper.ts');
});

test('test runner - a failure whose error has object details (a SessiondError) is printed, and the tests after it run', () => {
  const r = runTests('details-suite');
  assert.is(r.stdout.trim().split('\n').at(-1), '1 passed, 1 failed', r.stdout + r.stderr);
  assert.match(r.stdout, 'FAIL  "throws an error whose details are an object"');
  assert.match(r.stdout, 'the message a developer needs to see');
  assert.match(r.stdout, '(1 / 2)', 'the test after it ran');
});

test.run();
