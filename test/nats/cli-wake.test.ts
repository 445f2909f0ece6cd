/**
 * `sessiond wake SESSION --nats URL` as a real subprocess, as the client user, against a real
 * nats-server and a real worker (the NATS `wake` command): it says what happened in plain words,
 * with the exit codes of the other commands.
 */
import * as assert from 'uvu/assert';
import { as, cliSuite, natsWorker } from './cli-suite.ts';
import { CLIENT, OBSERVER } from '../../src/testing/nats-server.ts';
import { runCli, type CliResult } from '../support/cli.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { SessionStatus } from '../../src/sessions/sessions.ts';

const s = cliSuite('sessiond wake over NATS');

s(
  'cli wake over NATS - a session admitted without a wake is woken; then nothing to run (1); a running turn is said to run what is pending next; unknown (66); the observer is refused (77)',
  async (ctx) => {
    const worker = await natsWorker(ctx, 'wake-worker.db', 3000);
    const where = ['--nats', ctx.server.url, ...as(CLIENT)];
    const run = (...args: string[]): Promise<CliResult> => runCli([...args, ...where]);
    const status = async (id: string) => JSON.parse((await run('status', id, '--json')).stdout) as SessionStatus;
    const settled = (id: string) => waitFor(async () => (await status(id)).state === 'settled', { timeoutMs: 20_000, what: `${id} settled` });

    const admitted = await run('prompt', 'ses_w1', 'hello', '--no-wake');
    assert.is(admitted.code, 0, admitted.stderr);
    assert.match(admitted.stdout, 'not woken (--no-wake)');
    const woke = await run('wake', 'ses_w1');
    assert.is(woke.code, 0, woke.stdout + woke.stderr);
    assert.match(woke.stdout, /^woke ses_w1: a turn started \(execution exe_\w+\)\nfollow it: sessiond tail ses_w1\n$/);
    assert.is(woke.stderr, '');
    await settled('ses_w1');
    assert.is((await status('ses_w1')).outcome, 'succeeded');

    const again = await run('wake', 'ses_w1');
    assert.is(again.code, 1, again.stdout + again.stderr);
    assert.is(again.stdout, 'ses_w1: nothing to run (no input is pending); admit one with sessiond prompt ses_w1 TEXT\n');

    // a turn running on the worker: the wake says so, and the input waiting behind it runs after it
    // (three echo steps of 3 s: about 9 s, while the next two commands take a second or two)
    assert.is((await run('prompt', 'ses_w2', 'one two three four five six')).code, 0);
    await worker.waitFor('ses_w2  claimed');
    assert.is((await run('prompt', 'ses_w2', 'after it', '--no-wake', '--id', 'inp_after')).code, 0);
    const busy = await run('wake', 'ses_w2');
    assert.is(busy.code, 0, busy.stdout + busy.stderr);
    assert.match(busy.stdout, /^ses_w2: a turn is already running \(execution exe_\w+\); what is pending runs when it ends\n$/);
    await waitFor(async () => ((s) => s.state === 'settled' && s.pendingCount === 0)(await status('ses_w2')), {
      timeoutMs: 40_000,
      what: 'ses_w2 ran inp_after',
    });
    assert.equal((await status('ses_w2')).execution?.inputIds, ['inp_after'], 'the last turn ran the input admitted without a wake');

    const unknown = await run('wake', 'ses_nobody');
    assert.is(unknown.code, 66, unknown.stdout + unknown.stderr);
    assert.match(unknown.stderr, 'Session ses_nobody has no events, so there is nothing to wake');
    assert.not.match(unknown.stderr, /\n\s+at /, 'no stack trace');

    const observer = await runCli(['wake', 'ses_w1', '--nats', ctx.server.url, ...as(OBSERVER)]);
    assert.is(observer.code, 77, observer.stdout + observer.stderr);
    assert.match(observer.stderr, 'NATS user observer may not send sessiond commands: nats.conf refuses publishing to sessiond.cmd.wake');
  },
);

s.run();
