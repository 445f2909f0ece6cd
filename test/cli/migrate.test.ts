import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { LATEST_SCHEMA_VERSION } from '../../src/storage/sqlite/migrations/index.ts';

test('cli migrate - creates the schema and prints the version, then is a no-op', async () => {
  const tmp = tempDir();
  const db = tmp.file('nested/x.db');
  const first = await runCli(['migrate', '--db', db]);
  assert.is(first.code, 0, first.stderr);
  assert.match(first.stdout, `upgraded from version 0 to ${LATEST_SCHEMA_VERSION}`);
  const second = await runCli(['migrate', '--db', db]);
  assert.is(second.code, 0);
  assert.match(second.stdout, `schema is at version ${LATEST_SCHEMA_VERSION}, nothing to do`);
  tmp.remove();
});

test('cli migrate - bad arguments print usage and exit 2', async () => {
  const bad = await runCli(['migrate', '--nope']);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, "unknown option '--nope'");
  assert.match(bad.stderr, 'Usage: sessiond migrate');
  const none = await runCli([]);
  assert.is(none.code, 2);
  assert.match(none.stderr, 'Usage: sessiond');
  const unknown = await runCli(['frobnicate']);
  assert.is(unknown.code, 2);
});

test.run();
