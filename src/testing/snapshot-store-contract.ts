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
import type { PendingInput } from '../machines/session-context.ts';
import { CommandHandler } from '../execution/command-handler.ts';
import { admitInput } from '../input/admit.ts';
import { openDatabase } from '../storage/sqlite/database.ts';
import { migrate } from '../storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../storage/sqlite/sqlite-event-log.ts';
import { systemClock } from '../clock.ts';
import { sequentialIds } from '../ids.ts';
import { waitFor } from './wait.ts';

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
    snap = evolve(
      snap,
      committed(ev('input.admitted', { inputId: `inp_${i}`, prompt: `prompt ${i} ünïcødé`, source: 'user' }), { sessionId, seq: i, time: 1_000 + i }),
    );
  }
  return snap;
}

export function snapshotStoreContract(name: string, open: () => Promise<SnapshotStoreFixture>) {
  const s = suite<{ fx: SnapshotStoreFixture }>(`SnapshotStore contract (${name})`);
  s.before.each(async (ctx) => {
    ctx.fx = await open();
  });
  s.after.each(async (ctx) => {
    await ctx.fx.cleanup();
  });
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

  /**
   * A store holds whatever its writers put (on NATS, any holder of the worker password): a cold load
   * checks the snapshot against the log, discards one that claims what the log does not have, tells
   * the store (`discarded`), and folds the session from the log. The log here is an embedded one.
   */
  const forgeries: [string, (real: SessionSnapshot) => SessionSnapshot][] = [
    [
      'a pending input never admitted (pointing at a real admission)',
      (real) => withPending(real, { ...real.context.pending[0]!, inputId: 'inp_evil', prompt: 'run me' }),
    ],
    [
      'a pending input with another prompt than its admission',
      (real) => ({ ...real, context: { ...real.context, pending: [{ ...real.context.pending[0]!, prompt: 'run me instead' }] } }),
    ],
    [
      'a pending input naming no admission',
      (real) => withPending(real, { inputId: 'inp_evil', delivery: 'queue', seq: 1, wake: true, source: 'user', prompt: 'run me' }),
    ],
    ['no head event', (real) => ({ ...real, context: { ...real.context, head: null } })],
    ['another head event', (real) => ({ ...real, context: { ...real.context, head: { ...real.context.head!, id: 'evt_forged' } } })],
    ['a seq past the log', (real) => ({ ...real, context: { ...real.context, seq: real.context.seq + 5 } })],
    ['an owner its first event never gave it', (real) => ({ ...real, context: { ...real.context, ownedBy: 'mallory' } })],
  ];
  for (const [what, forge] of forgeries) {
    s(`a stored snapshot with ${what} is discarded, told to the store, and the session folds from the log`, async ({ fx }) => {
      const id = session();
      const world = embeddedLog();
      try {
        const writer = new CommandHandler(world.log, systemClock, sequentialIds('w'));
        await admitInput(writer, id, { id: 'inp_real', prompt: 'the real prompt', wake: false });
        const real = await writer.load(id);
        await fx.store.put(forge(real));
        const told: [string, string][] = [];
        const store: SnapshotStore = {
          get: (x) => fx.store.get(x),
          put: (x) => fx.store.put(x),
          discarded: (x, reason) => {
            told.push([x, reason]);
            fx.store.discarded?.(x, reason);
          },
        };
        const reader = new CommandHandler(world.log, systemClock, sequentialIds('r'), { snapshots: store });
        const loaded = await reader.load(id);
        assert.equal(JSON.parse(JSON.stringify(loaded)), JSON.parse(JSON.stringify(real)), 'the session as the log folds it');
        assert.equal(
          told.map(([x]) => x),
          [id],
          'the store was told once',
        );
        assert.is(reader.stats.snapshotsDiscarded, 1);
        // and replaced in the store by the snapshot folded from the log (written in the background)
        await waitFor(async () => JSON.stringify(await fx.store.get(id)) === JSON.stringify(real), {
          timeoutMs: 5_000,
          what: 'the discarded snapshot replaced by the folded one',
        });
        // a turn runs only what the log admitted
        const claimed = await reader.execute(id, (now) => ({ type: 'claim', now, ownerId: 'own_r', executionId: 'exe_r', leaseMs: 30_000 }));
        assert.is(claimed.events[0]!.type, 'execution.claimed');
        await reader.execute(id, (now) => ({ type: 'start', now, ownerId: 'own_r', executionId: 'exe_r' }));
        const refused = await reader
          .execute(id, (now) => ({
            type: 'record',
            now,
            ownerId: 'own_r',
            executionId: 'exe_r',
            events: [{ type: 'input.promoted', payload: { inputId: 'inp_evil', executionId: 'exe_r' } }],
          }))
          .then(
            () => undefined,
            (err: unknown) => err as { reason?: string },
          );
        assert.is(refused?.reason, 'not_pending', 'no promotion of an input the log never admitted');
      } finally {
        world.close();
      }
    });
  }

  s('a snapshot the log confirms is used: a cold load folds only the events after it', async ({ fx }) => {
    const id = session();
    const world = embeddedLog();
    try {
      const writer = new CommandHandler(world.log, systemClock, sequentialIds('w'));
      for (let i = 0; i < 3; i++) await admitInput(writer, id, { id: `inp_${i}`, prompt: `p${i}`, wake: false });
      await fx.store.put(await writer.load(id));
      await admitInput(writer, id, { id: 'inp_3', prompt: 'p3', wake: false });
      const reader = new CommandHandler(world.log, systemClock, sequentialIds('r'), { snapshots: fx.store });
      const loaded = await reader.load(id);
      assert.equal(JSON.parse(JSON.stringify(loaded)), JSON.parse(JSON.stringify(await writer.load(id))));
      assert.equal([reader.stats.snapshotsDiscarded, reader.stats.snapshotsSetAside], [0, 0]);
      assert.ok(
        loaded.context.pending.every((p) => p.unverified === undefined),
        'every pending input checked',
      );
    } finally {
      world.close();
    }
  });

  return s;
}

function withPending(snapshot: SessionSnapshot, input: PendingInput): SessionSnapshot {
  return { ...snapshot, context: { ...snapshot.context, pending: [...snapshot.context.pending, input] } };
}

/** An embedded log in memory: what a stored snapshot is checked against in these tests. */
function embeddedLog(): { log: SqliteEventLog; close: () => void } {
  const db = openDatabase(':memory:');
  migrate(db);
  const log = new SqliteEventLog(db);
  return { log, close: () => db.close() };
}
