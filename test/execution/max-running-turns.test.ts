/**
 * Turns per worker (`maxRunningTurns`): past the limit a woken session is not claimed (no lease, so
 * another worker may take it; `resume` answers requested) and starts here, in the order sessions
 * asked, as turns end. The pure slot book is tested first; the real-process test is
 * test/cli/max-running-turns.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TurnSlots } from '../../src/execution/turn-slots.ts';
import type { Runner } from '../../src/runner/types.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { count, fixture } from '../support/fixture.ts';

test('turn slots - past max a session waits; a freed slot goes to the first waiting, who is woken; one not taken is given back', () => {
  const woken: string[] = [];
  const slots = new TurnSlots(2, (id) => woken.push(id));
  assert.ok(slots.take('a'));
  assert.ok(slots.take('b'));
  assert.not.ok(slots.take('c'));
  assert.not.ok(slots.take('d'));
  assert.not.ok(slots.take('c'), 'waiting once, in its first place');
  assert.equal(slots.stats, { running: 2, waiting: 2 });
  slots.release();
  assert.equal(woken, ['c'], 'the first waiting is woken with the slot');
  assert.not.ok(slots.take('e'), 'a newcomer does not take the slot handed to c');
  assert.ok(slots.take('c'));
  slots.release();
  assert.equal(woken, ['c', 'd']);
  slots.done('d'); // d had nothing to run after all: its slot goes on
  assert.equal(woken, ['c', 'd', 'e']);
  slots.done('e');
  slots.release();
  assert.equal(slots.stats, { running: 0, waiting: 0 }, 'every slot back');
});

test('max running turns - 6 sessions woken at once with a limit of 2: never more than 2 turns run, none is claimed while waiting, all settle in the order woken', async () => {
  const fx = fixture();
  let running = 0;
  let most = 0;
  const started: string[] = [];
  const release: (() => void)[] = [];
  const runner: Runner = async (ctx) => {
    running++;
    most = Math.max(most, running);
    started.push(ctx.sessionId);
    await new Promise<void>((r) => release.push(r));
    running--;
  };
  const a = fx.service({ runner, maxRunningTurns: 2 });
  const ids = Array.from({ length: 6 }, (_, i) => `ses_m${i}`);
  for (const id of ids) await fx.admit(a, id, { prompt: 'go', wake: false });
  const results = [];
  for (const id of ids) results.push((await a.resume(id)).status);
  assert.equal(results, ['started', 'started', 'requested', 'requested', 'requested', 'requested']);
  for (const id of ids.slice(2)) assert.is(count(await fx.events(id), 'execution.claimed'), 0, `${id} holds no lease while it waits`);
  let done = 0;
  while (done < ids.length) {
    await waitFor(() => release.length > 0, { what: 'a turn to run' });
    release.shift()!();
    done++;
    assert.ok(running <= 2);
  }
  for (const id of ids) await a.awaitIdle(id);
  await waitFor(
    async () => {
      for (const id of ids) if (count(await fx.events(id), 'execution.settled') !== 1) return false;
      return true;
    },
    { what: 'every turn settled' },
  );
  assert.is(most, 2, 'at most 2 at once');
  assert.equal(started, ids, 'in the order they were woken');
  await fx.close();
});

test('max running turns - a session with more to run goes behind those waiting (one busy session cannot keep a slot)', async () => {
  const fx = fixture();
  const started: string[] = [];
  const release: (() => void)[] = [];
  const runner: Runner = async (ctx) => {
    started.push(ctx.sessionId);
    await new Promise<void>((r) => release.push(r));
  };
  const a = fx.service({ runner, maxRunningTurns: 1 });
  await fx.admit(a, 'ses_busy', { prompt: 'one', wake: false });
  await a.resume('ses_busy');
  await waitFor(() => release.length === 1, { what: 'the first turn' });
  await fx.admit(a, 'ses_busy', { prompt: 'two', wake: false });
  await a.resume('ses_busy'); // running here: it will run 'two' next
  await fx.admit(a, 'ses_other', { prompt: 'mine', wake: false });
  assert.is((await a.resume('ses_other')).status, 'requested');
  for (let i = 0; i < 3; i++) {
    await waitFor(() => release.length === 1, { what: `turn ${i + 1}` });
    release.shift()!();
  }
  await a.awaitIdle('ses_busy');
  await a.awaitIdle('ses_other');
  assert.equal(started, ['ses_busy', 'ses_other', 'ses_busy'], 'the waiting session ran before the busy one’s next turn');
  await fx.close();
});

test('max running turns - must be a whole number >= 1', () => {
  const fx = fixture();
  assert.throws(() => fx.service({ runner: async () => {}, maxRunningTurns: 0 }), /maxRunningTurns/);
  void fx.close();
});

test.run();
