/**
 * A handler folds each event into its cached snapshot once: its own appends are folded by the append
 * (a subscription that delivers them first passes them by), another writer's by `observe`, which
 * keeps the cache at the log's head so the next command decides without a conflict.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { CommandHandler } from '../../src/execution/command-handler.ts';
import { admitInput } from '../../src/input/admit.ts';
import { ManualClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { spyLog } from '../support/spy-log.ts';
import { tempDir } from '../support/tmp.ts';

test("observed once - a handler's own appends are not folded again from the subscription; another writer's are", async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('observe.db'));
  migrate(db);
  const log = new SqliteEventLog(db);
  let reads = 0;
  const counted = spyLog(log, { afterRead: () => void reads++ });
  const clock = new ManualClock(1_000);
  const mine = new CommandHandler(counted, clock, sequentialIds('a'));
  const other = new CommandHandler(log, clock, sequentialIds('b'));
  let delivered = 0;
  // as the worker does: every committed batch, the moment the subscription has it
  const sub = log.subscribe({
    onBatch: (events) => {
      mine.observe(events);
      delivered += events.length;
    },
  });
  for (let i = 0; i < 5; i++) await admitInput(mine, 'ses_o', { id: `inp_a${i}`, prompt: `a${i}`, wake: false });
  await waitFor(() => delivered === 5, { what: 'the subscription delivering our five admissions' });
  assert.is(mine.stats.observed, 0, 'our own events were folded by their appends only');
  assert.is(mine.cached('ses_o')?.context.seq, 5);

  await admitInput(other, 'ses_o', { id: 'inp_b0', prompt: 'b0', wake: false });
  await waitFor(() => delivered === 6, { what: "the other writer's admission delivered" });
  assert.is(mine.stats.observed, 1, "the other writer's event is folded from the subscription");
  assert.is(mine.cached('ses_o')?.context.seq, 6);
  const readsBefore = reads;
  await admitInput(mine, 'ses_o', { id: 'inp_a5', prompt: 'a5', wake: false });
  assert.is(reads, readsBefore, 'decided on the observed cache: no conflict, no reload');
  assert.is(mine.cached('ses_o')?.context.seq, 7);
  await sub.close();
  await log.close();
  db.close();
  tmp.remove();
});

test.run();
