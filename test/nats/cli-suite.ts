/**
 * The shared set-up of the test files that run real `sessiond` commands against one nats-server:
 * the server and a temp dir for the suite, every worker started by a test killed at the end.
 */
import { suite } from 'uvu';
import { startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';
import { startCli, type LongRunning } from '../support/cli.ts';
import { workerNatsFlags } from '../../src/testing/nats-server.ts';
import { tempDir } from '../support/tmp.ts';

export type CliCtx = { server: NatsServer; tmp: ReturnType<typeof tempDir>; workers: LongRunning[] };

export function cliSuite(name: string) {
  const s = suite<CliCtx>(name);
  s.before(async (ctx) => {
    ctx.server = await startNatsServer();
    ctx.tmp = tempDir();
    ctx.workers = [];
  });
  s.after(async (ctx) => {
    for (const w of ctx.workers)
      if (w.child.exitCode === null) {
        w.child.kill('SIGKILL');
        await w.exited;
      }
    await ctx.server.dispose();
    ctx.tmp.remove();
  });
  return s;
}

/** A `sessiond start --nats` worker serving commands, its echo steps `echoDelayMs` long (or `extra` flags such as `--runner PATH`), once it says it is up. */
export async function natsWorker(ctx: CliCtx, db: string, echoDelayMs: number, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<LongRunning> {
  const w = startCli(['start', ...workerNatsFlags(ctx.server.url), '--db', ctx.tmp.file(db), '--echo-delay-ms', String(echoDelayMs), ...extra], { env });
  ctx.workers.push(w);
  await w.waitFor('send it a prompt');
  return w;
}

/** The CLI flags that connect as a nats.conf user. */
export const as = (user: { user: string; pass: string }) => ['--nats-user', user.user, '--nats-pass', user.pass];
