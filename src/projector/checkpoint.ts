/**
 * projector_checkpoint: the log position a named projector has folded up to. Written only inside
 * the transaction that writes the rows it covers, so rows and checkpoint never disagree.
 */
import type { Db } from '../storage/sqlite/database.ts';

export function checkpointRows(db: Db) {
  const get = db.prepare('SELECT position FROM projector_checkpoint WHERE name = ?').pluck();
  const set = db.prepare(`INSERT INTO projector_checkpoint (name, position) VALUES (?, ?)
                          ON CONFLICT (name) DO UPDATE SET position = excluded.position`);
  const clear = db.prepare('DELETE FROM projector_checkpoint');
  return {
    /** The position folded so far (0 before anything). */
    get: (name: string): number => (get.get(name) as number | undefined) ?? 0,
    set: (name: string, position: number): void => void set.run(name, position),
    /** Forgets every projector's checkpoint (they all cover the same tables). */
    clearAll: (): void => void clear.run(),
  };
}
