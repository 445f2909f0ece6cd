/**
 * Deleting a session over NATS while something else touches it, each with a server of its own:
 * - a delete during a running turn (a real worker process, slow steps) cancels the turn first; the
 *   owner's later writes meet an empty subject and are refused, so nothing of the session is left;
 * - a new session of the same id admitted after the purge and folded by a worker's projector before
 *   that worker reads the audit record: applying the deletion leaves the rows of the new session
 *   only, exactly as a fresh projection of the stream.
 */
import * as assert from 'uvu/assert';
import { as, cliSuite, natsWorker } from './cli-suite.ts';
import { ADMIN, CLIENT, WORKER } from '../../src/testing/nats-server.ts';
import { runCli } from '../support/cli.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { applyDeletion, deleteNatsSession } from '../../src/nats/delete-session.ts';
import { CommandHandler } from '../../src/execution/command-handler.ts';
import { admitInput } from '../../src/input/admit.ts';
import { Projector } from '../../src/projector/projector.ts';
import { projectionRows } from '../../src/projector/rebuild.ts';
import { systemClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';

const s = cliSuite('deleting over NATS while the session is in use');

s('a delete during a running turn cancels it first; the owner writes nothing after the purge and serves on', async (ctx) => {
  const url = ctx.server.url;
  const client = ['--nats', url, ...as(CLIENT)];
  const admin = ['--nats', url, ...as(ADMIN)];
  // the only worker: each echo step takes 1.5 s, so the turn is still running when the delete comes
  const worker = await natsWorker(ctx, 'busy-worker.db', 1500);
  const log = await JetStreamEventLog.open({ connection: { servers: url, ...WORKER }, ensureStream: false });
  try {
    const sent = await runCli(['prompt', 'ses_busy', 'words said while the turn runs', ...client]);
    assert.is(sent.code, 0, sent.stderr);
    await waitFor(async () => (await log.readSession('ses_busy')).some((e) => e.type === 'step.started'), {
      timeoutMs: 20_000,
      what: 'the turn running',
    });
    const done = await runCli(['delete', 'ses_busy', '--yes', '--reason', 'mid-turn', ...admin]);
    assert.is(done.code, 0, done.stdout + done.stderr);
    assert.match(done.stdout, /^deleted ses_busy \(\d+ events/);
    assert.equal(await log.readSession('ses_busy'), [], 'gone from the stream');

    // the owner sees the cancel and stops the turn
    await waitFor(() => /ses_busy {2}execution \S+ was cancelled/.test(worker.output()), {
      timeoutMs: 20_000,
      what: `the owner to stop the turn: ${worker.output()}`,
    });
    // and goes on serving: a new session runs to the end, after which the deleted one is still absent
    assert.is((await runCli(['prompt', 'ses_after', 'next', ...client])).code, 0);
    await waitFor(
      async () => {
        const after = await log.readSession('ses_after');
        return after.some((e) => e.type === 'execution.settled');
      },
      { timeoutMs: 30_000, what: `the next session served: ${worker.output()}` },
    );
    assert.equal(await log.readSession('ses_busy'), [], 'the cancelled owner wrote nothing after the purge');
    assert.is(worker.child.exitCode, null, 'the worker is still up');
    const check = await runCli(['check', ...client]);
    assert.is(check.code, 0, check.stdout + check.stderr);
  } finally {
    await log.close();
  }
});

s("a new session of the id folded before the deletion is applied: the worker's rows are the new session's only, as a fresh projection", async (ctx) => {
  const log = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...ADMIN }, ensureStream: false });
  const db = openDatabase(ctx.tmp.file('race.db'));
  const fresh = openDatabase(ctx.tmp.file('fresh.db'));
  try {
    migrate(db);
    migrate(fresh);
    const handler = new CommandHandler(log, systemClock, sequentialIds('race'));
    const projector = new Projector(db);
    const fold = async () => projector.apply(await log.readAll({ after: projector.checkpoint() }));
    await admitInput(handler, 'ses_race', { id: 'inp_old', prompt: 'old words', wake: false, tags: { user: 'u1' } });
    await admitInput(handler, 'ses_other', { id: 'inp_x', prompt: 'kept', wake: false });
    await fold();
    const record = await deleteNatsSession(log, systemClock, sequentialIds('del'), 'ses_race', { by: 'dpo' });
    // the id is used again before this worker reads the audit record, and its projector folds it
    await admitInput(new CommandHandler(log, systemClock, sequentialIds('new')), 'ses_race', { id: 'inp_new', prompt: 'new words', wake: false });
    await fold();

    assert.ok(await applyDeletion(db, log, projector, record));
    new Projector(fresh).apply(await log.readAll());
    const rows = projectionRows(db);
    const expected = projectionRows(fresh);
    assert.equal(rows, expected, 'the projection equals a fresh one of what the stream holds');
    assert.equal(
      (db.prepare("SELECT id FROM session_input WHERE session_id = 'ses_race'").all() as { id: string }[]).map((r) => r.id),
      ['inp_new'],
    );
    assert.not.ok(await applyDeletion(db, log, projector, record), 'applied once');
    // the projector goes on from its checkpoint: the new session's next event is folded once
    await admitInput(handler, 'ses_race', { id: 'inp_next', prompt: 'more', wake: false });
    await fold();
    assert.is((db.prepare("SELECT COUNT(*) AS n FROM session_input WHERE session_id = 'ses_race'").get() as { n: number }).n, 2);
  } finally {
    db.close();
    fresh.close();
    await log.close();
  }
});

s.run();
