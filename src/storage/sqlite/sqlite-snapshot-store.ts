/**
 * Session snapshots in the `session_snapshot` table (migration 6). Whatever is in the table is
 * checked against the log before it is used (the command handler); one that fails is deleted here
 * (the next put writes a good one), counted, and told to `onDiscarded`.
 */
import type { Db } from './database.ts';
import { MACHINE_VERSION, type SnapshotStore, type SnapshotStoreStats } from '../../machines/snapshot-store.ts';
import type { SessionSnapshot } from '../../machines/decider.ts';
import type { Clock } from '../../clock.ts';

export class SqliteSnapshotStore implements SnapshotStore {
  readonly stats: SnapshotStoreStats = { discarded: 0 };
  private readonly stmts;

  constructor(
    db: Db,
    private readonly clock: Clock,
    private readonly version = MACHINE_VERSION,
    private readonly onDiscarded: (sessionId: string, reason: string) => void = () => undefined,
  ) {
    this.stmts = {
      drop: db.prepare('DELETE FROM session_snapshot WHERE session_id = ? AND machine = ?'),
      get: db.prepare('SELECT data FROM session_snapshot WHERE session_id = ? AND machine = ?').pluck(),
      put: db.prepare(`INSERT INTO session_snapshot (session_id, seq, machine, data, time_created) VALUES (?, ?, ?, ?, ?)
                       ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, machine = excluded.machine, data = excluded.data, time_created = excluded.time_created
                       WHERE excluded.seq > session_snapshot.seq OR session_snapshot.machine <> excluded.machine`),
    };
  }

  async get(sessionId: string): Promise<SessionSnapshot | undefined> {
    const data = this.stmts.get.get(sessionId, this.version) as string | undefined;
    return data === undefined ? undefined : (JSON.parse(data) as SessionSnapshot);
  }

  discarded(sessionId: string, reason: string): void {
    this.stats.discarded++;
    this.stmts.drop.run(sessionId, this.version);
    this.onDiscarded(sessionId, reason);
  }

  async put(snapshot: SessionSnapshot): Promise<void> {
    this.stmts.put.run(snapshot.context.sessionId, snapshot.context.seq, this.version, JSON.stringify(snapshot), this.clock.now());
  }
}
