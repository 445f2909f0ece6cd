import type { Migration } from '../migration.ts';
import type { Db } from '../database.ts';

/**
 * The session whose turn last called a session (`ctx.callSession`: an admission's `caller`) on its
 * list row, so `list` shows parent and children and pages a parent's children (`calledBy`).
 * A log already holding an admission with a caller has its projection emptied to be folded again
 * (as 011 did); a log without one only gains the empty column.
 */
export const migration017: Migration = {
  version: 17,
  name: 'session_called_by',
  up: (db: Db) => {
    db.exec(`
      ALTER TABLE session ADD COLUMN called_by TEXT;
      CREATE INDEX session_called_by_idx ON session (called_by, time_created, session_id) WHERE called_by IS NOT NULL;
    `);
    // the msgpack key "caller" (fixstr a6): a prompt reading exactly "caller" only costs a refold
    const called = db.prepare("SELECT 1 FROM event WHERE type = 'input.admitted' AND instr(data, X'a663616c6c6572') > 0 LIMIT 1").get();
    if (!called) return;
    db.exec(`
      DELETE FROM session_execution;
      DELETE FROM session_input;
      DELETE FROM session_message;
      DELETE FROM session_recovery;
      DELETE FROM session_wait;
      DELETE FROM session;
      DELETE FROM session_tag;
      DELETE FROM projector_checkpoint;
    `);
  },
};
