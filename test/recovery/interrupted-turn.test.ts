/**
 * What a client sees when the worker answering it is SIGKILLed mid-answer, with real processes on
 * one SQLite file and a slow OpenAI-compatible model: the answer streamed so far is in the log (at
 * most `STREAM_RECORD_MS` behind what streamed), the worker that recovers the turn says so and tells
 * live subscribers what to keep (`turn.interrupted`), and the continuation it sends the model holds
 * the partial answer and plain words, no internal ids.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { LocalLiveBus, type LiveEvent } from '../../src/events/live-bus.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { startWorker, type Worker } from '../../src/execution/worker.ts';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { assistantText, emptyTranscript, foldTranscript, type TranscriptItem } from '../../src/events/transcript.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { startFakeOpenAI, messageText, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { runCli, startCli, type LongRunning } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const SESSION = 'ses_story';
const WORDS = Array.from({ length: 60 }, (_, i) => `word${i} `);
const FULL = WORDS.join('');
const LEASE = ['--lease-ms', '1500', '--heartbeat-ms', '500', '--sweep-ms', '300'];
const CUT_OFF =
  'Your previous answer was cut off before it was finished (the worker running it stopped). Continue it from exactly where it stops, without repeating what is already written.';

/** The text the log holds of each part of `messageId` (folded as the transcript does). */
function recordedText(events: SessionEvent[], messageId: string): string {
  const item = foldTranscript(emptyTranscript, events).items.find(
    (i): i is Extract<TranscriptItem, { type: 'assistant' }> => i.type === 'assistant' && i.messageId === messageId,
  );
  return item ? assistantText(item) : '';
}

/**
 * Worker A (`sessiond start`, the openai runner) takes the prompt; the model streams a word every
 * 100 ms; once the log holds some of the answer, A is SIGKILLed. Returns what the test needs to
 * recover it.
 */
async function killMidAnswer(tmp: ReturnType<typeof tempDir>, server: FakeOpenAI) {
  const db = tmp.file('story.db');
  const flags = ['start', '--db', db, '--runner', 'openai', '--model', 'fake-model', '--base-url', server.url, ...LEASE];
  server.script({ kind: 'text', text: WORDS, delayMs: 100 });
  const a = startCli(flags);
  await a.waitFor('send it a prompt');
  await runCli(['prompt', SESSION, 'tell me a story', '--db', db]);
  const handle = openDatabase(db);
  const log = new SqliteEventLog(handle);
  // the log has some of the answer (recorded within STREAM_RECORD_MS of streaming, not at the end)
  await waitFor(async () => (await log.readSession(SESSION)).some((e) => e.type === 'text.streamed'), {
    timeoutMs: 15_000,
    what: 'the answer streamed so far to be recorded while it streams',
  });
  a.child.kill('SIGKILL');
  await a.exited;
  const events = await log.readSession(SESSION);
  const step = events.find((e): e is SessionEvent<'step.started'> => e.type === 'step.started')!;
  const recorded = recordedText(events, step.payload.messageId);
  assert.ok(recorded.length > 0 && recorded.length < FULL.length && FULL.startsWith(recorded), `a partial answer is recorded: ${JSON.stringify(recorded)}`);
  // the continuation's answer streams a little, so a subscriber sees it after the takeover
  server.script({ kind: 'text', text: ['the ', 'end.'], delayMs: 50 });
  return { db, flags, log, handle, executionId: step.payload.executionId, messageId: step.payload.messageId, recorded };
}

/** What the model was asked after the crash: the original prompt, the partial answer, the plain note; no internal ids. */
function checkContinuation(server: FakeOpenAI, recorded: string): void {
  const messages = server.requests[1]!.chat!.messages;
  assert.equal(
    messages.map((m) => [m.role, messageText(m)]),
    [
      ['user', 'tell me a story'],
      ['assistant', recorded],
      ['user', CUT_OFF],
    ],
  );
  assert.not.match(JSON.stringify(messages), /exe_|own_|inp_|msg_|prt_/, 'no internal id reaches the model');
}

test('interrupted turn - SIGKILL mid-answer, two sessiond start on one file: the partial answer is recorded, the recovering worker says so, the continuation goes on from it in plain words', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  let b: LongRunning | undefined;
  let a: Awaited<ReturnType<typeof killMidAnswer>> | undefined;
  try {
    const run = (a = await killMidAnswer(tmp, server));
    b = startCli(run.flags);
    await b.waitFor(`${SESSION}  turn succeeded`, 30_000);
    assert.match(
      b.output(),
      `${SESSION}  recovered expired execution ${run.executionId}; continuation inp_cont_${run.executionId} admitted; it goes on from the ${run.recorded.length} characters of the answer that were recorded`,
    );
    const events = await run.log.readSession(SESSION);
    assert.ok(
      events.some((e) => e.type === 'step.recovered' && e.payload.messageId === run.messageId),
      'the interrupted step is sealed',
    );
    assert.is(recordedText(events, run.messageId), run.recorded, 'sealed with the text recorded: nothing added or lost by the recovery');
    checkContinuation(server, run.recorded);
    const status = await runCli(['status', SESSION, '--db', run.db]);
    assert.match(status.stdout, 'last turn succeeded');
  } finally {
    b?.child.kill('SIGTERM');
    await b?.exited;
    a?.handle.close();
    await server.close();
    tmp.remove();
  }
});

test('interrupted turn - SIGKILL mid-answer: a live subscriber of the recovering worker hears the turn was interrupted, with what to keep, before the continuation streams', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  let engine: Engine | undefined;
  let worker: Worker | undefined;
  let a: Awaited<ReturnType<typeof killMidAnswer>> | undefined;
  try {
    const run = (a = await killMidAnswer(tmp, server));
    const live: LiveEvent[] = [];
    const bus = new LocalLiveBus();
    bus.subscribe((e) => live.push(e));
    // the recovering worker in this process, so its live bus is in reach (as startSessiond's is)
    engine = await openEngine({
      file: run.db,
      runner: openaiRunner({ model: 'fake-model', baseURL: server.url }),
      bus,
      leaseMs: 1500,
      heartbeatMs: 500,
    });
    worker = startWorker(engine.execution, { projection: engine.db, sweep: { intervalMs: 300 } });
    await waitFor(async () => (await run.log.readSession(SESSION)).some((e) => e.type === 'execution.settled' && e.payload.executionId !== run.executionId), {
      timeoutMs: 30_000,
      what: 'the continuation to run',
    });
    const told = live.findIndex((e) => e.type === 'turn.interrupted');
    assert.ok(told >= 0, `turn.interrupted was published: ${live.map((e) => e.type).join(', ')}`);
    assert.equal(live[told]!.payload, {
      executionId: run.executionId,
      ownerId: (await run.log.readSession(SESSION)).find((e) => e.type === 'execution.claimed')!.payload.ownerId,
      reason: 'lease_expired',
      messageId: run.messageId,
      recorded: [{ partId: `prt_${run.messageId.slice(4)}_t`, length: run.recorded.length }],
      continuationInputId: `inp_cont_${run.executionId}`,
    });
    const firstDelta = live.findIndex((e) => e.type === 'text.delta');
    assert.ok(firstDelta > told, 'the continuation streams after the subscriber was told');
    checkContinuation(server, run.recorded);
  } finally {
    await worker?.stop();
    await engine?.close();
    a?.handle.close();
    await server.close();
    tmp.remove();
  }
});

test.run();
