/**
 * A read of a session after the sequence this connection last committed for it is answered without
 * a query (SqliteEventLog's `tails`), and only while no other connection has committed since: what
 * another process, or another log on the same connection, appended in between is always read.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SqliteEventLog } from '../../../src/storage/sqlite/sqlite-event-log.ts';
import { draft, ev } from '../../../src/testing/fixtures.ts';
import { logFile } from '../../support/log-files.ts';

const admitted = (n: number) => draft(ev('input.admitted', { inputId: `inp_t${n}`, prompt: `p${n}` }));

test('known tail - a read after our own last commit needs no query, and nothing is missed', async () => {
  const file = logFile();
  const a = file.open();
  await a.log.append('ses_t', 0, [admitted(1), admitted(2)]);
  assert.equal(await a.log.readSession('ses_t', { afterSeq: 2 }), []);
  assert.is(a.log.stats.knownTail, 1);
  assert.is((await a.log.readSession('ses_t', { afterSeq: 1 })).length, 1, 'a read from an older sequence queries');
  assert.is((await a.log.readSession('ses_t')).length, 2);
  assert.is(a.log.stats.knownTail, 1);
  await file.close();
});

test("known tail - another process's commit to the session is read", async () => {
  const file = logFile();
  const a = file.open();
  const b = file.open();
  await a.log.append('ses_t', 0, [admitted(1)]);
  await b.log.append('ses_t', 1, [admitted(2)]);
  const after = await a.log.readSession('ses_t', { afterSeq: 1 });
  assert.equal(
    after.map((e) => e.seq),
    [2],
  );
  // and a commit of another connection to some other session also ends the shortcut (it cannot tell which)
  await a.log.append('ses_t', 2, [admitted(3)]);
  await b.log.append('ses_other', 0, [admitted(4)]);
  assert.equal(await a.log.readSession('ses_t', { afterSeq: 3 }), []);
  assert.is(a.log.stats.knownTail, 0);
  await file.close();
});

test('known tail - another log on the same connection (which leaves data_version alone) is seen', async () => {
  const file = logFile();
  const a = file.open();
  const second = new SqliteEventLog(a.db);
  await a.log.append('ses_t', 0, [admitted(1)]);
  await second.append('ses_t', 1, [admitted(2)]);
  assert.equal(
    (await a.log.readSession('ses_t', { afterSeq: 1 })).map((e) => e.seq),
    [2],
  );
  await second.close();
  await file.close();
});

test('known tail - a failed append leaves the tail where the last commit put it', async () => {
  const file = logFile();
  const a = file.open();
  const b = file.open();
  await a.log.append('ses_t', 0, [admitted(1)]);
  await b.log.append('ses_t', 1, [admitted(2)]);
  await a.log.append('ses_t', 1, [admitted(3)]).then(
    () => assert.unreachable('the append at a stale sequence conflicts'),
    (err: Error) => assert.match(err.message, /expected|sequence/i),
  );
  assert.equal(
    (await a.log.readSession('ses_t', { afterSeq: 1 })).map((e) => e.seq),
    [2],
  );
  await file.close();
});

test.run();
