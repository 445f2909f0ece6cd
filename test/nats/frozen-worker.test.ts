// A worker that stops running (SIGSTOP: a frozen VM, a blocked event loop) while serving commands,
// with real `sessiond start --nats` processes: it holds at most a few requests (its places in the
// queue group are good for one request each and renewed only by a running worker), the client sends
// each unanswered request again after attemptTimeoutMs, the other worker answers, and when the frozen
// one resumes, what it held changes nothing (admits are idempotent by input id).
import { as, cliSuite, natsWorker, type CliCtx } from './cli-suite.ts';
import * as assert from 'uvu/assert';
import { SessiondClient } from '../../src/client/client.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { runCli, type LongRunning } from '../support/cli.ts';

type Ctx = CliCtx;
const s = cliSuite('a frozen worker');

const worker = (ctx: Ctx, db: string): Promise<LongRunning> => natsWorker(ctx, db, 5);

const count = (events: SessionEvent[], type: string, inputId?: string) =>
  events.filter((e) => e.type === type && (inputId === undefined || (e.payload as { inputId?: string }).inputId === inputId)).length;

s(
  'frozen worker - commands sent while one of two workers is SIGSTOPped all complete (sent again to the running one); after SIGCONT nothing ran twice',
  async (ctx) => {
    const url = ctx.server.url;
    const frozen = await worker(ctx, 'frozen.db');
    const running = await worker(ctx, 'running.db');
    frozen.child.kill('SIGSTOP');
    const client = await SessiondClient.connect({ connection: { servers: url, ...CLIENT } });
    const sessions = Array.from({ length: 6 }, (_, i) => `ses_frozen_${i}`);
    try {
      for (const [i, id] of sessions.entries()) {
        // default timeouts: on a client without resends, a request the frozen worker took fails after 10 s
        const receipt = await client.admit(id, { prompt: `prompt ${i}`, id: `inp_frozen_${i}` });
        assert.is(receipt.inputId, `inp_frozen_${i}`);
        assert.is((await client.status(id)).sessionId, id);
        await client.wake(id);
      }
      // the CLI, as the client user, through the same command subjects
      const prompted = await runCli(['prompt', 'ses_frozen_cli', 'from the cli', '--id', 'inp_frozen_cli', '--nats', url, ...as(CLIENT)]);
      assert.is(prompted.code, 0, prompted.stderr);
      assert.match(prompted.stdout, 'admitted inp_frozen_cli to ses_frozen_cli at sequence 1');
      sessions.push('ses_frozen_cli');
      for (const id of sessions) await running.waitFor(`${id}  turn succeeded`);

      frozen.child.kill('SIGCONT');
      frozen.child.kill('SIGTERM'); // it answers what it held before it exits
      assert.is(await frozen.exited, 0, frozen.output());
      running.child.kill('SIGTERM');
      assert.is(await running.exited, 0, running.output());
      for (const [i, id] of sessions.entries()) {
        const events = await client.replay({ sessionId: id });
        const inputId = id === 'ses_frozen_cli' ? 'inp_frozen_cli' : `inp_frozen_${i}`;
        assert.is(count(events, 'input.admitted', inputId), 1, `${inputId} admitted once`);
        assert.is(count(events, 'input.promoted', inputId), 1, `${inputId} promoted once`);
        assert.is(count(events, 'execution.claimed'), 1, `one turn of ${id}`);
        assert.is(events.at(-1)?.type, 'execution.settled', `${id} ends settled`);
      }
    } finally {
      await client.close();
    }
  },
);

s.run();
