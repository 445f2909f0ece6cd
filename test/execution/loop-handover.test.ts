/**
 * A drive loop that ends (nothing pending) and a wake landing before the ended loop's clean-up
 * runs: the new loop keeps its places, so `awaitIdle` waits for its turn and `close` waits for it
 * (the old loop's clean-up used to remove the new loop's entries: `close` returned while it ran).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { admitInput } from '../../src/input/admit.ts';
import { tempDir } from '../support/tmp.ts';

test('loop hand-over - a wake right after a loop ended on nothing pending: the new loop runs the turn, awaitIdle and close wait for it', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('handover-close.db'));
  migrate(db);
  let ended = false;
  const execution = new SessionExecution({
    log: new SqliteEventLog(db),
    runner: async (ctx) => {
      try {
        await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => setTimeout(() => reject(ctx.signal.reason), 50)));
      } finally {
        ended = true;
      }
    },
  });
  try {
    const id = 'ses_handover_close';
    const before = await execution.handler.load(id);
    await admitInput(execution.handler, id, { id: 'inp_1', prompt: 'go', wake: false });
    const load = execution.handler.load.bind(execution.handler);
    let stale = true;
    execution.handler.load = async (sessionId: string) => {
      if (stale) {
        stale = false;
        return before;
      }
      return load(sessionId);
    };
    const first = execution.resume(id);
    while (execution.registry.get(id)) await Promise.resolve();
    const second = execution.resume(id);
    assert.is((await first).status, 'nothing_pending');
    assert.is((await second).status, 'started');
    await new Promise((r) => setImmediate(r)); // the first loop's clean-up has run
    let idle = false;
    void execution.awaitIdle(id).then(() => (idle = true));
    await new Promise((r) => setTimeout(r, 20));
    assert.not.ok(idle, 'awaitIdle waits while the turn runs');
    await execution.close();
    assert.ok(ended, 'close returned only once the running turn had stopped');
  } finally {
    await execution.close();
    db.close();
    tmp.remove();
  }
});

test.run();
