// Every `sessiond` command that talks to NATS, run as a real subprocess by each nats.conf user it is
// documented for, against a real server with the shipped nats.conf: the client user sends commands
// (prompt, cancel; wake and status through SessiondClient) on the command subjects and reads the log
// (status, tail, export, check) with its own consumers; the observer reads and is refused commands;
// the worker's user is refused commands too (they go through the client user, never a worker's rights).
import { cliSuite } from './cli-suite.ts';
import * as assert from 'uvu/assert';
import { SessiondClient } from '../../src/client/client.ts';
import { CLIENT, COMMANDS, OBSERVER, WORKER } from '../../src/testing/nats-server.ts';
import { runCli, startCli, type CliResult } from '../support/cli.ts';

type User = { user: string; pass: string };
const s = cliSuite('sessiond commands as each nats.conf user');

const SESSION = 'ses_users';

s('cli users - client: prompt, status, tail, export, check, cancel; observer: the reads, commands refused; worker user: commands refused', async (ctx) => {
  const url = ctx.server.url;
  const as = (user: User) => ['--nats', url, '--nats-user', user.user, '--nats-pass', user.pass];
  const run = (user: User, ...args: string[]) => runCli([...args, ...as(user)]);
  const ok = (r: CliResult, what: string) => {
    assert.is(r.code, 0, `${what}: ${r.stdout}${r.stderr}`);
    return r.stdout;
  };
  const refused = (r: CliResult, user: User, verb: string) => {
    assert.is(r.code, 77, `${user.user} ${verb}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, `NATS user ${user.user} may not send sessiond commands: nats.conf refuses publishing to sessiond.cmd.${verb}`);
    assert.match(r.stderr, '(the client user in nats.conf');
  };
  const tail = async (user: User) => {
    const t = startCli(['tail', SESSION, '--from-start', ...as(user)]);
    ctx.workers.push(t);
    await t.waitFor(`${SESSION} #1 input.admitted`, 60_000); // a cold tsx start on a loaded machine can take most of 30 s
    t.child.kill('SIGTERM');
    await t.exited;
  };

  // a worker whose turns last a minute, so the prompt's turn is running while the others act
  const worker = startCli([
    'start',
    ...as(WORKER),
    '--nats-commands-user',
    COMMANDS.user,
    '--nats-commands-pass',
    COMMANDS.pass,
    '--db',
    ctx.tmp.file('worker.db'),
    '--echo-delay-ms',
    '60000',
  ]);
  ctx.workers.push(worker);
  await worker.waitFor('send it a prompt');
  assert.match(ok(await run(CLIENT, 'prompt', SESSION, 'a long turn', '--id', 'inp_users'), 'client prompt'), `admitted inp_users to ${SESSION} at sequence 1`);
  await worker.waitFor(`${SESSION}  claimed`);

  const client = await SessiondClient.connect({ connection: { servers: url, ...CLIENT } });
  try {
    assert.is((await client.wake(SESSION)).status, 'running_here', 'client wake: the turn runs on the worker that owns it');
    assert.is((await client.status(SESSION)).state, 'running', 'client status (command)');
  } finally {
    await client.close();
  }

  const [
    clientStatus,
    clientAll,
    clientExport,
    clientCheck,
    observerStatus,
    observerExport,
    observerCheck,
    observerPrompt,
    observerCancel,
    workerPrompt,
    workerCancel,
  ] = await Promise.all([
    run(CLIENT, 'status', SESSION),
    run(CLIENT, 'status'),
    run(CLIENT, 'export', '--session', SESSION, '--out', ctx.tmp.file('client.sdx')),
    run(CLIENT, 'check'),
    run(OBSERVER, 'status', SESSION),
    run(OBSERVER, 'export', '--session', SESSION, '--out', ctx.tmp.file('observer.sdx')),
    run(OBSERVER, 'check'),
    run(OBSERVER, 'prompt', SESSION, 'not allowed'),
    run(OBSERVER, 'cancel', SESSION),
    run(WORKER, 'prompt', SESSION, 'not allowed'),
    run(WORKER, 'cancel', SESSION),
    tail(CLIENT),
    tail(OBSERVER),
  ]);
  for (const [who, r] of [
    ['client', clientStatus],
    ['client (all)', clientAll],
    ['observer', observerStatus],
  ] as const) {
    assert.match(ok(r, `${who} status`), new RegExp(`${SESSION}: running at seq \\d+; owned by own_`));
  }
  for (const [who, r] of [
    ['client', clientExport],
    ['observer', observerExport],
  ] as const)
    assert.match(ok(r, `${who} export`), `events of ${SESSION} from NATS`);
  for (const [who, r] of [
    ['client', clientCheck],
    ['observer', observerCheck],
  ] as const)
    assert.match(ok(r, `${who} check`), 'no violations');
  refused(observerPrompt, OBSERVER, 'admit');
  refused(observerCancel, OBSERVER, 'cancel');
  refused(workerPrompt, WORKER, 'admit');
  refused(workerCancel, WORKER, 'cancel');

  assert.match(ok(await run(CLIENT, 'cancel', SESSION, '--reason', 'done'), 'client cancel'), new RegExp(`cancelled execution exe_\\S+ of ${SESSION}`));
  await worker.waitFor(`${SESSION}  cancelled execution`);
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
});

s.run();
