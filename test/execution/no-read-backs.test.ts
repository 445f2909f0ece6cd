/**
 * A turn's prompts travel in the session state: the runner gets them without the log being read
 * once per input (they used to be re-read by sequence, one log read per input).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite-event-log.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { admitInput } from '../../src/input/admit.ts';
import type { RunInput } from '../../src/runner/types.ts';
import { tempDir } from '../support/tmp.ts';
import { spyLog } from '../support/spy-log.ts';

test('no read-backs - the log reads of a turn do not grow with its number of inputs; the runner gets every prompt', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('reads.db'));
  migrate(db);
  const inner = new SqliteEventLog(db);
  let reads = 0;
  const log = spyLog(inner, { afterRead: () => { reads++; } });
  const seen: (readonly RunInput[])[] = [];
  const execution = new SessionExecution({ log, runner: async (ctx) => { seen.push(ctx.inputs); } });
  const turn = async (sessionId: string, prompts: string[]) => {
    for (const [i, prompt] of prompts.entries()) {
      await admitInput(execution.handler, sessionId, { id: `inp_${i}`, prompt, delivery: i === 0 ? 'queue' : 'steer', wake: false });
    }
    const before = reads;
    await execution.resume(sessionId);
    await execution.awaitIdle(sessionId);
    return reads - before;
  };
  const one = await turn('ses_one', ['only']);
  const five = await turn('ses_five', ['a', 'b', 'c', 'd', 'e']);
  assert.equal(seen[1]!.map((i) => i.prompt), ['a', 'b', 'c', 'd', 'e'], 'every prompt reached the runner');
  assert.is(five, one, `a turn of five inputs reads the log as often as a turn of one (${five} vs ${one})`);
  await execution.close();
  db.close();
  tmp.remove();
});

test.run();
