/**
 * `sessiond start --runner openai` from the command line, against the local OpenAI-compatible
 * server: the key from OPENAI_API_KEY, tools from a module; and a worker SIGKILLed while a durable
 * tool runs: another worker recovers the turn, retries the call with its original idempotency key,
 * and asks the model to go on with the whole history.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { startFakeOpenAI, messageText, rateLimited, serverError, type FakeOpenAI, type ScriptStep } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';

const TOOLS = fileURLToPath(new URL('./fixtures/tools.ts', import.meta.url));
const said = (messages: { role: string }[]) => messages.map((m) => `${m.role}: ${messageText(m as never)}`);

test('cli - start --runner openai runs a conversation with a tool from a module, the key from OPENAI_API_KEY', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI({ apiKey: 'sk-cli' });
  const db = tmp.file('chat.db');
  const charges = tmp.file('charges.log');
  server.script(
    { kind: 'toolCalls', calls: [{ id: 'call_c1', name: 'charge', arguments: { cents: 250 } }], usage: { prompt_tokens: 30, completion_tokens: 8 } },
    { kind: 'text', text: 'Charged 2.50.', usage: { prompt_tokens: 45, completion_tokens: 4 } },
  );
  const worker = startCli(['start', '--db', db, '--runner', 'openai', '--model', 'fake-model', '--base-url', server.url, '--tools', TOOLS], {
    env: { OPENAI_API_KEY: 'sk-cli', CHARGES_FILE: charges },
  });
  try {
    await worker.waitFor('send it a prompt');
    assert.match(worker.output(), `with the openai runner (model fake-model at ${server.url})`);
    await runCli(['prompt', 'ses_cli', 'charge me 2.50', '--db', db]);
    await worker.waitFor('ses_cli  turn succeeded');
    assert.match(worker.output(), 'ses_cli  Charged 2.50.');
    assert.is(server.requests[0]!.headers.authorization, 'Bearer sk-cli');
    assert.equal(
      server.requests[0]!.chat!.tools!.map((t) => t.function.name),
      ['charge', 'note'],
    );
    assert.equal(readFileSync(charges, 'utf8').trim().split(' ')[1], '250', 'the tool ran once');
    const status = await runCli(['status', 'ses_cli', '--db', db]);
    assert.match(status.stdout, /tokens\s+75 in, 12 out/);
  } finally {
    worker.child.kill('SIGTERM');
    await worker.exited;
    await server.close();
    tmp.remove();
  }
});

test('cli - each model retry is said in the worker log in plain words, with its wait, on one line however many lines the message has', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  const db = tmp.file('retry.db');
  server.script(
    rateLimited({ retryAfterMs: 40, message: 'Rate limit reached for requests' }),
    serverError('The server had an error\n  while processing your request.\nTraceback (most recent call last):'),
    {
      kind: 'text',
      text: 'Made it.',
    },
  );
  const worker = startCli(['start', '--db', db, '--runner', 'openai', '--model', 'fake-model', '--base-url', server.url]);
  try {
    await worker.waitFor('send it a prompt');
    await runCli(['prompt', 'ses_retry', 'hello', '--db', db]);
    await worker.waitFor('ses_retry  turn succeeded');
    const said = worker
      .output()
      .split('\n')
      .filter((l) => l.includes('model request failed'));
    assert.equal(said[0], 'ses_retry  model request failed: 429 Rate limit reached for requests (HTTP 429); sending it again in 40 ms (attempt 2)');
    assert.match(
      said[1] ?? '',
      /^ses_retry {2}model request failed: 500 The server had an error while processing your request\. Traceback \(most recent call last\): \(HTTP 500\); sending it again in (\d+ ms|1\.0 s) \(attempt 3\)$/,
    );
    assert.is(said.length, 2, said.join('\n'));
    assert.is(server.requests.length, 3);
  } finally {
    worker.child.kill('SIGTERM');
    await worker.exited;
    await server.close();
    tmp.remove();
  }
});

/**
 * Worker A (with `envA`) takes `prompt`; once `killPoint` resolves it is SIGKILLed; the server is
 * scripted with `then`, and worker B (same file, short leases) must recover the turn and finish it.
 * Returns B's output and what the model was sent on the request after the crash.
 */
async function crashThenRecover(o: {
  sessionId: string;
  prompt: string;
  first: ScriptStep;
  then: ScriptStep;
  tools?: boolean;
  envA?: NodeJS.ProcessEnv;
  envB?: NodeJS.ProcessEnv;
  killPoint: (server: FakeOpenAI) => Promise<unknown>;
}) {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  const db = tmp.file('crash.db');
  const flags = [
    'start',
    '--db',
    db,
    '--runner',
    'openai',
    '--model',
    'fake-model',
    '--base-url',
    server.url,
    ...(o.tools ? ['--tools', TOOLS] : []),
    '--lease-ms',
    '1500',
    '--heartbeat-ms',
    '500',
    '--sweep-ms',
    '300',
  ];
  server.script(o.first);
  const a = startCli(flags, { env: o.envA ?? {} });
  let b: ReturnType<typeof startCli> | undefined;
  try {
    await a.waitFor('send it a prompt');
    await runCli(['prompt', o.sessionId, o.prompt, '--db', db]);
    await o.killPoint(server);
    a.child.kill('SIGKILL');
    await a.exited;
    server.script(o.then);
    b = startCli(flags, { env: o.envB ?? {} });
    await b.waitFor(`${o.sessionId}  turn succeeded`, 20_000);
    const status = await runCli(['status', o.sessionId, '--db', db]);
    return { output: b.output(), resumed: said(server.requests[1]!.chat!.messages), status: status.stdout };
  } finally {
    a.child.kill('SIGKILL');
    b?.child.kill('SIGTERM');
    await b?.exited;
    await server.close();
    tmp.remove();
  }
}

