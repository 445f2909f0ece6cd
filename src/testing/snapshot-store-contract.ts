/**
 * The SnapshotStore contract, written once and run against every implementation:
 *
 *   snapshotStoreContract('sqlite', async () => ({ store, otherVersion, cleanup })).run();
 *
 * `otherVersion()` opens the same storage as a build with another machine version would.
 */
import { committed, ev } from './fixtures.ts';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { SnapshotStore } from '../machines/snapshot-store.ts';
import { evolve, initialSnapshot, type SessionSnapshot } from '../machines/decider.ts';
import type { SessionEvent } from '../events/envelope.ts';

export interface SnapshotStoreFixture {
  store: SnapshotStore;
  otherVersion: () => Promise<SnapshotStore>;
  cleanup: () => Promise<void>;
}

let counter = 0;

/** A session with `admissions` inputs admitted (plain data, as the engine would store it). */
function snapshotOf(sessionId: string, admissions: number): SessionSnapshot {
  let snap = initialSnapshot(sessionId);
  for (let i = 1; i <= admissions; i++) {
    snap = evolve(snap, committed(ev('input.admitted', { inputId: `inp_${i}`, prompt: `prompt ${i} ünïcødé`, source: 'user' }), { sessionId, seq: i, time: 1_000 + i }));
  }
  return snap;
}

export function snapshotStoreContract(name: string, open: () => Promise<SnapshotStoreFixture>) {
  const s = suite<{ fx: SnapshotStoreFixture }>(`SnapshotStore contract (${name})`);
  s.before.each(async (ctx) => { ctx.fx = await open(); });
  s.after.each(async (ctx) => { await ctx.fx.cleanup(); });
  const session = () => `ses_snap${process.pid}x${++counter}`;

  s('a session never stored reads as none', async ({ fx }) => {
    assert.is(await fx.store.get(session()), undefined);
  });

  s('what is put is read back exactly, and the latest put wins', async ({ fx }) => {
    const id = session();
    await fx.store.put(snapshotOf(id, 3));
    assert.equal(await fx.store.get(id), snapshotOf(id, 3));
    await fx.store.put(snapshotOf(id, 5));
    assert.equal((await fx.store.get(id))?.context.seq, 5);
  });

  s('sessions are kept apart', async ({ fx }) => {
    const [a, b] = [session(), session()];
    await fx.store.put(snapshotOf(a, 2));
    await fx.store.put(snapshotOf(b, 4));
    assert.equal([(await fx.store.get(a))?.context.sessionId, (await fx.store.get(b))?.context.seq], [a, 4]);
  });

  s('a snapshot written by another machine version reads as none', async ({ fx }) => {
    const id = session();
    await fx.store.put(snapshotOf(id, 2));
    const other = await fx.otherVersion();
    assert.is(await other.get(id), undefined);
    await other.put(snapshotOf(id, 3));
    assert.equal((await fx.store.get(id))?.context.seq ?? 0, 0, 'this version does not read the other one either (the other put replaced it)');
  });

  return s;
}
