/**
 * One session view, derived once from the snapshot: who owns the session (only while its execution
 * is unfinished), whether the lease is live at a given time, the phase of the unfinished execution,
 * pending inputs without prompts, tokens. The engine's status, the inspector's summary and the CLI
 * show this same view.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sessionView } from '../../src/machines/session-view.ts';
import { summarize } from '../../src/inspector/store.ts';
import { hydrate } from '../../src/machines/decider.ts';
import { fixture, gatedRunner } from '../support/fixture.ts';

test('session view - owner and phase only while the execution is unfinished; the lease judged at the given time', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const svc = fx.service({ runner: gate.runner, ownerId: 'own_v', leaseMs: 30_000 });
  await fx.admit(svc, 'ses_v', { prompt: 'first' });
  await fx.admit(svc, 'ses_v', { prompt: 'queued', wake: false });
  void svc.wake('ses_v');
  await gate.started(1);
  await gate.runs[0]!.ctx.phase('unknown');
  const running = await svc.status('ses_v');
  const exec = running.context.execution!;
  const at = (now: number) => sessionView(running, now);
  assert.equal([at(0).owner, at(0).phase, at(0).outcome, at(0).leaseLive, at(0).leaseLeftMs], ['own_v', 'unknown', null, true, exec.expiresAt]);
  assert.equal(
    [at(exec.expiresAt).owner, at(exec.expiresAt).leaseLive, at(exec.expiresAt).leaseLeftMs],
    ['own_v', false, 0],
    'expired: still the owner of record, awaiting recovery',
  );
  assert.equal(
    at(0).pending.map((p) => Object.keys(p).includes('prompt')),
    [false],
    'no prompts in the view',
  );
  gate.runs[0]!.release();
  await gate.started(2);
  gate.runs[1]!.release();
  await svc.awaitIdle('ses_v');
  const done = sessionView(await svc.status('ses_v'), 0);
  assert.equal([done.owner, done.phase, done.outcome, done.leaseExpiresAt, done.executions], [null, null, 'succeeded', null, 2]);
  // the inspector's summary is the same view
  const events = await fx.events('ses_v');
  const summary = summarize(hydrate('ses_v', events), events.at(-1));
  assert.equal([summary.owner, summary.phase, summary.executionId, summary.pending], [done.owner, done.phase, done.executionId, done.pending.length]);
  await fx.close();
});

test.run();
