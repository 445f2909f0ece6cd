/**
 * A fan-out: a turn calling 100 sessions at once (`Promise.all` of `ctx.callSession`) admits into
 * all of them in a few group commits of the embedded log, not 100 transactions one after another.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { startWorker } from '../../src/execution/worker.ts';
import { admitInput } from '../../src/input/admit.ts';
import type { Runner } from '../../src/runner/types.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { spyLog } from '../support/spy-log.ts';
import { tempDir } from '../support/tmp.ts';

const CHILDREN = 100;

test('fan-out - 100 session calls at once admit into their children in a few group commits', async () => {
  const tmp = tempDir('sessiond-fanout-');
  const db = openDatabase(tmp.file('f.db'));
  migrate(db);
  const sqlite = new SqliteEventLog(db);
  /** The log's group count when each child's admission committed. */
  const groupOf = new Map<string, number>();
  const log = spyLog(sqlite, {
    afterAppend: (drafts, sessionId) => {
      if (sessionId !== 'ses_lead' && drafts.some((d) => d.type === 'input.admitted')) groupOf.set(sessionId, sqlite.stats.groups);
    },
  });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const runner: Runner = async (ctx) => {
    if (ctx.sessionId === 'ses_lead') {
      await Promise.all(Array.from({ length: CHILDREN }, (_, i) => ctx.callSession(`c${i}`, { sessionId: `ses_child${i}`, prompt: `part ${i}` })));
      return;
    }
    await gate; // the children's own turns wait: only their admissions are counted
  };
  const execution = new SessionExecution({ log, clock: new ManualClock(1_000), ids: sequentialIds(), runner, ownerId: 'own_a', leaseMs: 30_000 });
  const worker = startWorker(execution, { projection: db, sweep: { intervalMs: 1_000_000_000 }, onError: (err) => console.error(err) });
  try {
    await admitInput(execution.handler, 'ses_lead', { prompt: 'fan out' });
    await execution.resume('ses_lead');
    await waitFor(() => groupOf.size === CHILDREN, { what: `${CHILDREN} children admitted` });
    const groups = new Set(groupOf.values());
    assert.ok(groups.size <= 5, `the ${CHILDREN} admissions committed in ${groups.size} groups: they were not batched`);
  } finally {
    release();
    await worker.stop();
    db.close();
    tmp.remove();
  }
});

test.run();
