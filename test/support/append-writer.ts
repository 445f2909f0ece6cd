/**
 * A child process for the group-commit crash test: 64 sessions append 3-event batches as fast as
 * they can through one SqliteEventLog (so appends commit in groups), each announced before it is
 * sent (`SEND <session> <expectedSeq> <id,id,id>`) and after it is acknowledged (`ACK <session>
 * <expectedSeq>`). The test kills it with SIGKILL at some point and checks the file.
 *   node --import tsx test/support/append-writer.ts '{"file":"x.db"}'
 */
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import type { DraftEvent } from '../../src/events/envelope.ts';
import { draft, ev } from '../../src/testing/fixtures.ts';

/** The batch an id list stands for: the test rebuilds the same drafts from a SEND line. */
export function drafts(ids: string[]): DraftEvent[] {
  return ids.map((id, k) =>
    draft(ev('text.completed', { executionId: 'exe_1', messageId: 'msg_1', partId: `prt_${k}`, text: `text of ${id}` }), { id, time: 1_000 }),
  );
}

if (process.argv[1]?.endsWith('append-writer.ts')) {
  const { file } = JSON.parse(process.argv[2] ?? '{}') as { file: string };
  const db = openDatabase(file);
  migrate(db);
  const log = new SqliteEventLog(db);
  const say = (line: string) => process.stdout.write(`${line}\n`);
  await Promise.all(
    Array.from({ length: 64 }, async (_, s) => {
      const session = `ses_w${s}`;
      for (let seq = 0; ; seq += 3) {
        const ids = [0, 1, 2].map((k) => `evt_${session}_${seq + k + 1}`);
        say(`SEND ${session} ${seq} ${ids.join(',')}`);
        await log.append(session, seq, drafts(ids));
        say(`ACK ${session} ${seq}`);
      }
    }),
  );
}
