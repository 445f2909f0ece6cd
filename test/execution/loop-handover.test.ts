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

test('loop hand-over - a wake right after a loop ended on nothing pending: awaitIdle waits for the new loop, whose turn runs', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('handover.db'));
  migrate(db);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const ran: string[] = [];
  const execution = new SessionExecution({
    log: new SqliteEventLog(db),
    runner: async (ctx) => {
      // the turn runs until the test lets it end, or until it is stopped
      await Promise.race([gate, new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))]);
      ran.push(ctx.inputs.map((i) => i.prompt).join(','));
    },
  });
  try {
    const id = 'ses_handover';
    const before = await execution.handler.load(id); // the session as it was before the admission
    await admitInput(execution.handler, id, { id: 'inp_1', prompt: 'go', wake: false });
    // the first loop reads the earlier state (a load that raced the admission): nothing pending, it ends
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
    // the moment the first loop has ended its entry (its clean-up not yet run), a wake starts a new loop
    while (execution.registry.get(id)) await Promise.resolve();
    const second = execution.resume(id);
    assert.is((await first).status, 'nothing_pending');
    assert.is((await second).status, 'started');
    await new Promise((r) => setImmediate(r)); // the first loop's clean-up has run
    assert.ok(execution.registry.get(id), 'the running loop is still registered');
    let idle = false;
    const idled = execution.awaitIdle(id).then(() => (idle = true));
    await new Promise((r) => setTimeout(r, 20));
    assert.not.ok(idle, 'awaitIdle waits while the turn runs');
    release();
    await idled;
    assert.equal(ran, ['go'], 'the turn ran once');
  } finally {
    release();
    await execution.close();
    db.close();
    tmp.remove();
  }
});

test('loop hand-over - the same hand-over, then close: close waits for the new loop, whose turn stops', async () => {
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
    await execution.close();
    assert.ok(ended, 'close returned only once the running turn had stopped');
  } finally {
    await execution.close();
    db.close();
    tmp.remove();
  }
});

test.run();
