/** Session snapshots in the `session_snapshot` table (migration 6). */
import type { Db } from './sqlite.ts';
import { MACHINE_VERSION, type SnapshotStore } from '../machines/snapshot-store.ts';
import type { SessionSnapshot } from '../machines/decider.ts';
import type { Clock } from '../clock.ts';

export class SqliteSnapshotStore implements SnapshotStore {
  private readonly stmts;

  constructor(db: Db, private readonly clock: Clock, private readonly version = MACHINE_VERSION) {
    this.stmts = {
      get: db.prepare('SELECT data FROM session_snapshot WHERE session_id = ? AND machine = ?').pluck(),
      put: db.prepare(`INSERT INTO session_snapshot (session_id, seq, machine, data, time_created) VALUES (?, ?, ?, ?, ?)
                       ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, machine = excluded.machine, data = excluded.data, time_created = excluded.time_created
                       WHERE excluded.seq > session_snapshot.seq OR session_snapshot.machine <> excluded.machine`),
    };
  }

  async get(sessionId: string): Promise<SessionSnapshot | undefined> {
    const data = this.stmts.get.get(sessionId, this.version) as string | undefined;
    return data === undefined ? undefined : JSON.parse(data) as SessionSnapshot;
  }

  async put(snapshot: SessionSnapshot): Promise<void> {
    this.stmts.put.run(snapshot.context.sessionId, snapshot.context.seq, this.version, JSON.stringify(snapshot), this.clock.now());
  }
}
