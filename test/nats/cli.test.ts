// `sessiond start --nats` and `sessiond prompt --nats` as real subprocesses against a harness server:
// the worker serves commands, a prompt admitted over NATS runs to success, SIGTERM stops it cleanly
// (exit 0); and the flags fail clearly when misused or when no worker is running.
import { as, cliSuite, natsWorker, type CliCtx } from './cli-suite.ts';
import * as assert from 'uvu/assert';
import { SessiondClient } from '../../src/client/client.ts';
import type { LiveMessage } from '../../src/nats/live-bus.ts';
import { startNatsServer, ADMIN, CLIENT, COMMANDS, OBSERVER, WORKER } from '../../src/testing/nats-server.ts';
import { runCli, startCli, type LongRunning } from '../support/cli.ts';
import { until } from './helpers.ts';
import { jetstream } from '@nats-io/jetstream';
import { connectNats } from '../../src/nats/connection.ts';
import { subjects } from '../../src/nats/subjects.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { quarantinedMessages } from '../../src/storage/sqlite/quarantine-store.ts';
import { waitFor } from '../../src/testing/wait.ts';

const s = cliSuite('sessiond start --nats');

/** A worker on the test server whose echo turns last a minute (so a turn is running when the test acts), serving commands. */
const slowWorker = (ctx: CliCtx, db: string): Promise<LongRunning> => natsWorker(ctx, db, 60_000);

s('cli start --nats - a worker on JetStream runs a prompt admitted with prompt --nats, streams it live, and stops on SIGTERM', async (ctx) => {
  const url = ctx.server.url;
  // the password from the environment, as recommended
  const worker = startCli(
    ['start', '--nats', url, '--nats-user', WORKER.user, '--nats-commands-user', COMMANDS.user, '--db', ctx.tmp.file('worker.db'), '--echo-delay-ms', '5'],
    { env: { SESSIOND_NATS_PASS: WORKER.pass, SESSIOND_NATS_COMMANDS_PASS: COMMANDS.pass } },
  );
  ctx.workers.push(worker);
  await worker.waitFor('send it a prompt');
  const out = worker.output();
  assert.match(out, `is running on NATS ${url} as user worker (stream SESSIOND_EVENTS)`);
  assert.match(
    out,
    'serving commands sessiond.cmd.admit, sessiond.cmd.wake, sessiond.cmd.cancel, sessiond.cmd.status, sessiond.cmd.drop, sessiond.cmd.resolve, sessiond.cmd.tag, sessiond.cmd.list, sessiond.cmd.fork, sessiond.cmd.events, sessiond.cmd.budget, sessiond.cmd.upload, sessiond.cmd.blob in queue group sessiond-workers',
  );
  assert.match(out, 'live events on sessiond.live.<session>.<type>');
  assert.not.match(out, WORKER.pass, 'the password is never printed');

  const watcher = await SessiondClient.connect({ connection: { servers: url, ...OBSERVER } });
  const seen: LiveMessage[] = [];
  await watcher.subscribe({ sessionId: 'ses_cli' }, (e) => {
    seen.push(e);
  });
  const admitted = await runCli(['prompt', 'ses_cli', 'hello over nats', '--nats', url, ...as(CLIENT), '--id', 'inp_cli']);
  assert.is(admitted.code, 0, admitted.stderr);
  assert.match(admitted.stdout, 'admitted inp_cli to ses_cli at sequence 1 (queue)');
  assert.match(admitted.stdout, 'a worker took the command and woke the session');
  await worker.waitFor('ses_cli  turn succeeded');
  assert.match(worker.output(), 'ses_cli  echo: hello');
  await until(seen, (e) => e.type === 'execution.settled', 'the settled turn on the live bus');
  assert.ok(
    seen.some((e) => e.type === 'text.delta'),
    'the deltas streamed live',
  );
  const replayed = await watcher.replay({ sessionId: 'ses_cli' });
  assert.is(replayed.at(-1)?.type, 'execution.settled');
  await watcher.close();

  const again = await runCli(['prompt', 'ses_cli', 'hello over nats', '--nats', url, ...as(CLIENT), '--id', 'inp_cli']);
  assert.match(again.stdout, 'already admitted inp_cli to ses_cli at sequence 1');

  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
  assert.match(worker.output(), 'SIGTERM: stopping');
  assert.match(worker.output(), 'stopped (nothing was running)');
});

