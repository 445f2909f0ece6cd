/**
 * importUserModule (src/runner/user-module.ts), what `--runner FILE` and `--tools FILE` load with.
 * Here the tests run under tsx, so a .ts file loads as it is; the compiled path (plain Node, a .ts
 * file, the user's tsx or none) is covered from the installed package in test/package/pack.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { ErrorCode } from '../../src/errors.ts';
import { findTsx, importUserModule } from '../../src/runner/user-module.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { ROOT } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

test('user module - tsx is found from a project that has it, as its ESM API; not from one that has not', async () => {
  const tmp = tempDir('sessiond-user-module-');
  try {
    const found = findTsx([tmp.dir, ROOT]);
    assert.ok(found, 'tsx not found from the project root');
    assert.match(found, /tsx[\\/]dist[\\/]esm[\\/]api[\\/]index\.mjs$/);
    const api = (await import(pathToFileURL(found).href)) as { tsImport?: unknown };
    assert.type(api.tsImport, 'function');
    assert.is(findTsx([tmp.dir]), undefined);
  } finally {
    tmp.remove();
  }
});

test('user module - a JavaScript module is imported as it is; a missing one is an invalid_option naming it, with the hint', async () => {
  const tmp = tempDir('sessiond-user-module-');
  try {
    writeFileSync(tmp.file('runner.mjs'), 'export default async function runner() {}\nexport const marker = 42;\n');
    const mod = await importUserModule(tmp.file('runner.mjs'), 'runner module');
    assert.is(mod.marker, 42);
    assert.type(mod.default, 'function');
    const err = await expectCode(
      importUserModule(tmp.file('nope.mjs'), 'tools module', { hint: 'Pass a file that exists.' }),
      ErrorCode.InvalidOption,
      'Cannot load tools module',
    );
    assert.match(err.message, /nope\.mjs/);
    assert.match(err.message, /Pass a file that exists\.$/);
  } finally {
    tmp.remove();
  }
});

test.run();
