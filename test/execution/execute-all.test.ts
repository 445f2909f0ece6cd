/**
 * Several commands as one decision (claim + start + promotion of a turn): decided in turn on the
 * state each leads to, appended at once; a refusal of any one writes nothing.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { CommandHandler } from '../../src/execution/command-handler.ts';
import { isRefusal } from '../../src/errors.ts';
import { admitInput } from '../../src/input/admit.ts';
import { ManualClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';
import { tempDir } from '../support/tmp.ts';
import { spyLog } from '../support/spy-log.ts';
import { systemClock } from '../../src/clock.ts';

test('executeAll - claim, start and promotion decided together are one append; a refusal of the last writes nothing', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('all.db'));
  migrate(db);
  const log = new SqliteEventLog(db);
  const handler = new CommandHandler(log, new ManualClock(1_000), sequentialIds());
  await admitInput(handler, 'ses_a', { id: 'inp_1', prompt: 'p', wake: false });
  const claim = (executionId: string) => [
    (now: number) => ({ type: 'claim' as const, now, ownerId: 'own_1', executionId, leaseMs: 30_000 }),
    (now: number) => ({ type: 'start' as const, now, ownerId: 'own_1', executionId }),
  ];
  const refused = await handler
    .executeAll('ses_a', [
      ...claim('exe_0'),
      (now) => ({
        type: 'record',
        now,
        ownerId: 'own_1',
        executionId: 'exe_0',
        events: [{ type: 'input.promoted', payload: { inputId: 'inp_nope', executionId: 'exe_0' } }],
      }),
    ])
    .then(
      () => undefined,
      (e) => e,
    );
  assert.ok(isRefusal(refused, 'not_pending'), `refused: ${String(refused)}`);
  assert.is(await log.lastSeq('ses_a'), 1, 'nothing of the claim was written');
  const groups = log.stats.groups;
  const { events, snapshot } = await handler.executeAll('ses_a', [
    ...claim('exe_1'),
    (now, started) => {
      assert.is(started.value, 'running', 'the last command is decided on the state the first two lead to');
      return {
        type: 'record',
        now,
        ownerId: 'own_1',
        executionId: 'exe_1',
        events: [{ type: 'input.promoted', payload: { inputId: 'inp_1', executionId: 'exe_1' } }],
      };
    },
  ]);
  assert.equal(
    events.map((e) => [e.type, e.seq]),
    [
      ['execution.claimed', 2],
      ['execution.started', 3],
      ['input.promoted', 4],
    ],
  );
  assert.is(log.stats.groups, groups + 1, 'one append');
  assert.is(snapshot.value, 'running');
  assert.equal(snapshot.context.pending, []);
  await log.close();
  db.close();
  tmp.remove();
});

test('a decision that loses the race to another process many times in a row still lands (another worker runs a turn on the session)', async () => {
  // Two connections to one file, as two whole workers: before each of this handler's first 30
  // appends, the other one admits an input to the same session, so each attempt conflicts. Eight
  // immediate retries were all it had: the admission failed with sequence_conflict.
  const tmp = tempDir();
  const open = () => {
    const db = openDatabase(tmp.file('race.db'));
    migrate(db);
    return { db, log: new SqliteEventLog(db) };
  };
  const here = open();
  const there = open();
  const other = new CommandHandler(there.log, systemClock, sequentialIds('other'));
  let raced = 0;
  const racing = spyLog(here.log, {
    beforeAppend: async () => {
      if (raced < 30) await admitInput(other, 'ses_race', { id: `inp_other_${raced++}`, prompt: 'p', wake: false });
    },
  });
  const handler = new CommandHandler(racing, systemClock, sequentialIds('here'));
  const receipt = await admitInput(handler, 'ses_race', { id: 'inp_here', prompt: 'mine', wake: false });
  assert.is(raced, 30, 'every one of the first 30 attempts lost its race');
  assert.is(receipt.admittedSeq, 31);
  const events = await there.log.readSession('ses_race');
  assert.equal(
    events.filter((e) => e.type === 'input.admitted').map((e) => (e.payload as { inputId: string }).inputId),
    [...Array.from({ length: 30 }, (_, i) => `inp_other_${i}`), 'inp_here'],
  );
  for (const { db, log } of [here, there]) {
    await log.close();
    db.close();
  }
  tmp.remove();
});

test.run();
