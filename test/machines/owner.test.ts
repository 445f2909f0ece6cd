/**
 * Session owners in the machine, pure: the first admission (or fork) fixes the owner, an admission
 * naming another is refused `not_owner` before anything about its inputs is said, and a session
 * with no owner takes anyone's admission and stays ownerless.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Command } from '../../src/machines/commands.ts';
import { ev } from '../../src/testing/fixtures.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const spec = deciderSpec('ses_o');
const admit = (inputId: string, owner?: string): Command => ({
  type: 'admit',
  now: 1,
  inputId,
  prompt: 'p',
  delivery: 'queue',
  wake: false,
  ...(owner === undefined ? {} : { owner }),
});

test('owner - the creating admission records its owner; the session holds it', () => {
  const s = spec
    .given([])
    .when(admit('inp_1', 'acme'))
    .then((events) => assert.is((events[0]!.payload as { owner?: string }).owner, 'acme'));
  assert.is(s.snapshot.context.ownedBy, 'acme');
  // the owner's later admissions carry no owner: it was fixed once
  s.when(admit('inp_2', 'acme')).then((events) => assert.is((events[0]!.payload as { owner?: string }).owner, undefined));
});

test('owner - another owner is refused, before its input id is looked at; a trusted admission (no owner) gets in', () => {
  const s = spec.given([ev('input.admitted', { inputId: 'inp_1', owner: 'acme' })]);
  s.when(admit('inp_2', 'globex')).thenRefused('not_owner');
  s.when(admit('inp_1', 'globex')).thenRefused('not_owner'); // not already_admitted: nothing about acme's inputs
  const trusted = s.when(admit('inp_3')).thenAccepted();
  assert.is(trusted.snapshot.context.ownedBy, 'acme');
});

test('owner - a session with no owner takes an owner’s admission and stays ownerless', () => {
  const s = spec.given([ev('input.admitted', { inputId: 'inp_1' })]);
  const after = s.when(admit('inp_2', 'acme')).then((events) => assert.is((events[0]!.payload as { owner?: string }).owner, undefined));
  assert.is(after.snapshot.context.ownedBy, null);
  after.when(admit('inp_3', 'globex')).thenAccepted();
});

test('owner - a fork records its owner on its first event', () => {
  const s = spec
    .given([])
    .when({ type: 'fork', now: 1, from: { sessionId: 'ses_src', seq: 3 }, transcript: [], owner: 'acme' })
    .thenAccepted();
  assert.is(s.snapshot.context.ownedBy, 'acme');
  s.when(admit('inp_9', 'globex')).thenRefused('not_owner');
});

test('owner - an owner on a later event (not the first) never sets it', () => {
  const s = spec.given([ev('input.admitted', { inputId: 'inp_1' }), ev('input.admitted', { inputId: 'inp_2', owner: 'acme' })]);
  assert.is(s.snapshot.context.ownedBy, null);
});

test.run();
