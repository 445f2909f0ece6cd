/**
 * Who did it, from the command line (real processes): `sessiond cancel --pending` records `--by`
 * (default user@host) as the actor of its `input.dropped`; an empty one is refused.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostname, userInfo } from 'node:os';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { SqliteEventLog } from '../../src/storage/sqlite-event-log.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
test.after(() => tmp.remove());

async function dropsOf(db: string, sessionId: string): Promise<unknown[]> {
  const d = openDatabase(db, { readonly: true });
  try {
    const events = await new SqliteEventLog(d).readSession(sessionId);
    return events.filter((e) => e.type === 'input.dropped').map((e) => (e.payload as { actor?: string }).actor);
  } finally {
    d.close();
  }
}

test('cli actor - cancel --pending records --by, or user@host without it; a bad --by is refused', async () => {
  const db = tmp.file('actor.db');
  for (const id of ['ses_a1', 'ses_a2']) assert.is((await runCli(['prompt', id, 'later', '--no-wake', '--db', db])).code, 0);
  const by = await runCli(['cancel', 'ses_a1', '--pending', '--by', 'ops@example.com', '--db', db]);
  assert.is(by.code, 0, by.stderr);
  assert.equal(await dropsOf(db, 'ses_a1'), ['ops@example.com']);
  const me = await runCli(['cancel', 'ses_a2', '--pending', '--db', db]);
  assert.is(me.code, 0, me.stderr);
  assert.equal(await dropsOf(db, 'ses_a2'), [`${userInfo().username}@${hostname()}`]);
  assert.is((await runCli(['prompt', 'ses_a2', 'again', '--no-wake', '--db', db])).code, 0);
  const bad = await runCli(['cancel', 'ses_a2', '--pending', '--by', '', '--db', db]);
  assert.is.not(bad.code, 0);
  assert.match(bad.stderr, 'Invalid actor');
});

test.run();