test('cli - a worker SIGKILLed during a durable tool: another recovers the turn, retries the call with its key, and continues with the history', async () => {
  const dir = tempDir();
  const charges = dir.file('charges.log');
  const charged = () => existsSync(charges) && readFileSync(charges, 'utf8').includes(' 500');
  const run = await crashThenRecover({
    sessionId: 'ses_crash',
    prompt: 'charge me 5 dollars',
    tools: true,
    first: { kind: 'toolCalls', calls: [{ id: 'call_k1', name: 'charge', arguments: { cents: 500 } }] },
    then: { kind: 'text', text: 'Charged 5 dollars; done.' },
    envA: { CHARGES_FILE: charges, CHARGE_HANGS: '1' },
    envB: { CHARGES_FILE: charges },
    killPoint: () => waitFor(charged, { what: 'the charge to start' }),
  });
  assert.match(run.output, 'recovered expired execution');
  const keys = readFileSync(charges, 'utf8')
    .trim()
    .split('\n')
    .map((l) => l.split(' ')[0]);
  assert.is(keys.length, 2, 'the durable call ran again once');
  assert.is(keys[0], keys[1], 'with the same idempotency key');
  assert.is(run.resumed[0], 'user: charge me 5 dollars', 'the original prompt');
  assert.ok(
    run.resumed.some(
      (m) =>
        m ===
        "user: Your previous answer was interrupted while it called tools (the worker running it stopped). Continue from there: the calls' results say what ran.",
    ),
    `the continuation, in plain words: ${run.resumed.join(' | ')}`,
  );
  assert.not.match(run.resumed.join('\n'), /exe_|own_|inp_|msg_/, 'no internal ids reach the model');
  assert.ok(
    run.resumed.some((m) => m.startsWith('tool: ') && m.includes('"charged":500')),
    "the retried call's result",
  );
  dir.remove();
});

test('cli - a worker SIGKILLed while three calls of one response run at once: each durable one runs again once with its key, the other is not rerun', async () => {
  const dir = tempDir();
  const charges = dir.file('charges.log');
  const notes = dir.file('notes.log');
  const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
  const run = await crashThenRecover({
    sessionId: 'ses_batch',
    prompt: 'charge twice and note it',
    tools: true,
    first: {
      kind: 'toolCalls',
      calls: [
        { id: 'call_b1', name: 'charge', arguments: { cents: 100 } },
        { id: 'call_b2', name: 'charge', arguments: { cents: 200 } },
        { id: 'call_b3', name: 'note', arguments: { text: 'charged' } },
      ],
    },
    then: { kind: 'text', text: 'Both charged.' },
    envA: { CHARGES_FILE: charges, NOTES_FILE: notes, CHARGE_HANGS: '1' },
    envB: { CHARGES_FILE: charges, NOTES_FILE: notes },
    // all three hang: only running at once do they all start
    killPoint: () => waitFor(() => lines(charges).length === 2 && lines(notes).length === 1, { what: 'the three calls running at once' }),
  });
  assert.match(run.output, 'recovered expired execution');
  const byCents = new Map<string, string[]>();
  for (const [key, cents] of lines(charges).map((l) => l.split(' '))) byCents.set(cents!, [...(byCents.get(cents!) ?? []), key!]);
  assert.equal([...byCents.keys()].sort(), ['100', '200']);
  for (const [cents, keys] of byCents) {
    assert.is(keys.length, 2, `the ${cents} charge ran again once`);
    assert.is(keys[0], keys[1], `the ${cents} charge kept its idempotency key`);
  }
  assert.is(lines(notes).length, 1, 'the non-durable call was not run again');
  assert.ok(
    run.resumed.some((m) => m.includes('"charged":100')) && run.resumed.some((m) => m.includes('"charged":200')),
    `both retried results reach the model: ${run.resumed.join(' | ')}`,
  );
  dir.remove();
});

test('cli - a worker SIGKILLed mid-stream: another recovers the turn and continues it with the original prompt in the history', async () => {
  const run = await crashThenRecover({
    sessionId: 'ses_mid',
    prompt: 'tell me a story',
    first: { kind: 'hang', text: 'Once upon' },
    then: { kind: 'text', text: 'Once upon a time, the end.' },
    killPoint: (server) => server.waitForRequest(1),
  });
  assert.match(run.output, 'recovered expired execution');
  assert.is(run.resumed[0], 'user: tell me a story', 'the original prompt');
  assert.match(run.resumed.at(-1)!, /^user: Your previous answer was (cut off|interrupted)/, 'then the continuation, in plain words');
  assert.not.match(run.resumed.join('\n'), /exe_|own_|inp_|msg_/, 'no internal ids reach the model');
  assert.match(run.status, 'last turn succeeded');
});

test.run();
