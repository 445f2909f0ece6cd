/** The `quarantined_message` table (migration 4): messages of the log a worker skipped as unreadable. */
import type { Db } from './database.ts';
import type { QuarantinedMessage } from '../../events/quarantine.ts';

/** Records a quarantined message once (by position). */
export function recordQuarantine(db: Db, q: QuarantinedMessage, now: number): void {
  db.prepare(`INSERT OR IGNORE INTO quarantined_message (position, subject, session_id, code, message, size, time_created)
    VALUES (?, ?, ?, ?, ?, ?, ?)`).run(q.position, q.subject, q.sessionId, q.code, q.message, q.size, now);
}

/** Every recorded quarantined message, by position. */
export function quarantinedMessages(db: Db): QuarantinedMessage[] {
  return db
    .prepare(`SELECT position, subject, session_id AS sessionId, code, message, size FROM quarantined_message ORDER BY position`)
    .all() as QuarantinedMessage[];
}
