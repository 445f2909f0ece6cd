import type { Db } from '../database.ts';
import type { Migration } from '../migration.ts';
import { type EventRow, packFrames } from '../event-rows.ts';

/**
 * One row per append (src/storage/sqlite/event-rows.ts): `event_batch` replaces `event`. Each
 * stored event becomes a batch of one, at its own position, its payload bytes unchanged; the
 * highest position ever handed out is kept (deleted newest events' positions are never used again).
 * An append's first event id is unique in the file (as a NATS message id is in its window), the
 * other ids within the session's last append; the older table kept every id unique (an index entry
 * per event).
 */
export const migration022: Migration = {
  version: 22,
  name: 'event_batches',
  up: (db: Db, progress) => {
    db.exec(`
      CREATE TABLE event_batch (
        position     INTEGER PRIMARY KEY AUTOINCREMENT,
        aggregate_id TEXT NOT NULL,
        last_seq     INTEGER NOT NULL,
        count        INTEGER NOT NULL,
        first_id     TEXT NOT NULL,
        committed_at INTEGER,
        frames       BLOB NOT NULL
      );
    `);
    const page = db.prepare(
      'SELECT position, id, aggregate_id, seq, type, version, time, data, committed_at FROM event WHERE position > ? ORDER BY position LIMIT 1000',
    );
    const insert = db.prepare('INSERT INTO event_batch (position, aggregate_id, last_seq, count, first_id, committed_at, frames) VALUES (?, ?, ?, 1, ?, ?, ?)');
    const total = db.prepare('SELECT COUNT(*) FROM event').pluck().get() as number;
    progress(0, total);
    for (let after = 0, done = 0; ; ) {
      const rows = page.all(after) as EventRow[];
      if (rows.length === 0) break;
      for (const r of rows)
        insert.run(r.position, r.aggregate_id, r.seq, r.id, r.committed_at ?? null, packFrames([[r.id, r.type, r.version, r.time, r.data]]));
      after = rows[rows.length - 1]!.position;
      done += rows.length;
      progress(done, total);
    }
    const high = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'event'").pluck().get() as number | undefined;
    db.exec('DROP TABLE event');
    if (high !== undefined) {
      const kept = db.prepare("UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'event_batch'").run(high);
      if (kept.changes === 0) db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('event_batch', ?)").run(high);
    }
    db.exec(`
      CREATE UNIQUE INDEX event_batch_session_idx ON event_batch (aggregate_id, last_seq);
      CREATE UNIQUE INDEX event_batch_first_id_idx ON event_batch (first_id);
    `);
  },
};
