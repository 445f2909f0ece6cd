/**
 * The follow a worker runs to keep the inspector's index (`holdSessions`): it holds few sessions in
 * memory, letting the others go once kept and reading them back from the index when their events
 * come, and it keeps exactly the index a follow holding every session keeps (the list's rows, the
 * timeline blocks, the checkpoints, the marks), so an inspector resumed from it answers the same.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { followLog, type LogFollow } from '../../src/inspector/follow.ts';
import { TIMELINE_BLOCK } from '../../src/inspector/index-store.ts';
import { SqliteInspectorIndex } from '../../src/inspector/sqlite-index.ts';
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { systemClock, type Clock } from '../../src/clock.ts';
import { deleteSessionData, sqliteDeletionFeed } from '../../src/storage/sqlite/delete-session.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
const LONG = ['ses_long_a', 'ses_long_b'];
const SHORT = ['ses_short_c', 'ses_short_d', 'ses_short_e'];
let engine: Engine;

test.before(async () => {
  engine = await openEngine({ file: tmp.file('log.db'), runner: echoRunner({ steps: 1 }) });
  // the sessions take turns, so each batch of the follow brings others than the last
  for (let turn = 0; (await engine.log.lastSeq(LONG[1]!)) < TIMELINE_BLOCK + 600; turn++) {
    const ids = turn % 40 === 0 ? [...LONG, ...SHORT] : LONG;
    for (const id of ids) await engine.admit(id, { prompt: `turn ${turn} of ${id}` });
    for (const id of ids) await engine.awaitIdle(id);
  }
});

test.after(async () => {
  await engine?.close();
  tmp.remove();
});

function indexDb(name: string): Db {
  const db = openDatabase(tmp.file(name));
  migrate(db);
  return db;
}

/** Every row of the index tables, but the follow's position (which the two follows reach at their own pace). */
function indexRows(db: Db): Record<string, unknown[]> {
  const tables = ['inspector_head', 'inspector_timeline', 'inspector_checkpoint', 'inspector_mark'];
  return Object.fromEntries(tables.map((t) => [t, db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2`).all()]));
}

async function followToHead(db: Db, clock: Clock, holdSessions?: number, onBatch?: (f: LogFollow) => void): Promise<void> {
  let follow: LogFollow | undefined;
  follow = await followLog({
    log: engine.log,
    index: new SqliteInspectorIndex(db),
    clock,
    turn: async () => {
      if (follow) onBatch?.(follow);
    },
    ...(holdSessions === undefined ? {} : { holdSessions }),
    onError: (err) => {
      throw err;
    },
  });
  await follow.untilFolded(await engine.log.head());
  await follow.close();
}

test('held follow - holding one session at a time, it keeps the same index as a follow holding all, and lets the others go after each batch', async () => {
  const all = indexDb('all.db');
  const held = indexDb('held.db');
  try {
    await followToHead(all, systemClock);
    // a clock that says a second has passed at every look: the follow keeps, and lets go, after every batch
    let t = 0;
    const hasty: Clock = { ...systemClock, now: () => (t += 1_000) };
    let most = 0;
    await followToHead(held, hasty, 1, (f) => {
      most = Math.max(most, Object.keys(f.context().snapshots).length);
    });
    assert.is(most, 1, 'after each batch (each one kept), one session held: the others let go');
    const [a, b] = [indexRows(all), indexRows(held)];
    assert.ok((a['inspector_timeline']?.length ?? 0) >= LONG.length, 'the long sessions filled timeline blocks (each read back past one while let go)');
    assert.ok((a['inspector_mark']?.length ?? 0) > 10, 'marks were made');
    for (const table of Object.keys(a)) assert.equal(b[table], a[table], `${table}: the same rows`);
  } finally {
    all.close();
    held.close();
  }
});

test('held follow - a second start holding few sessions resumes from the position kept and reads back only the sessions whose events come', async () => {
  const db = indexDb('resume.db');
  try {
    await followToHead(db, systemClock, 2);
    const kept = new SqliteInspectorIndex(db).followedPosition(engine.log.name);
    assert.is(kept, await engine.log.head(), 'the position kept is the head');
    await engine.admit(SHORT[0]!, { prompt: 'one more' });
    await engine.awaitIdle(SHORT[0]!);
    let seen: string[] = [];
    await followToHead(db, systemClock, 2, (f) => {
      seen = Object.keys(f.context().snapshots);
    });
    assert.equal(seen, [SHORT[0]], 'only the session written since was read back');
    const head = new SqliteInspectorIndex(db).headOf(SHORT[0]!)!;
    assert.is(head.summary.seq, await engine.log.lastSeq(SHORT[0]!), 'its row in the list is at its last event');
  } finally {
    db.close();
  }
});

test('held follow - a session deleted while let go leaves the kept list too', async () => {
  const db = indexDb('deleted.db');
  const gone = SHORT[2]!;
  try {
    const follow = await followLog({
      log: engine.log,
      index: new SqliteInspectorIndex(db),
      clock: systemClock,
      turn: async () => undefined,
      holdSessions: 1,
      deletions: sqliteDeletionFeed(engine.db, systemClock, undefined, 20),
      onError: (err) => {
        throw err;
      },
    });
    try {
      await follow.untilFolded(await engine.log.head());
      await waitFor(() => new SqliteInspectorIndex(db).headOf(gone) !== undefined, { what: 'the session kept (within a quiet second)' });
      deleteSessionData(engine.db, gone, { now: Date.now(), by: 'test' });
      await waitFor(() => new SqliteInspectorIndex(db).headOf(gone) === undefined, { what: 'the deleted session to leave the kept list' });
    } finally {
      await follow.close();
    }
  } finally {
    db.close();
  }
});

test.run();
