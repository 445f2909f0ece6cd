/**
 * `sessiond budget --tenant T` and `--tenants` on a SQLite file: set, show, list and clear a
 * tenant's budget in plain words and JSON; a command naming two things, or none, is a usage error
 * (exit 2), and a bad tenant name, value or file says what to give.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';

test('budget cli - a tenant budget set, shown, listed and cleared; usage errors say what to name', async () => {
  const tmp = tempDir();
  const db = tmp.file('t.db');
  const file = openDatabase(db);
  migrate(file);
  file.close();
  try {
    const none = await runCli(['budget', '--tenants', '--db', db]);
    assert.is(none.code, 0, none.stderr);
    assert.match(none.stdout, 'no tenant has a budget');
    const set = await runCli(['budget', '--tenant', 'acme', '--tokens', '1000', '--cost', '2.5', '--db', db]);
    assert.is(set.code, 0, set.stderr);
    assert.match(set.stdout, /^tenant acme \(budget set\): spent 0 of 1000 tokens, \$0 of \$2\.5 since \d{4}-/);
    const shown = await runCli(['budget', '--tenant', 'acme', '--json', '--db', db]);
    const json = JSON.parse(shown.stdout) as { tenant: string; budget: { tokens: number; costUsd: number }; changed: boolean };
    assert.equal([json.tenant, json.budget.tokens, json.budget.costUsd, json.changed], ['acme', 1000, 2.5, false]);
    await runCli(['budget', '--tenant', 'globex', '--tokens', '5', '--db', db]);
    const listed = await runCli(['budget', '--tenants', '--db', db]);
    assert.equal(
      listed.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(':')[0]),
      ['tenant acme', 'tenant globex'],
    );
    const cleared = await runCli(['budget', '--tenant', 'acme', '--clear', '--db', db]);
    assert.match(cleared.stdout, 'tenant acme: no budget (removed)');

    for (const [args, words] of [
      [['budget', '--db', db], 'Name one'],
      [['budget', 'ses_1', '--tenant', 'acme', '--db', db], 'Name one'],
      [['budget', '--tenants', '--tokens', '5', '--db', db], '--tenants only lists'],
    ] as const) {
      const r = await runCli([...args]);
      assert.is(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, words);
    }
    const badName = await runCli(['budget', '--tenant', 'a b', '--tokens', '1', '--db', db]);
    assert.ok(badName.code !== 0);
    assert.match(badName.stderr, 'Invalid owner "a b"');
    const badValue = await runCli(['budget', '--tenant', 'acme', '--tokens', '-3', '--db', db]);
    assert.is(badValue.code, 2, badValue.stderr);
    const missing = await runCli(['budget', '--tenant', 'acme', '--db', tmp.file('nope.db')]);
    assert.ok(missing.code !== 0);
    assert.match(missing.stderr, 'No database at');
  } finally {
    tmp.remove();
  }
});

test.run();
