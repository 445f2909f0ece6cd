/**
 * Exactly-once: the checkpoint is written in the same transaction as the rows, events at or below
 * it are skipped, a batch that fails half-way leaves nothing behind, and live-only or uncommitted
 * events never get in.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/errors.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { Projector } from '../../src/projector/projector.ts';
import { projectionHash, projectionRows, resetProjection } from '../../src/projector/rebuild.ts';
import { tempDir } from '../support/tmp.ts';
import { EMPTY_PROJECTION, all, claimedTurn, setup } from './support.ts';
import { committed, ev, expectCode, stream } from '../../src/testing/fixtures.ts';

function turn() {
  const s = stream();
  const m = { executionId: 'exe_1', messageId: 'msg_1' };
  return [
    ...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'),
    s.ev('ses_1', 'step.started', { ...m, step: 0 }),
    s.ev('ses_1', 'text.completed', { ...m, partId: 'prt_1', text: 'hello' }),
    s.ev('ses_1', 'step.ended', { ...m, finish: 'stop' }),
    s.ev('ses_1', 'execution.settled', { executionId: 'exe_1', outcome: 'succeeded' }),
  ];
}

test('exactly once - applying the same batch twice changes nothing', () => {
  const { db, projector } = setup();
  const events = turn();
  assert.equal(projector.apply(events), { applied: 8, skipped: 0, position: 8 });
  const once = { rows: projectionRows(db), hash: projectionHash(db) };
  assert.equal(projector.apply(events), { applied: 0, skipped: 8, position: 8 });
  assert.equal({ rows: projectionRows(db), hash: projectionHash(db) }, once);
  assert.is(projector.checkpoint(), 8);
});

test('exactly once - an overlapping batch applies only the events past the checkpoint', () => {
  const { db, projector } = setup();
  const events = turn();
  projector.apply(events.slice(0, 5));
  assert.is(projector.checkpoint(), 5);
  assert.equal(projector.apply(events.slice(2)), { applied: 3, skipped: 3, position: 8 });
  const whole = setup();
  whole.projector.apply(events);
  assert.is(projectionHash(db), projectionHash(whole.db));
});

test('exactly once - a batch that throws mid-way applies nothing and leaves the checkpoint where it was', () => {
  const { db, projector } = setup();
  const events = turn();
  projector.apply(events.slice(0, 2));
  const before = { rows: projectionRows(db), hash: projectionHash(db), checkpoint: projector.checkpoint() };
  const broken = [...events.slice(2, 5), { ...events[5]!, payload: { executionId: 'exe_1', messageId: 'msg_1' } } as SessionEvent, ...events.slice(6)];
  expectCode(() => projector.apply(broken), ErrorCode.InvalidPayload, 'evt_6 (text.completed, session ses_1, seq 6, position 6)');
  assert.equal(
    { rows: projectionRows(db), hash: projectionHash(db), checkpoint: projector.checkpoint() },
    before,
    'the first three events of the batch were rolled back',
  );
  assert.equal(projector.apply(events.slice(2)).applied, 6, 'the corrected batch applies in full');
});

test('exactly once - a storage failure mid-batch (a crash inside the transaction) rolls back rows and checkpoint together', () => {
  const { db, projector } = setup();
  // message rows are written once per batch, as an INSERT or an UPDATE: fail either
  for (const op of ['INSERT', 'UPDATE']) {
    db.exec(`CREATE TEMP TRIGGER boom_${op} BEFORE ${op} ON main.session_message WHEN NEW.data LIKE '%"finish"%'
             BEGIN SELECT RAISE(ABORT, 'simulated crash while writing'); END`);
  }
  const events = turn();
  assert.throws(() => projector.apply(events), /simulated crash while writing/);
  assert.equal(projectionRows(db), EMPTY_PROJECTION);
  assert.is(projector.checkpoint(), 0);
  assert.equal(all(db, 'projector_checkpoint'), []);
  db.exec('DROP TRIGGER temp.boom_INSERT; DROP TRIGGER temp.boom_UPDATE');
  assert.equal(projector.apply(events).position, 8);
});

test('exactly once - two projectors of the same name on two connections never apply an event twice', () => {
  const tmp = tempDir();
  const open = () => {
    const db = openDatabase(tmp.file('p.db'));
    migrate(db);
    return db;
  };
  const a = open();
  const b = open();
  const events = turn();
  new Projector(a).apply(events.slice(0, 6));
  assert.equal(new Projector(b).apply(events), { applied: 2, skipped: 6, position: 8 });
  assert.equal(new Projector(a).apply(events), { applied: 0, skipped: 8, position: 8 });
  const alone = setup();
  alone.projector.apply(events);
  assert.is(projectionHash(a), projectionHash(alone.db));
  assert.equal(all(a, 'projector_checkpoint'), [{ name: 'main', position: 8 }]);
  a.close();
  b.close();
  tmp.remove();
});

test('exactly once - events without a position are refused, whole batch', () => {
  const { db, projector } = setup();
  const events = turn();
  const { position: _p, ...uncommitted } = events[3]!;
  const err = expectCode(
    () => projector.apply([...events.slice(0, 3), uncommitted as SessionEvent]),
    ErrorCode.InvalidOption,
    'The event has no position: the projector folds only committed events read back from a log (EventLog.readAll or subscribe)',
  );
  assert.match(err.message, 'evt_4 (input.promoted, session ses_1, seq 4, no position)');
  assert.is(projectionHash(db), projectionHash(setup().db));
  expectCode(() => projector.apply([events[1]!, events[0]!]), ErrorCode.InconsistentStream, "The event's position 1 comes after position 2 in the same batch");
  expectCode(() => projector.apply([{ ...events[0]!, position: 1.5 }]), ErrorCode.InvalidOption, 'invalid position 1.5');
  assert.is(projector.checkpoint(), 0);
});

test('exactly once - live-only events (text.delta) are refused: never stored, never advance the checkpoint', () => {
  const { db, projector } = setup();
  const events = turn();
  projector.apply(events.slice(0, 5));
  const delta = committed(ev('text.delta', { executionId: 'exe_1', messageId: 'msg_1', partId: 'prt_1', delta: 'hel' }), {
    id: 'evt_live',
    sessionId: 'ses_1',
    seq: 6,
    time: 1,
    position: 6,
  });
  const before = projectionHash(db);
  expectCode(() => projector.apply([delta]), ErrorCode.InvalidPayload, 'Event type text.delta is live-only');
  expectCode(() => projector.apply([events[5]!, { ...delta, position: 7 }]), ErrorCode.InvalidPayload, 'live-only');
  expectCode(() => projector.apply([{ ...delta, position: 1 }]), ErrorCode.InvalidPayload, 'live-only'); // even below the checkpoint
  assert.is(projectionHash(db), before);
  assert.is(projector.checkpoint(), 5);
});

test('exactly once - events sharing one position (one JetStream append) apply together and are skipped together', () => {
  const { db, projector } = setup();
  const events = turn().map((e, i) => ({ ...e, position: i < 4 ? 1 : 2 })) as SessionEvent[];
  assert.equal(projector.apply(events.slice(0, 4)), { applied: 4, skipped: 0, position: 1 });
  assert.equal(projector.apply(events), { applied: 4, skipped: 4, position: 2 });
  const plain = setup();
  plain.projector.apply(turn());
  assert.is(projectionHash(db), projectionHash(plain.db));
});

test('exactly once - checkpoints are per name, and a reset under a caller that saw more is refused', () => {
  const { db, projector } = setup();
  projector.apply(turn());
  assert.is(new Projector(db, { name: 'shadow' }).checkpoint(), 0);
  assert.equal(projector.apply([]), { applied: 0, skipped: 0, position: 8 });
  resetProjection(db);
  expectCode(
    () => projector.apply(turn(), { expectAtLeast: 8 }),
    ErrorCode.InconsistentStream,
    'Projector "main" is at position 0, behind the 8 this caller already saw: the projection was reset (rebuilt?) while it ran',
  );
  assert.equal(projector.apply(turn(), { expectAtLeast: 0 }).position, 8);
});

test('projector - refuses a database without the projection tables, saying to migrate', () => {
  const db = openDatabase(':memory:');
  expectCode(
    () => new Projector(db),
    ErrorCode.NotFound,
    'has no projection tables (no such table: projector_checkpoint): run migrate(db) before creating a Projector.',
  );
  db.close();
});

test.run();
