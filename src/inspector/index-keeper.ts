/**
 * The inspector's index kept by a worker as its log grows (`sessiond start` on a SQLite file, without
 * `--inspect`): the inspector's own follow of the log (follow.ts) into the index tables of the file,
 * holding few sessions in memory and paced by an idle gate (idle-gate.ts), so it takes the loop only
 * when turns leave it idle and falls behind under load. A later `sessiond inspect --db FILE` or
 * `start --inspect` resumes from where it got instead of reading the whole log.
 */
import type { Clock } from '../clock.ts';
import type { EventLog } from '../events/event-log.ts';
import type { Db } from '../storage/sqlite/database.ts';
import type { DeletionFeed } from './follow.ts';
import { followLog } from './follow.ts';
import { IdleGate } from './idle-gate.ts';
import { SqliteInspectorIndex } from './sqlite-index.ts';

/** Sessions the kept follow holds in memory (the rest are read back from the index as their events come). */
export const KEEPER_HOLDS = 1_000;

export interface IndexKeeper {
  /** The log position the index has taken so far. */
  readonly position: number;
  /** Stops following (what was taken is kept). */
  close(): Promise<void>;
}

export async function keepInspectorIndex(options: {
  log: EventLog;
  db: Db;
  clock: Clock;
  deletions?: DeletionFeed;
  holdSessions?: number;
  /** The follow stopped, or the index took no write (said once). */
  onError: (err: unknown) => void;
}): Promise<IndexKeeper> {
  const gate = new IdleGate({ clock: options.clock });
  let writeFailed = false;
  const follow = await followLog({
    log: options.log,
    index: new SqliteInspectorIndex(options.db, undefined, (err) => {
      if (writeFailed) return;
      writeFailed = true;
      options.onError(err);
    }),
    clock: options.clock,
    turn: () => gate.turn(),
    holdSessions: options.holdSessions ?? KEEPER_HOLDS,
    ...(options.deletions ? { deletions: options.deletions } : {}),
    onError: options.onError,
  });
  return {
    get position() {
      return follow.context().position;
    },
    async close() {
      gate.close();
      await follow.close();
    },
  };
}
