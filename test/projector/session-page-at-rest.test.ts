/**
 * sessionPageAtRest: a page of session ids from a read-only database costs the page and the
 * projection's lag, never the whole log; and it is the page `list` gives once the projection is up
 * to date.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { logSessions } from '../../src/sessions/log-sessions.ts';
import { catchUpProjection } from '../../src/projector/catch-up.ts';
import { listSessionPage } from '../../src/projector/session-list.ts';
import { sessionPageAtRest } from '../../src/projector/session-page-at-rest.ts';
import { checkListFilter, decodeCursor } from '../../src/sessions/list.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import { systemClock, type Clock } from '../../src/clock.ts';
import { tempDir } from '../support/tmp.ts';

/** The log, counting the events its pages hand out. */
function counted(log: EventLog): { log: EventLog; read: () => number } {
  let read = 0;
  const wrapped = Object.create(log) as EventLog;
  wrapped.readPages = async function* (options) {
    for await (const page of log.readPages(options)) {
      read += page.length;
      yield page;
    }
  };
  return { log: wrapped, read: () => read };
}

test('session page at rest - reads only the log past the projection checkpoint, and pages as list does', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('p.db'));
  migrate(db);
  const log = new SqliteEventLog(db);
  let time = Date.UTC(2026, 0, 1);
  const clock: Clock = { now: () => (time += 10), setTimeout: systemClock.setTimeout, clearTimeout: systemClock.clearTimeout };
  const sessions = logSessions(log, { clock });
  for (let i = 0; i < 300; i++) await sessions.admit(`ses_${i}`, { prompt: 'x', wake: false });
  await sessions.tag('ses_7', { a: 'b' }); // events of old sessions past the checkpoint
  await catchUpProjection(db, log);
  await sessions.tag('ses_8', { a: 'b' });
  await sessions.admit('ses_new', { prompt: 'y', wake: false });

  const { log: spy, read } = counted(log);
  const page = await sessionPageAtRest(db, spy, { limit: 5 });
  assert.equal(page.ids, ['ses_new', 'ses_299', 'ses_298', 'ses_297', 'ses_296']);
  assert.is(read(), 2, 'the two events past the checkpoint, not the 302 before it');

  await catchUpProjection(db, log);
  let after: string | null = null;
  for (let n = 0; n < 70; n++) {
    const filter = checkListFilter({ limit: 5, ...(after ? { after } : {}) });
    const listed = listSessionPage(db, filter);
    const atRest = await sessionPageAtRest(db, log, { limit: 5, ...(after ? { after: decodeCursor(after) } : {}) });
    assert.equal(atRest, { ids: listed.sessions.map((s) => s.sessionId), next: listed.next }, `page ${n}`);
    after = listed.next;
    if (!after) break;
  }
  assert.is(after, null, 'paged to the end');
  await log.close();
  db.close();
  tmp.remove();
});

test('session page at rest - a database from before the session list (no session table) is read from the log', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('old.db'));
  migrate(db);
  const log = new SqliteEventLog(db);
  const sessions = logSessions(log);
  await sessions.admit('ses_a', { prompt: 'x', wake: false });
  db.exec('DROP TABLE session');
  assert.equal((await sessionPageAtRest(db, log, { limit: 5 })).ids, ['ses_a']);
  await log.close();
  db.close();
  tmp.remove();
});

test.run();
