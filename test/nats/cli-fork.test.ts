/**
 * `sessiond fork` as real processes: on a SQLite file (the log at rest) and over NATS (a worker
 * reads the source and writes the fork); the fork shows in `status` and `ls`, and a point inside a
 * turn is refused (exit 1) naming the nearest settled sequences.
 */
import * as assert from 'uvu/assert';
import { as, cliSuite, natsWorker } from './cli-suite.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { runCli } from '../support/cli.ts';
import { waitFor } from '../../src/testing/wait.ts';

const s = cliSuite('sessiond fork');

async function ok(args: string[]): Promise<string> {
  const r = await runCli(args);
  assert.is(r.code, 0, `sessiond ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

for (const transport of ['db', 'nats'] as const) {
  s(`cli fork (${transport}) - a settled source forked at its last point and shown in status and ls; inside a turn refused`, async (ctx) => {
    const db = ctx.tmp.file(`fork-${transport}.db`);
    const where = transport === 'db' ? ['--db', db] : ['--nats', ctx.server.url, ...as(CLIENT)];
    const source = `ses_src_${transport}`;
    if (transport === 'db') {
      const engine = await openEngine({ file: db, runner: echoRunner({ steps: 1 }) });
      await engine.admit(source, { prompt: 'which colour?' });
      await engine.awaitIdle(source);
      await engine.close();
    } else {
      await natsWorker(ctx, 'fork-worker.db', 1);
      await ok(['prompt', source, 'which colour?', ...where]);
      await waitFor(async () => JSON.parse(await ok(['status', source, ...where, '--json'])).state === 'settled', { timeoutMs: 15_000, what: 'the turn' });
    }
    const head = JSON.parse(await ok(['status', source, ...where, '--json'])).seq as number;
    const fork = `ses_alt_${transport}`;
    const said = await ok(['fork', source, fork, '--tag', 'branch=alt', ...where]);
    assert.match(said, new RegExp(`forked ${source} at sequence ${head} into ${fork}: it starts with ${transport === 'db' ? 2 : '[2-9]'} conversation items`)); // the worker's echo answers in steps
    assert.match(await ok(['fork', source, fork, ...where]), `${fork} is already a fork of ${source} at sequence ${head}; nothing changed`);
    assert.match(await ok(['status', fork, ...where]), `forked from ${source} at sequence ${head}`);
    await waitFor(async () => (await runCli(['ls', ...where, '--tag', 'branch=alt', '--json'])).stdout.includes(fork), {
      timeoutMs: 15_000,
      what: 'the fork listed',
    });
    const listed = JSON.parse(await ok(['ls', ...where, '--tag', 'branch=alt', '--json'])) as { sessions: { sessionId: string; forkedFrom: unknown }[] };
    assert.equal(
      listed.sessions.map((x) => [x.sessionId, x.forkedFrom]),
      [[fork, { sessionId: source, seq: head }]],
    );
    const inside = await runCli(['fork', source, `ses_mid_${transport}`, '--at', '2', ...where]);
    assert.is(inside.code, 1, inside.stdout + inside.stderr);
    assert.match(inside.stderr, `sequence 2 of session ${source} is inside a turn. Fork at 1 or ${head}`);
  });
}

s.run();
