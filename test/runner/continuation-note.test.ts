/**
 * What the model runner tells the model when it continues a turn its worker did not finish: the
 * partial answer as the assistant's message, then a note in plain words it composes from the
 * continuation's data, never the stored prompt (a log written before this version stored one that
 * named the execution: "Continue the interrupted turn (execution exe_..., phase unknown)"). A call
 * the stop cut off is answered in plain words too.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Continuation } from '../../src/events/catalog.ts';
import { toModelMessages } from '../../src/runner/model/messages.ts';
import type { TranscriptItem } from '../../src/events/transcript.ts';

const continues = (o: Partial<Continuation> = {}): Continuation => ({
  executionId: 'exe_01a2',
  reason: 'interrupted',
  phase: 'unknown',
  inputIds: ['inp_1'],
  assistantMessageId: 'msg_01a2',
  retryTools: [],
  ...o,
});

const prompt: TranscriptItem = { type: 'user', inputId: 'inp_1', executionId: 'exe_01a2', text: 'tell me a story' };
const oldContinuation = (c: Continuation): TranscriptItem => ({
  type: 'user',
  inputId: `inp_cont_${c.executionId}`,
  executionId: 'exe_01b3',
  text: `Continue the interrupted turn (execution ${c.executionId}, phase ${c.phase}). Durable tool calls to retry with their idempotency keys: charge (ses_1:${c.executionId}:call_1).`,
  continues: c,
});

test('continuation note - a partial answer: the model gets it as its own message and is asked to go on from where it stops, no ids', () => {
  const c = continues();
  const messages = toModelMessages([
    prompt,
    { type: 'assistant', messageId: 'msg_01a2', executionId: 'exe_01a2', status: 'recovered', parts: [{ type: 'text', partId: 'prt_1', text: 'Once upon a' }] },
    oldContinuation(c),
  ]);
  assert.equal(messages, [
    { role: 'user', content: 'tell me a story' },
    { role: 'assistant', content: [{ type: 'text', text: 'Once upon a' }] },
    {
      role: 'user',
      content:
        'Your previous answer was cut off before it was finished (the worker running it stopped). Continue it from exactly where it stops, without repeating what is already written.',
    },
  ]);
});

test('continuation note - nothing recorded, a hand-back, tool calls cut off: each said in plain words, no ids', () => {
  const none = toModelMessages([prompt, oldContinuation(continues({ assistantMessageId: null, reason: 'handed_back' }))]);
  assert.equal(none.at(-1), {
    role: 'user',
    content: 'Your previous answer was interrupted before any of it was written (the worker running it was shut down). Answer again.',
  });
  const error = {
    type: 'interrupted',
    name: 'Interrupted',
    message: 'the owner own_9 of execution exe_01a2 lost its lease (expired at 2026-12-01T00:00:00.000Z); the call was not retried',
  };
  const tools = toModelMessages([
    prompt,
    {
      type: 'assistant',
      messageId: 'msg_01a2',
      executionId: 'exe_01a2',
      status: 'recovered',
      parts: [
        { type: 'tool', callId: 'call_1', name: 'charge', input: { cents: 5 }, durable: true, state: 'failed', error },
        { type: 'tool', callId: 'call_2', name: 'lookup', input: {}, durable: false, state: 'failed', error },
      ],
    },
    oldContinuation(continues()),
  ]);
  const said = JSON.stringify(tools);
  assert.match(said, 'interrupted: the call was cut off (the worker running it stopped) and no result was recorded; it is run again');
  assert.match(said, 'interrupted: the call was cut off (the worker running it stopped) and no result was recorded; it was not run again');
  assert.match(
    said,
    "Your previous answer was interrupted while it called tools (the worker running it stopped). Continue from there: the calls' results say what ran.",
  );
  assert.not.match(said, /exe_|own_|inp_|msg_|ses_/, 'no internal id reaches the model');
});

test.run();
