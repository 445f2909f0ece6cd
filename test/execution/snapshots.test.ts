/**
 * Stored session snapshots: a cold load starts from the latest snapshot and folds only the events
 * after it, and gets the same state as a fold of the whole log; a snapshot of another machine
 * version, or one the log does not back, is ignored.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { SqliteSnapshotStore } from '../../src/storage/sqlite/sqlite-snapshot-store.ts';
import { CommandHandler } from '../../src/execution/command-handler.ts';
import { admitInput } from '../../src/input/admit.ts';
import { hydrate } from '../../src/machines/decider.ts';
import { ManualClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';
import { tempDir } from '../support/tmp.ts';
import { spyLog } from '../support/spy-log.ts';

function world() {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('snap.db'));
  migrate(db);
  const inner = new SqliteEventLog(db);
  const folded: number[] = [];
  const log = spyLog(inner, {
    afterRead: (events) => {
      folded.push(events.length);
    },
  });
  const clock = new ManualClock(1_000);
  const store = new SqliteSnapshotStore(db, clock);
  return {
    tmp,
    db,
    log,
    store,
    clock,
    folded,
    handler: (every = 10) => new CommandHandler(log, clock, sequentialIds(), { snapshots: store, snapshotEvery: every }),
  };
}

test('snapshots - a cold load folds only the events after the latest snapshot, and equals a fold of the whole log', async () => {
  const w = world();
  const writer = w.handler(10);
  for (let i = 0; i < 35; i++) await admitInput(writer, 'ses_s', { id: `inp_${i}`, prompt: `p${i}`, wake: false });
  const stored = (await w.store.get('ses_s'))!;
  assert.is(stored.context.seq, 30, 'stored every 10 events');
  w.folded.length = 0;
  const cold = await w.handler().load('ses_s');
  assert.equal(w.folded, [1, 5], 'the first event (the owner the snapshot names is checked), then only the 5 events after the snapshot');
  const full = hydrate('ses_s', await w.log.readSession('ses_s'));
  assert.equal(JSON.parse(JSON.stringify(cold)), JSON.parse(JSON.stringify(full)), 'the same state as folding everything');
  assert.is(cold.context.pending.length, 35);
  await w.log.close();
  w.db.close();
  w.tmp.remove();
});

test('snapshots - one of another machine version, or ahead of the log, is ignored and the log is folded from the start', async () => {
  const w = world();
  const writer = w.handler(5);
  for (let i = 0; i < 7; i++) await admitInput(writer, 'ses_v', { id: `inp_${i}`, prompt: `p${i}`, wake: false });
  assert.equal(await new SqliteSnapshotStore(w.db, w.clock, 'another-machine').get('ses_v'), undefined, 'another version finds nothing');
  // a snapshot that claims more than the log holds (the log was replaced): not trusted
  const stored = (await w.store.get('ses_v'))!;
  await w.store.put({ ...stored, context: { ...stored.context, seq: 99 } });
  w.folded.length = 0;
  const cold = await w.handler().load('ses_v');
  assert.equal(w.folded, [7], 'folded the whole log');
  assert.is(cold.context.seq, 7);
  await w.log.close();
  w.db.close();
  w.tmp.remove();
});

test.run();
