/**
 * The capacity state in the SQLite file every worker of an embedded deployment shares: one row of
 * `capacity_state` (migration 015), changed in an IMMEDIATE transaction, so processes on one file
 * serialize on SQLite's write lock and none loses another's change.
 */
import type Database from 'better-sqlite3';
import { type Clock, systemClock } from '../clock.ts';
import type { CapacityState } from './decide.ts';
import { type CapacityStore, decodeCapacityState, encodeCapacityState } from './store.ts';

const WHERE = 'table capacity_state (row 1)';

export function sqliteCapacityStore(db: Database.Database, clock: Clock = systemClock): CapacityStore {
  const select = db.prepare('SELECT state FROM capacity_state WHERE id = 1').pluck();
  const upsert = db.prepare(
    'INSERT INTO capacity_state (id, state, time_updated) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET state = excluded.state, time_updated = excluded.time_updated',
  );
  const read = () => decodeCapacityState(select.get() as string | undefined, WHERE);
  let closed = false;
  return {
    read: async () => read(),
    update: async <T>(change: (state: CapacityState) => { state: CapacityState; result: T }): Promise<T> => {
      if (closed) throw new Error('The capacity store is closed.');
      const run = db.transaction(() => {
        const before = read();
        const out = change(before);
        const text = encodeCapacityState(out.state);
        if (text !== encodeCapacityState(before)) upsert.run(text, clock.now());
        return out.result;
      });
      return run.immediate();
    },
    close: async () => {
      closed = true;
    },
  };
}
