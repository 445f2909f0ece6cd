/**
 * Admission and text that cannot be stored as sent: a prompt with an unpaired UTF-16 surrogate would
 * be written as U+FFFD (events are UTF-8), so an exact resend of the same admit compared unequal
 * with what was stored and got input_conflict. Admission refuses such a prompt, the same way every
 * time; proper pairs are admitted and resent as before.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/errors.ts';
import { parseAdmitRequest } from '../../src/input/admit.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { fixture } from '../support/fixture.ts';

test('lone surrogate - an exact resend of an admit with a lone surrogate gets the same refusal, never input_conflict', async () => {
  const fx = fixture();
  const a = fx.service({ runner: echoRunner() });
  for (const [prompt, index] of [
    ['ab\ud800cd', 2],
    ['\udc00', 0],
    ['ok \ud83d\ude00 then \ude00', 11],
    ['end\ud83d', 3],
  ] as const) {
    const request = { id: 'inp_lone', prompt, wake: false };
    const why = `prompt contains an unpaired UTF-16 surrogate at index ${index}: send valid Unicode`;
    const first = await expectCode(fx.admit(a, 'ses_lone', request), ErrorCode.InvalidOption, why);
    const again = await expectCode(fx.admit(a, 'ses_lone', request), ErrorCode.InvalidOption, why);
    assert.is(again.message, first.message, 'the same answer both times');
  }
  assert.is((await fx.events('ses_lone')).length, 0, 'nothing admitted');
  // the same rule in the parser the command service runs before the engine
  expectCode(() => parseAdmitRequest('ses_lone', { prompt: 'x\ud800' }), ErrorCode.InvalidOption, 'unpaired UTF-16 surrogate at index 1');
  await fx.close();
});

test('lone surrogate - prompts with proper pairs are admitted, and an exact resend is the same input', async () => {
  const fx = fixture();
  const a = fx.service({ runner: echoRunner() });
  const request = { id: 'inp_pair', prompt: 'smile \ud83d\ude00, 𝄞 and ü', wake: false };
  const first = await fx.admit(a, 'ses_pair', request);
  const again = await fx.admit(a, 'ses_pair', request);
  assert.equal([first.created, again.created, again.admittedSeq], [true, false, first.admittedSeq]);
  const [event] = await fx.events('ses_pair');
  assert.is(event?.type === 'input.admitted' ? event.payload.prompt : undefined, request.prompt, 'stored exactly as sent');
  await fx.close();
});

test.run();
