/**
 * A stop that lands while a claim is being written (between a prompt's admission and its claim):
 * the claim still commits, and the turn it starts must be handed back at once, not run to its end
 * while `close()` waits (found with `sessiond start` and a SIGTERM right after `prompt`: the worker
 * hung until its shutdown timeout, then exited 1).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { ObservedEventLog } from '../../src/events/observed-log.ts';
import type { DraftEvent, SessionEvent } from '../../src/events/envelope.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { sequentialIds } from '../../src/ids.ts';
import { admitInput } from '../../src/input/admit.ts';
import type { RunContext } from '../../src/runner/types.ts';
import { tempDir } from '../support/tmp.ts';

/** A log whose next claim append waits for `open()` before it goes in. */
class GatedClaims extends ObservedEventLog {
  gate: Promise<void> | undefined;
  reached!: () => void;
  readonly claimReached = new Promise<void>((r) => (this.reached = r));
  constructor(inner: EventLog) {
    super(inner, {});
  }
  override async append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]> {
    if (this.gate && drafts.some((d) => d.type === 'execution.claimed')) {
      this.reached();
      await this.gate;
    }
    return super.append(sessionId, expectedSeq, drafts);
  }
}

test('close() while the claim is being written: the turn it starts is handed back at once, close resolves', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('c.db'));
  migrate(db);
  const log = new GatedClaims(new SqliteEventLog(db));
  let open!: () => void;
  log.gate = new Promise<void>((r) => (open = r));
  let ran = 0;
  // a runner that would take a minute unless aborted
  const runner = async (ctx: RunContext) => {
    ran++;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(resolve, 60_000);
      const stop = () => {
        clearTimeout(t);
        reject(ctx.signal.reason);
      };
      if (ctx.signal.aborted) stop();
      else ctx.signal.addEventListener('abort', stop, { once: true });
    });
  };
  const exec = new SessionExecution({ log, runner, clock: new ManualClock(0), ids: sequentialIds(), ownerId: 'own_a' });
  await admitInput(exec.handler, 'ses_1', { prompt: 'hi', wake: false });
  const resumed = exec.resume('ses_1');
  await log.claimReached;
  const closed = exec.close();
  open();
  const started = Date.now();
  await closed;
  assert.ok(Date.now() - started < 10_000, 'close did not wait for the turn to run out');
  await resumed;
  const events = await log.readSession('ses_1');
  const settled = events.find((e) => e.type === 'execution.settled');
  assert.ok(settled, events.map((e) => e.type).join());
  assert.is((settled!.payload as { outcome: string }).outcome, 'released', 'handed back');
  assert.ok(ran <= 1);
  await log.close();
  db.close();
  tmp.remove();
});

test.run();