s(
  'cli prompt --nats - no worker running, no server, bad flags, a refused user: clear errors and exit codes (69 unavailable, 77 no permission, 2 usage)',
  async (ctx) => {
    const url = ctx.server.url;
    const noWorker = await runCli(['prompt', 'ses_x', 'hi', '--nats', url, ...as(CLIENT)]);
    assert.is(noWorker.code, 69, 'unavailable (69), not a failure of the command (1) or a usage error (2)');
    assert.match(noWorker.stderr, 'No sessiond worker is serving sessiond.cmd.admit');
    const noServer = await runCli(['status', 'ses_x', '--nats', 'nats://127.0.0.1:1', ...as(CLIENT)]);
    assert.is(noServer.code, 69, `a server that is not there is unavailable (69): ${noServer.stderr}`);
    assert.match(noServer.stderr, 'Could not connect to NATS');
    assert.not.match(noWorker.stderr, '    at ', 'no stack trace');
    const observer = await runCli(['prompt', 'ses_x', 'hi', '--nats', url, ...as(OBSERVER)]);
    assert.is(observer.code, 77, "refused by the server's permissions (77), not a usage mistake");
    assert.match(observer.stderr, 'NATS user observer may not send sessiond commands');
    const noPass = await runCli(['prompt', 'ses_x', 'hi', '--nats', url, '--nats-user', 'client'], { env: { SESSIOND_NATS_PASS: '' } });
    assert.is(noPass.code, 2);
    assert.match(noPass.stderr, '--nats-user client needs a password');
    const badUrl = await runCli(['start', '--nats', 'http://nowhere', ...as(WORKER), '--db', ctx.tmp.file('x.db')]);
    assert.is(badUrl.code, 2);
    assert.match(badUrl.stderr, '--nats: Invalid NATS connection option servers: "http://nowhere"');
    const badId = await runCli(['prompt', 'ses.bad', 'x', '--nats', url, ...as(CLIENT)]);
    assert.is(badId.code, 2);
    assert.match(badId.stderr, 'Invalid session id "ses.bad"');
    const wrongPass = await runCli(['start', '--nats', url, '--nats-user', 'worker', '--nats-pass', 'nope', '--db', ctx.tmp.file('y.db')]);
    assert.is(wrongPass.code, 77, 'credentials the server refuses: no permission (77)');
    assert.match(wrongPass.stderr, 'Could not connect to NATS');
    assert.not.match(wrongPass.stdout + wrongPass.stderr, 'nope', 'the password is never printed');
  },
);

s('cli start --nats - a turn handed back on SIGTERM goes out live too: every event the worker committed reached subscribers', async (ctx) => {
  const url = ctx.server.url;
  const worker = await slowWorker(ctx, 'handback.db');
  const watcher = await SessiondClient.connect({ connection: { servers: url, ...OBSERVER } });
  const seen: LiveMessage[] = [];
  await watcher.subscribe({ sessionId: 'ses_handback' }, (e) => {
    if (e.seq !== undefined) seen.push(e);
  });
  const admitted = await runCli(['prompt', 'ses_handback', 'a long turn', '--nats', url, ...as(CLIENT)]);
  assert.is(admitted.code, 0, admitted.stderr);
  await worker.waitFor('ses_handback  claimed');
  await until(seen, (e) => e.type === 'step.started', 'the turn under way, live');
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
  assert.match(worker.output(), 'handed back 1 running session');
  const stored = await watcher.replay({ sessionId: 'ses_handback' });
  assert.ok(
    stored.some((e) => e.type === 'execution.settled'),
    'the hand-back settled the execution',
  );
  await until(seen, (e) => e.id === stored.at(-1)!.id, 'the last hand-back event, live');
  assert.equal(
    seen.map((e) => e.id),
    stored.map((e) => e.id),
    'live = the log, hand-back included',
  );
  await watcher.close();
});

s('cli start --nats - a worker skips a poisoned message with one line and records it in its database', async (ctx) => {
  const worker = await slowWorker(ctx, 'poisoned.db');
  const nc = await connectNats({ servers: ctx.server.url, ...WORKER });
  const ack = await jetstream(nc).publish(subjects.events('ses_poison'), new TextEncoder().encode('{"not":"msgpack"}'), { expect: { lastSubjectSequence: 0 } });
  await nc.close();
  await worker.waitFor(`quarantined message ${ack.seq} on sessiond.events.ses_poison`);
  const db = openDatabase(ctx.tmp.file('poisoned.db'), { readonly: true });
  try {
    await waitFor(() => quarantinedMessages(db).length === 1, { what: 'the quarantined message recorded' });
    const [row] = quarantinedMessages(db);
    assert.equal([row!.position, row!.subject, row!.sessionId, row!.code], [ack.seq, 'sessiond.events.ses_poison', 'ses_poison', 'decode_failed']);
  } finally {
    db.close();
  }
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
});

