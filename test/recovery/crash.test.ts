/**
 * Real worker processes killed with SIGKILL at several points of a turn, and one frozen with
 * SIGSTOP past its lease. A second real worker recovers the session after the (short) lease
 * expires; the final rows are what a user would read.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { admitInput } from '../../src/input/admit.ts';
import { auditLog } from '../../src/audit/audit-log.ts';
import { sessionRows } from '../../src/projector/queries.ts';
import { parseMessage } from '../../src/projector/message-rows.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { closeSharedFiles, sharedFile } from '../support/processes.ts';

const LEASE = { leaseMs: 1_500, heartbeatMs: 400, sweepMs: 300 };

async function setup(name: string) {
  const fixture = sharedFile(name);
  await admitInput(fixture.handler, 'ses_k', { id: 'inp_user', prompt: 'please send the invoice to bob', wake: false });
  return fixture;
}

// A test that fails before its cleanup must not leave workers running (they would keep the suite alive).
test.after.each(closeSharedFiles);

const ofType = <T extends SessionEvent['type']>(events: SessionEvent[], type: T) => events.filter((e) => e.type === type) as SessionEvent<T>[];

for (const point of ['after-claim', 'mid-step', 'mid-tool'] as const) {
  test(`SIGKILL ${point}: a second worker recovers after the lease expires; the continuation runs once`, async () => {
    const s = await setup(point);
    const a = s.spawn({ mode: 'work', runner: `crash:${point}`, sessions: ['ses_k'], ...LEASE });
    const claimed = await a.waitForLine((l) => l.startsWith('CLAIMED '));
    const stale = claimed.split(' ')[2]!;
    await a.waitForLine((l) => l === `POINT ${point}`);
    const b = s.spawn({ mode: 'work', sessions: [], ...LEASE });
    await b.waitForLine((l) => l.startsWith('READY'));
    a.child.kill('SIGKILL');
    await a.exited;
    await b.waitForLine((l) => l.startsWith('SETTLED ses_k') && !l.includes(stale), 20_000);
    const events = await s.log.readSession('ses_k');
    assert.equal(auditLog(events), [], 'no two owners, no zombie writes, recovered once');
    const completed = ofType(events, 'recovery.completed');
    assert.is(completed.length, 1, 'recovered once');
    assert.is(completed[0]!.payload.executionId, stale);
    assert.is(completed[0]!.payload.phase, point === 'after-claim' ? 'safe' : 'unknown');
    const continuation = ofType(events, 'input.admitted').filter((e) => e.payload.source === 'recovery');
    assert.is(continuation.length, 1, 'one continuation');
    assert.is(ofType(events, 'input.promoted').filter((e) => e.payload.inputId === continuation[0]!.payload.inputId).length, 1, 'it ran once');
    assert.is(ofType(events, 'execution.claimed').length, 2);
    // the rows tell the story
    await waitFor(() => sessionRows(s.db, 'ses_k').recoveries.some((r) => r.wake_pending === 0), { timeoutMs: 10_000, what: 'the projection to catch up' });
    const rows = sessionRows(s.db, 'ses_k');
    assert.equal(rows.executions, [], 'no live or unrecovered execution left');
    assert.equal(
      rows.inputs.map((i) => [i.id, i.promoted_seq !== null]),
      [
        ['inp_user', true],
        [continuation[0]!.payload.inputId, true],
      ],
    );
    // the wake landed: by the sweep's counted attempt, or first by the worker that saw the continuation admitted
    assert.equal(
      rows.recoveries.map((r) => [r.execution_id, r.wake_pending, r.wake_attempts <= 1]),
      [[stale, 0, true]],
    );
    const assistants = rows.messages
      .filter((m) => m.type === 'assistant')
      .map(
        (m) => parseMessage(m).data as unknown as { executionId: string; status: string; tools: { name: string; state: string; error?: { type: string } }[] },
      );
    const interrupted = assistants.filter((m) => m.executionId === stale);
    if (point === 'after-claim') assert.equal(interrupted, [], 'no step had started');
    else {
      assert.equal(
        interrupted.map((m) => m.status),
        ['recovered'],
        'the interrupted assistant is sealed',
      );
      if (point === 'mid-tool')
        assert.equal(
          interrupted[0]!.tools.map((t) => [t.name, t.state, t.error?.type]),
          [['send_invoice', 'error', 'interrupted']],
        );
    }
    assert.ok(
      assistants.filter((m) => m.executionId !== stale).every((m) => m.status === 'completed'),
      'the continuation completed',
    );
    await s.close();
  });
}

test('SIGKILL after settle: nothing to recover, nothing rerun', async () => {
  const s = await setup('settled');
  const a = s.spawn({ mode: 'work', runner: 'crash:after-settle', sessions: ['ses_k'], ...LEASE });
  await a.waitForLine((l) => l.startsWith('SETTLED ses_k'));
  a.child.kill('SIGKILL');
  await a.exited;
  const b = s.spawn({ mode: 'work', sessions: [], ...LEASE });
  await b.waitForLine((l) => l.startsWith('READY'));
  const until = Date.now() + LEASE.leaseMs + 3 * LEASE.sweepMs + 500;
  await waitFor(() => Date.now() > until, { timeoutMs: 10_000, what: 'the lease and a few sweeps to pass' });
  const events = await s.log.readSession('ses_k');
  assert.is(ofType(events, 'recovery.started').length, 0);
  assert.is(ofType(events, 'execution.claimed').length, 1);
  assert.not.ok(
    b.lines.some((l) => l.startsWith('RUN')),
    'the second worker ran nothing',
  );
  await s.close();
});

test('SIGSTOP past the lease, then SIGCONT: the frozen owner is fenced and its runner stops with the claim-lost defect', async () => {
  const s = await setup('frozen');
  // it stops itself once its second step is committed: outside any SQLite transaction, so the other
  // worker can take the write lock and fence it (frozen inside one, nobody could: docs/operating.md)
  const a = s.spawn({ mode: 'work', sessions: ['ses_k'], echoSteps: 200, echoDelayMs: 50, stopAfterAppend: { type: 'step.ended', count: 2 }, ...LEASE });
  const claimed = await a.waitForLine((l) => l.startsWith('CLAIMED '));
  const stale = claimed.split(' ')[2]!;
  const b = s.spawn({ mode: 'work', sessions: [], echoSteps: 1, ...LEASE });
  const stopped = await a.waitForLine((l) => l.startsWith('STOPPED ses_k '));
  const frozenAt = Number(stopped.split(' ')[2]);
  await b.waitForLine((l) => l.startsWith('READY'));
  // deadlines, not sleeps: generous for a loaded machine (the sweep and takeover are slow there, never skipped)
  await b.waitForLine((l) => l.startsWith('CLAIMED ses_k'), 60_000);
  a.child.kill('SIGCONT');
  await a.waitForLine((l) => l === `CLAIM_LOST ses_k ${stale}`, 60_000);
  await b.waitForLine((l) => l.startsWith('SETTLED ses_k'), 60_000);
  const events = await s.log.readSession('ses_k');
  assert.equal(auditLog(events), [], 'nothing written by the frozen owner after its lease expired');
  // the frozen owner's own writes (recovery's events about its execution are the other worker's)
  const mine = events.filter(
    (e) =>
      (e.payload as { executionId?: string }).executionId === stale && !e.type.startsWith('recovery.') && !['step.recovered', 'tool.failed'].includes(e.type),
  );
  assert.ok(mine.filter((e) => e.type === 'step.ended').length >= 2, 'it stopped after its second step');
  const late = mine.filter((e) => e.time > frozenAt);
  assert.equal(
    late.map((e) => `${e.seq} ${e.type} +${e.time - frozenAt}ms`),
    [],
    'its last own write predates the freeze',
  );
  assert.is(ofType(events, 'execution.settled').filter((e) => e.payload.executionId === stale).length, 0, 'it never settled');
  await s.close();
});

test.run();
