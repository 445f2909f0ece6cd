/**
 * The whole worker's projector folds the events of each group commit inside that commit's
 * transaction (Projector.follow with `inline`, storage/sqlite/commit-hooks.ts): the rows and the checkpoint
 * are there as soon as the append is acknowledged, the subscription then has nothing left to do,
 * another process's commits in between are applied by the subscription in order, and a batch the
 * projection refuses leaves the appends committed and is reported by the subscription as before.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { openDatabase } from '../../src/storage/sqlite/database.ts';
import { Projector } from '../../src/projector/projector.ts';
import { draft, ev } from '../../src/testing/fixtures.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { logFile } from '../support/log-files.ts';

const inputs = (db: ReturnType<typeof openDatabase>) => db.prepare('SELECT id FROM session_input ORDER BY admitted_seq, id').pluck().all() as string[];
const admitted = (n: number) => draft(ev('input.admitted', { inputId: `inp_i${n}`, prompt: `p${n}` }));

test('inline projection - the rows and checkpoint commit with the append; the subscription applies nothing again', async () => {
  const file = logFile({ maxPollMs: 10 });
  const a = file.open();
  const projector = new Projector(a.db);
  const applied: number[] = [];
  const sub = projector.follow(a.log, { inline: true, onApplied: (r) => applied.push(r.applied) });
  const committed = await a.log.append('ses_i', 0, [admitted(1), admitted(2)]);
  assert.is(projector.checkpoint(), committed[1]!.position, 'projected by the time the append is acknowledged');
  assert.equal(inputs(a.db), ['inp_i1', 'inp_i2']);
  await waitFor(() => sub.position >= committed[1]!.position!, { what: 'the subscription to pass the batch' });
  assert.ok(
    applied.every((n) => n === 0),
    `the subscription applied nothing itself (${applied})`,
  );
  await sub.close();
  await file.close();
});

test("inline projection - another process's commits in between are applied in order by the subscription", async () => {
  const file = logFile({ maxPollMs: 10 });
  const a = file.open();
  const b = file.open();
  const projector = new Projector(a.db);
  const errors: unknown[] = [];
  const sub = projector.follow(a.log, { inline: true, onError: (e) => errors.push(e) });
  await a.log.append('ses_a', 0, [admitted(1)]);
  await b.log.append('ses_b', 0, [admitted(2)]); // not on a's connection: no inline fold
  const last = await a.log.append('ses_a', 1, [admitted(3)]); // a's projection is behind b's event: not inline either
  await waitFor(() => projector.checkpoint() === last[0]!.position, { what: 'the projection to reach the head' });
  assert.equal(inputs(a.db).sort(), ['inp_i1', 'inp_i2', 'inp_i3']);
  assert.equal(errors, []);
  await sub.close();
  await file.close();
});

test('inline projection - a batch the projection refuses: the append commits, the subscription reports it', async () => {
  const file = logFile({ maxPollMs: 10 });
  const a = file.open();
  const projector = new Projector(a.db);
  const errors: unknown[] = [];
  const sub = projector.follow(a.log, { inline: true, onError: (e) => errors.push(e) });
  await a.log.append('ses_r', 0, [admitted(1)]);
  // a promotion of an input never admitted: valid events, refused by the projection
  const bad = await a.log.append('ses_r', 1, [draft(ev('input.promoted', { inputId: 'inp_never', executionId: 'exe_r' }))]);
  assert.is((await a.log.readSession('ses_r')).length, 2, 'the append committed');
  await waitFor(() => errors.length > 0, { what: 'the subscription to report the refused batch' });
  assert.match(String(errors[0]), /inp_never/);
  assert.ok(projector.checkpoint() < bad[0]!.position!, 'not projected');
  await sub.close();
  await file.close();
});

test.run();
