/**
 * The follow's gate: the follow takes no batch while a view is answered nor during the grace after
 * it, and does while a view waits aside (for the follow itself) or once the inspector closes.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FollowGate } from '../../src/inspector/follow-gate.ts';

/** Whether `p` has settled after the pending I/O callbacks and microtasks have run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  return done;
}

test('follow gate - open with no view; held while a view is answered, open after it and the grace', async () => {
  const gate = new FollowGate(5);
  assert.ok(await settled(gate.turn()), 'no view: the follow goes on');
  gate.enter();
  const turn = gate.turn();
  assert.not.ok(await settled(turn), 'held while the view is answered');
  gate.leave();
  await turn; // released by the grace's timer
  gate.close();
});

test('follow gate - a connection holds it for the grace; a view waiting aside lets it run', async () => {
  const gate = new FollowGate(60_000);
  gate.connected();
  const held = gate.turn();
  assert.not.ok(await settled(held), 'a connection just opened holds the follow');
  gate.enter();
  let release!: () => void;
  const waiting = gate.aside(new Promise<void>((r) => (release = r)));
  assert.ok(await settled(held), 'the only view steps aside: the follow runs, grace or not');
  assert.ok(await settled(gate.turn()), 'and keeps running while it waits');
  gate.enter();
  const other = gate.turn();
  assert.not.ok(await settled(other), 'another view being answered holds it again');
  release();
  await waiting;
  gate.leave();
  gate.leave();
  gate.close();
  assert.ok(await settled(other), 'closing lets it go');
});

test.run();
