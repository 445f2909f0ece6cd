/**
 * `sessiond status` without a session on a SQLite file, as a real subprocess: a page of the newest
 * sessions (20 unless --limit), each one's whole status, then how to get the next page; read-only,
 * and right when the projection lags the log (sessions admitted while no worker ran).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { logSessions } from '../../src/sessions/log-sessions.ts';
import { catchUpProjection } from '../../src/projector/catch-up.ts';
import { systemClock, type Clock } from '../../src/clock.ts';
import type { SessionStatus } from '../../src/sessions/sessions.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const shown = (out: string) => out.split('\n').flatMap((l) => /^(ses_\S+): \w+ at seq \d+/.exec(l)?.[1] ?? []);
const moreOf = (out: string) => /^more: sessiond status \.\.\. --after (\S+) {3}\(one line per session: sessiond ls\)$/m.exec(out)?.[1];

test('cli status (db) - without a session: the 20 newest, each in full, a cursor to the rest; sessions the projection has not folded yet come first; read-only', async () => {
  const tmp = tempDir();
  const file = tmp.file('page.db');
  const db = openDatabase(file);
  migrate(db);
  const log = new SqliteEventLog(db);
  let time = Date.UTC(2026, 11, 1);
  const clock: Clock = { now: () => (time += 1000), setTimeout: systemClock.setTimeout, clearTimeout: systemClock.clearTimeout };
  const sessions = logSessions(log, { clock });
  const id = (i: number) => `ses_p${String(i).padStart(2, '0')}`;
  for (let i = 0; i < 25; i++) await sessions.admit(id(i), { prompt: `prompt ${i}`, wake: false });
  await catchUpProjection(db, log); // what a worker's projector did for these
  for (let i = 25; i < 28; i++) await sessions.admit(id(i), { prompt: `prompt ${i}`, wake: false }); // and not for these
  await log.close();
  db.close();
  const bytes = readFileSync(file);
  const newest = Array.from({ length: 28 }, (_, i) => id(27 - i));

  const first = await runCli(['status', '--db', file]);
  assert.is(first.code, 0, first.stderr);
  assert.is(first.stderr, '');
  assert.equal(shown(first.stdout), newest.slice(0, 20), 'the 20 newest, newest first, the 3 not projected yet among them');
  assert.match(first.stdout, /ses_p27: idle at seq 1; no owner\n {2}pending inputs: 1 \(\d+ bytes\): inp_\w+ \(queue\)\n/);
  const cursor = moreOf(first.stdout);
  assert.ok(cursor, first.stdout);
  const rest = await runCli(['status', '--db', file, '--after', cursor!]);
  assert.is(rest.code, 0, rest.stderr);
  assert.equal(shown(rest.stdout), newest.slice(20));
  assert.is(moreOf(rest.stdout), undefined, 'the last page says no more');

  const json = await runCli(['status', '--db', file, '--limit', '2', '--json']);
  const page = JSON.parse(json.stdout) as { sessions: SessionStatus[]; next: string | null };
  assert.equal(
    page.sessions.map((s) => [s.sessionId, s.state, s.pendingCount]),
    [
      [id(27), 'idle', 1],
      [id(26), 'idle', 1],
    ],
  );
  const after = JSON.parse((await runCli(['status', '--db', file, '--limit', '2', '--after', page.next!, '--json'])).stdout) as { sessions: SessionStatus[] };
  assert.equal(
    after.sessions.map((s) => s.sessionId),
    [id(25), id(24)],
    'the page after a cursor crosses from the sessions not projected to the projected ones',
  );
  assert.ok(readFileSync(file).equals(bytes), 'status never writes the file (the projection is not caught up by it)');

  const named = await runCli(['status', id(3), '--db', file, '--limit', '2']);
  assert.is(named.code, 2, named.stderr);
  assert.match(named.stderr, `--limit and --after page through sessions when no session is named: drop them to see ${id(3)}, or drop ${id(3)} to page.`);
  const tooMany = await runCli(['status', '--db', file, '--limit', '5000']);
  assert.is(tooMany.code, 2);
  assert.match(tooMany.stderr, '--limit must be at most 1000 (got 5000): page through the rest with --after.');
  const badCursor = await runCli(['status', '--db', file, '--after', 'xyz']);
  assert.is(badCursor.code, 2);
  assert.match(badCursor.stderr, 'is not a cursor');

  const empty = tmp.file('empty.db');
  const e = openDatabase(empty);
  migrate(e);
  e.close();
  const none = await runCli(['status', '--db', empty]);
  assert.is(none.code, 0, none.stderr);
  assert.is(none.stdout, `no sessions in ${empty}\n`);
  assert.equal(JSON.parse((await runCli(['status', '--db', empty, '--json'])).stdout), { sessions: [], next: null });
  tmp.remove();
});

test.run();
