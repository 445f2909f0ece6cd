// Session calls over NATS with three real `sessiond start --nats` workers: a parent calls two
// children at once and settles waiting; the worker that ran it is SIGKILLed while it waits (and
// while the children hold mid-turn, on any worker); the other workers finish the children (each
// does its prompt's work once) and deliver their answers, and the parent answers with both.
import { cliSuite, natsWorker } from './cli-suite.ts';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { SessiondClient } from '../../src/client/client.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { LongRunning } from '../support/cli.ts';

const s = cliSuite('session calls over NATS');

/** ses_fan calls ses_fan-a and ses_fan-b at once; a child holds until `go` exists, then does its work (a line in `effects`) and answers. */
function writeRunner(file: string, go: string, effects: string): void {
  writeFileSync(
    file,
    `import { appendFileSync, existsSync } from 'node:fs';
const held = (signal) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, 50);
  signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); }, { once: true });
});
export default async (ctx) => {
  if (ctx.sessionId === 'ses_fan') {
    const [a, b] = await Promise.all([
      ctx.callSession('a', { sessionId: 'ses_fan-a', prompt: 'count the apples' }),
      ctx.callSession('b', { sessionId: 'ses_fan-b', prompt: 'count the pears' }),
    ]);
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, 'a ' + a.outcome + ': ' + a.text + ' | b ' + b.outcome + ': ' + b.text);
    await ctx.endStep(messageId, 'stop');
    return;
  }
  const { messageId } = await ctx.startStep();
  while (!existsSync(${JSON.stringify(go)})) await held(ctx.signal);
  appendFileSync(${JSON.stringify(effects)}, ctx.sessionId + '\\n');
  // the prompt it was called with (a continuation's own input, after its worker died, is the resume note)
  const asked = (await ctx.history()).find((i) => i.type === 'user' && !i.continues);
  await ctx.text(messageId, ctx.sessionId + ' counted ' + asked.text.split(' ').pop());
  await ctx.endStep(messageId, 'stop');
};
`,
  );
}

s(
  'session calls (NATS) - three workers: the parent worker SIGKILLed while it waits; the others finish both children once; the parent answers with both',
  async (ctx) => {
    const runner = ctx.tmp.file('fan-runner.mjs');
    const go = ctx.tmp.file('go');
    const effects = ctx.tmp.file('effects.txt');
    writeRunner(runner, go, effects);
    const flags = ['--runner', runner, '--lease-ms', '1500', '--heartbeat-ms', '500', '--sweep-ms', '300'];
    const workers: LongRunning[] = [];
    for (const db of ['a.db', 'b.db', 'c.db']) workers.push(await natsWorker(ctx, db, 0, flags));
    const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
    try {
      await client.admit('ses_fan', { prompt: 'count the fruit' });
      await waitFor(async () => (await client.status('ses_fan')).outcome === 'waiting', { timeoutMs: 30_000, intervalMs: 100, what: 'the parent waits' });
      const claimed = async (id: string) => (await client.status(id)).executions > 0;
      await waitFor(async () => (await claimed('ses_fan-a')) && (await claimed('ses_fan-b')), {
        timeoutMs: 30_000,
        intervalMs: 100,
        what: 'both children run',
      });
      const waiting = await client.status('ses_fan');
      // children in the order their waits were recorded: the two calls race
      assert.equal(
        [waiting.owner, [...waiting.children].sort(), waiting.calledBy],
        [null, ['ses_fan-a', 'ses_fan-b'], null],
        'the waiting parent holds nothing',
      );
      assert.is((await client.status('ses_fan-a')).calledBy, 'ses_fan');

      const victim = workers.find((w) => w.output().includes('ses_fan  waits for session call'))!;
      victim.child.kill('SIGKILL');
      await victim.exited;
      writeFileSync(go, '');

      await waitFor(async () => (await client.status('ses_fan')).outcome === 'succeeded', { timeoutMs: 60_000, intervalMs: 100, what: 'the parent answers' });
      const events = await client.replay({ sessionId: 'ses_fan' });
      assert.equal(
        events.flatMap((e) => (e.type === 'text.completed' ? [e.payload.text] : [])),
        ['a succeeded: ses_fan-a counted apples | b succeeded: ses_fan-b counted pears'],
      );
      assert.equal(
        events
          .filter((e) => e.type === 'wait.resolved')
          .map((e) => `${e.payload.name} ${e.payload.outcome}`)
          .sort(),
        ['a delivered', 'b delivered'],
        'each child delivered once',
      );
      assert.ok(existsSync(effects));
      assert.equal(readFileSync(effects, 'utf8').trim().split('\n').sort(), ['ses_fan-a', 'ses_fan-b'], 'each child did its work once');
      for (const id of ['ses_fan-a', 'ses_fan-b']) {
        const child = await client.replay({ sessionId: id });
        assert.is(child.filter((e) => e.type === 'input.admitted' && e.payload.source === 'user').length, 1, `${id}: its prompt admitted once`);
        assert.ok(
          child.some((e) => e.type === 'execution.settled' && e.payload.outcome === 'succeeded'),
          `${id} finished`,
        );
      }
      // list (a worker's projection, behind the stream): each child names its parent, the parent counts them
      const listed = async () => (await client.list({ idPrefix: 'ses_fan' })).sessions.map((x) => [x.sessionId, x.calledBy, x.childCount]).sort() as unknown[];
      await waitFor(
        async () =>
          JSON.stringify(await listed()) ===
          JSON.stringify([
            ['ses_fan', null, 2],
            ['ses_fan-a', 'ses_fan', 0],
            ['ses_fan-b', 'ses_fan', 0],
          ]),
        {
          timeoutMs: 10_000,
          what: 'the list to show the tree',
        },
      );
      assert.equal((await client.list({ calledBy: 'ses_fan' })).sessions.map((x) => x.sessionId).sort(), ['ses_fan-a', 'ses_fan-b']);
      const finishers = workers.filter((w) => w !== victim && w.output().includes('turn succeeded'));
      assert.ok(finishers.length > 0, 'the surviving workers finished the work');
      assert.ok(
        !victim.output().includes('ses_fan-a  turn succeeded') && !victim.output().includes('ses_fan-b  turn succeeded'),
        'no child finished on the killed worker',
      );
    } finally {
      await client.close();
    }
  },
);

s.run();