s('cli cancel --nats - the client user cancels a running turn through the command subject', async (ctx) => {
  const url = ctx.server.url;
  const worker = await slowWorker(ctx, 'cancel.db');
  const admitted = await runCli(['prompt', 'ses_cancel', 'a long turn', '--nats', url, ...as(CLIENT)]);
  assert.is(admitted.code, 0, admitted.stderr);
  await worker.waitFor('ses_cancel  claimed');
  const cancelled = await runCli(['cancel', 'ses_cancel', '--reason', 'changed my mind', '--nats', url, ...as(CLIENT)]);
  assert.is(cancelled.code, 0, cancelled.stdout + cancelled.stderr);
  assert.match(cancelled.stdout, /cancelled execution exe_\S+ of ses_cancel/);
  await worker.waitFor('ses_cancel  cancelled execution');
  const again = await runCli(['cancel', 'ses_cancel', '--nats', url, ...as(CLIENT)]);
  assert.is(again.code, 1);
  assert.match(again.stdout, 'ses_cancel: nothing to cancel (', again.stdout);
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
});

s('cli start --nats - a worker started while nats-server is down waits for it, then serves', async (ctx) => {
  const server = await startNatsServer();
  try {
    await server.stop();
    const worker = startCli([
      'start',
      '--nats',
      server.url,
      ...as(WORKER),
      '--nats-commands-user',
      COMMANDS.user,
      '--nats-commands-pass',
      COMMANDS.pass,
      '--db',
      ctx.tmp.file('early.db'),
    ]);
    ctx.workers.push(worker);
    await worker.waitFor('until it answers');
    await server.restart(); // the server comes up after the worker
    await worker.waitFor('send it a prompt', 30_000);
    assert.is(worker.child.exitCode, null, 'the worker did not give up');
    const admitted = await runCli(['prompt', 'ses_early', 'late server', '--nats', server.url, ...as(CLIENT)]);
    assert.is(admitted.code, 0, admitted.stderr);
    await worker.waitFor('ses_early  turn succeeded');
    worker.child.kill('SIGTERM');
    assert.is(await worker.exited, 0, worker.output());
  } finally {
    await server.dispose();
  }
});

s('cli start --nats - without a commands user the worker serves no commands and says how to; setup reconfigures the stream as admin only', async (ctx) => {
  const url = ctx.server.url;
  const worker = startCli(['start', '--nats', url, ...as(WORKER), '--db', ctx.tmp.file('nocmd.db')]);
  ctx.workers.push(worker);
  await worker.waitFor('send it a prompt');
  assert.match(worker.output(), 'not serving commands: no commands user');
  const same = await runCli([
    'start',
    '--nats',
    url,
    ...as(WORKER),
    '--nats-commands-user',
    WORKER.user,
    '--nats-commands-pass',
    WORKER.pass,
    '--db',
    ctx.tmp.file('same.db'),
  ]);
  assert.is(same.code, 2);
  assert.match(same.stderr, "--nats-commands-user must not be the worker's user");
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());

  const byWorker = await runCli(['setup', '--nats', url, ...as(WORKER), '--duplicate-window-ms', '60000']);
  assert.is(byWorker.code, 77, byWorker.stdout + byWorker.stderr);
  assert.match(byWorker.stderr, 'that this NATS user may not make');
  assert.match(byWorker.stderr, 'workers never create or change streams');
  const byAdmin = await runCli(['setup', '--nats', url, ...as(ADMIN), '--duplicate-window-ms', '60000']);
  assert.is(byAdmin.code, 0, byAdmin.stderr);
  assert.match(byAdmin.stdout, 'stream SESSIOND_EVENTS on');
  assert.match(byAdmin.stdout, 'duplicate window 60000 ms, deny purge false, deny delete true');
  const back = await runCli(['setup', '--nats', url, ...as(ADMIN)]);
  assert.match(back.stdout, 'duplicate window 120000 ms');
});

s.run();
