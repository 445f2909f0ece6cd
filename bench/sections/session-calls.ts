/**
 * Session calls (`ctx.callSession`) on the embedded log, with the recovery sweep every 500 ms:
 * a parent with 16 children at once resumes within one sweep interval of the last child's end
 * (the figure: from the last child's settlement to the parent's resumed claim; the worker delivers
 * a child's end at once, the sweep is the fallback), and a fan-out of 100 children: how long the
 * parent takes to admit them all and settle waiting, and how many appends that makes (one per child
 * log, group-committed together, and the parent's waits riding with its settlement).
 */
import { join } from 'node:path';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { startSessiond } from '../../src/host.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import type { Runner } from '../../src/runner/types.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { percentile } from '../lib/measure.ts';
import { say } from '../lib/report.ts';
import type { Section } from '../lib/context.ts';

const S = 'session-calls';
const SWEEP_MS = 500;
const ROUNDS = 5;

/** A parent (`ses_p*`) calls `n` children at once (its session id says how many) and answers; a child answers at once. */
const runner: Runner = async (ctx) => {
  const m = /^ses_p(\d+)_\d+$/.exec(ctx.sessionId);
  if (m) {
    const n = Number(m[1]);
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => ctx.callSession(`c${i}`, { sessionId: `${ctx.sessionId}-c${i}`, prompt: `part ${i}` })),
    );
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, `${results.filter((r) => r.outcome === 'succeeded').length} answered`);
    await ctx.endStep(messageId, 'stop');
    return;
  }
  const { messageId } = await ctx.startStep();
  await ctx.text(messageId, `did ${ctx.inputs[0]!.prompt}`);
  await ctx.endStep(messageId, 'stop');
};

export const sessionCalls: Section = {
  name: S,
  title: `session calls: 16 children at once, the parent resumed by the sweep (every ${SWEEP_MS} ms); a fan-out of 100 children`,
  async run(ctx) {
    const file = join(ctx.tmp, 'session-calls.db');
    const appends = new Map<string, number>();
    let counting = false;
    const count = (log: EventLog): EventLog =>
      new Proxy(log, {
        get(target, prop, receiver) {
          if (prop === 'append')
            return (sessionId: string, expectedSeq: number, drafts: Parameters<EventLog['append']>[2]) => {
              if (counting) appends.set(sessionId, (appends.get(sessionId) ?? 0) + 1);
              return target.append(sessionId, expectedSeq, drafts);
            };
          const value = Reflect.get(target, prop, receiver) as unknown;
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    const worker = await startSessiond({ db: file, runner, sweepMs: SWEEP_MS, decorateLog: count });
    const reader = openDatabase(file, { readonly: true });
    const events = (id: string) => new SqliteEventLog(reader).readSession(id) as Promise<SessionEvent[]>;
    const settled = async (id: string, outcome: string) => (await events(id)).find((e) => e.type === 'execution.settled' && e.payload.outcome === outcome);
    try {
      const lags: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const parent = `ses_p16_${r}`;
        await worker.admit(parent, { prompt: 'fan out' });
        await waitFor(async () => (await settled(parent, 'succeeded')) !== undefined, { timeoutMs: 60_000, what: `${parent} answers` });
        let lastChild = 0;
        for (let i = 0; i < 16; i++) lastChild = Math.max(lastChild, (await settled(`${parent}-c${i}`, 'succeeded'))!.time);
        const claims = (await events(parent)).filter((e) => e.type === 'execution.claimed');
        lags.push(claims[1]!.time - lastChild);
        say(S, `16 children: round ${r + 1}/${ROUNDS}, resumed ${lags.at(-1)} ms after the last child's end`);
      }
      ctx.results.add(
        {
          key: 'calls.fanin.16',
          section: S,
          figure: "a parent with 16 children: its resume after the last child's end, worst of rounds",
          unit: 'ms',
          value: Math.max(...lags),
          note: `${ROUNDS} rounds, sweep every ${SWEEP_MS} ms; p50 ${percentile(lags, 50).toFixed(0)} ms; the end is delivered by the worker that saw it (the sweep is the fallback)`,
        },
        { max: SWEEP_MS },
      );

      const parent = 'ses_p100_0';
      counting = true;
      const t = performance.now();
      await worker.admit(parent, { prompt: 'fan out' });
      await waitFor(async () => (await settled(parent, 'waiting')) !== undefined, { timeoutMs: 60_000, intervalMs: 5, what: `${parent} waits` });
      const fanOut = performance.now() - t;
      const toParent = appends.get(parent) ?? 0;
      const toChildren = [...appends.entries()].filter(([id]) => id.startsWith(`${parent}-`)).reduce((n, [, c]) => n + c, 0);
      counting = false;
      await waitFor(async () => (await settled(parent, 'succeeded')) !== undefined, { timeoutMs: 120_000, what: `${parent} answers` });
      ctx.results.add({
        key: 'calls.fanout.100',
        section: S,
        figure: 'a fan-out of 100 children: admitted and the parent waiting',
        unit: 'ms',
        value: fanOut,
        note: `appends until it waits: ${toParent} to the parent (its 100 waits ride with its settlement), ${toChildren} to the children (incl. their own turns starting); one admission per child log, group-committed together (test/execution/fan-out-batch.test.ts)`,
      });
    } finally {
      reader.close();
      await worker.close();
    }
  },
};
