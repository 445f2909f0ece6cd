/**
 * What a client sees on NATS when the worker answering it is SIGKILLed mid-answer: two real
 * `sessiond start --nats` workers, a slow OpenAI-compatible model, and a subscriber
 * (`SessiondClient.subscribe`, the client user). It sees the answer recorded as it streams
 * (`text.streamed`, committed), then, from the worker that takes the turn over, `turn.interrupted`
 * saying how much of the answer to keep; the continuation sent to the model holds the partial
 * answer and plain words, no internal ids.
 */
import * as assert from 'uvu/assert';
import { cliSuite, natsWorker } from './cli-suite.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { SessiondClient } from '../../src/client/client.ts';
import type { LiveMessage } from '../../src/nats/live-bus.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { assistantText, emptyTranscript, foldTranscript, type TranscriptItem } from '../../src/events/transcript.ts';
import { startFakeOpenAI, messageText } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';

const s = cliSuite('interrupted turn on NATS');
const SESSION = 'ses_story_nats';
const WORDS = Array.from({ length: 60 }, (_, i) => `word${i} `);
const FULL = WORDS.join('');

s(
  'interrupted turn (NATS) - SIGKILL mid-answer: the subscriber sees the answer recorded as it streamed, then turn.interrupted with what to keep; the continuation speaks plain words',
  async (ctx) => {
    const server = await startFakeOpenAI();
    const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
    try {
      const flags = [
        '--runner',
        'openai',
        '--model',
        'fake-model',
        '--base-url',
        server.url,
        '--lease-ms',
        '1500',
        '--heartbeat-ms',
        '500',
        '--sweep-ms',
        '300',
      ];
      server.script({ kind: 'text', text: WORDS, delayMs: 100 });
      const a = await natsWorker(ctx, 'interrupt-a.db', 0, flags);
      const seen: LiveMessage[] = [];
      const sub = await client.subscribe({ sessionId: SESSION }, (e) => {
        seen.push(e);
      });
      await client.admit(SESSION, { prompt: 'tell me a story' });
      await waitFor(() => seen.some((e) => e.type === 'text.streamed'), { timeoutMs: 15_000, what: 'the answer to be recorded while it streams' });
      a.child.kill('SIGKILL');
      await a.exited;
      server.script({ kind: 'text', text: ['the ', 'end.'], delayMs: 50 });
      await natsWorker(ctx, 'interrupt-b.db', 0, flags);
      const claimed = seen.find((e) => e.type === 'execution.claimed')!.payload as { executionId: string; ownerId: string };
      const interrupted = claimed.executionId;
      const execution = (e: LiveMessage) => (e.payload as { executionId?: string }).executionId;
      await waitFor(() => seen.some((e) => e.type === 'execution.settled' && execution(e) !== interrupted), {
        timeoutMs: 30_000,
        what: 'the continuation to settle',
      });
      await sub.close();
      const committed = seen.filter((e) => e.seq !== undefined) as unknown as SessionEvent[];
      const step = committed.find((e): e is SessionEvent<'step.started'> => e.type === 'step.started')!;
      const item = foldTranscript(emptyTranscript, committed).items.find(
        (i): i is Extract<TranscriptItem, { type: 'assistant' }> => i.type === 'assistant' && i.messageId === step.payload.messageId,
      )!;
      const recorded = assistantText(item);
      assert.is(item.status, 'recovered');
      assert.ok(recorded.length > 0 && recorded.length < FULL.length && FULL.startsWith(recorded), `a partial answer: ${JSON.stringify(recorded)}`);
      const told = seen.filter((e) => e.type === 'turn.interrupted');
      assert.equal(
        told.map((e) => e.payload),
        [
          {
            executionId: interrupted,
            ownerId: claimed.ownerId,
            reason: 'lease_expired',
            messageId: step.payload.messageId,
            recorded: [{ partId: `prt_${step.payload.messageId.slice(4)}_t`, length: recorded.length }],
            continuationInputId: `inp_cont_${interrupted}`,
          },
        ],
      );
      // told right after the takeover it follows, before the continuation's claim
      const at = (t: string) => seen.findIndex((e) => e.type === t);
      assert.ok(at('recovery.started') < at('turn.interrupted'), 'after the takeover');
      const continued = seen.findIndex((e) => e.type === 'execution.claimed' && execution(e) !== interrupted);
      const firstDelta = seen.findIndex((e, i) => i > continued && e.type === 'text.delta');
      assert.ok(at('turn.interrupted') < firstDelta, 'before the continuation streams');
      const messages = server.requests[1]!.chat!.messages;
      assert.equal(
        messages.map((m) => [m.role, messageText(m)]),
        [
          ['user', 'tell me a story'],
          ['assistant', recorded],
          [
            'user',
            'Your previous answer was cut off before it was finished (the worker running it stopped). Continue it from exactly where it stops, without repeating what is already written.',
          ],
        ],
      );
      assert.not.match(JSON.stringify(messages), /exe_|own_|inp_|msg_|prt_/, 'no internal id reaches the model');
    } finally {
      await client.close();
      await server.close();
    }
  },
);

s.run();
