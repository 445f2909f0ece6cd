// Attack 3 of the issue "Hostile input must not stop a session or a worker": a snapshot forged with
// the worker password. Published raw with natscli as the worker user to sessiond.snapshots.<s>, with
// the right machine version and a pending input the log never admitted, it used to be trusted by the
// next worker that loaded the session cold: that worker claimed, appended `input.promoted inp_evil`,
// and every worker's projection stopped for good ("promoted but never admitted"), again after each
// restart. Now the snapshot is checked against the log, discarded and reported; nothing about the
// evil input is appended; later prompts run and the projections keep up. Real `sessiond start`
// workers on a real nats-server.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SessiondClient } from '../../src/client/client.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { hydrate } from '../../src/machines/decider.ts';
import { MACHINE_VERSION } from '../../src/machines/snapshot-store.ts';
import { startNatsServer, CLIENT, WORKER } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';
import { killAll, openReader, pollLog, projectionCheckpoint, startWorkers, stopWorker, type WorkerProc } from './cluster.ts';
import { natsCli } from './natscli.ts';

const FLAGS = { leaseMs: 5_000, heartbeatMs: 1_000, sweepMs: 500 };

test('attack 3 - a snapshot forged with the worker password is discarded and reported by every worker that loads it; the evil input is never promoted, later prompts run, projections keep up', async () => {
  const server = await startNatsServer();
  const tmp = tempDir('sessiond-forged-');
  const workers: WorkerProc[] = [];
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const reader = await openReader(server);
    closers.push(() => reader.close());
    const client = await SessiondClient.connect({ connection: { servers: server.url, ...CLIENT, reconnectWaitMs: 50 } });
    closers.push(() => client.close());
    const session = `ses_forged_${process.pid}`;
    const ofSession = (events: SessionEvent[]) => events.filter((e) => e.sessionId === session);
    const settledTurns = (events: SessionEvent[]) => ofSession(events).filter((e) => e.type === 'execution.settled').length;
    const evilTouched = (events: SessionEvent[]) => ofSession(events).filter((e) => JSON.stringify(e.payload).includes('inp_evil'));

    // an honest first turn
    const [first] = await startWorkers(server, 1, (name) => tmp.file(`first-${name}`), FLAGS, workers);
    await client.admit(session, { id: 'inp_first', prompt: 'first prompt' });
    await pollLog(reader, (events) => settledTurns(events) === 1, 'the first turn settled');
    assert.is(await stopWorker(first!), 0);

    // the forgery: the real state of the session (head and all), plus a pending input never admitted,
    // pointing at the session's first event as its "admission"
    const events = await reader.readSession(session);
    const real = hydrate(session, events);
    const forged = {
      machine: MACHINE_VERSION,
      snapshot: {
        ...real,
        context: {
          ...real.context,
          pending: [
            {
              inputId: 'inp_evil',
              delivery: 'queue',
              seq: 1,
              wake: true,
              source: 'user',
              prompt: 'forged prompt',
              admittedBy: { id: events[0]!.id, position: events[0]!.position },
            },
          ],
        },
      },
    };
    // two workers in turn that never saw the session (as after restarts) each load it cold; the
    // attacker publishes the forgery again before each (a worker replaces a discarded snapshot)
    for (const [round, label] of ['second', 'third'].entries()) {
      const pub = await natsCli(
        server.url,
        WORKER,
        ['pub', `sessiond.snapshots.${session}`, '--force-stdin', '--no-templates', '--jetstream'],
        JSON.stringify(forged),
      );
      assert.is(pub.code, 0, `natscli publish as the worker user: ${pub.stdout}${pub.stderr}`);
      const [w] = await startWorkers(server, 1, (name) => tmp.file(`${label}-${name}`), FLAGS, workers);
      await client.admit(session, { id: `inp_${label}`, prompt: `${label} prompt` });
      const after = await pollLog(
        reader,
        (all) => evilTouched(all).length > 0 || settledTurns(all) === round + 2,
        `the ${label} turn settled (or the evil input touched)`,
      );
      assert.equal(
        evilTouched(after).map((e) => `${e.seq} ${e.type}`),
        [],
        'nothing about the forged input is ever appended',
      );
      const promoted = ofSession(after)
        .filter((e) => e.type === 'input.promoted')
        .map((e) => (e.payload as { inputId: string }).inputId);
      assert.equal(promoted, ['inp_first', 'inp_second', 'inp_third'].slice(0, round + 2), 'only admitted inputs ran');
      await w!.waitFor(`discarded the stored snapshot of session ${session}`, 10_000);
      assert.match(w!.output(), 'pending input "inp_evil"', 'the report says why');
      // the projection keeps running: it folds up to the stream's head
      const head = await reader.head();
      await waitFor(() => projectionCheckpoint(w!.db) >= head, { timeoutMs: 15_000, what: `the ${label} worker's projection at the stream head ${head}` });
      assert.not.match(w!.output(), 'but never admitted', 'no projection invariant');
      assert.is(await stopWorker(w!), 0, `the ${label} worker stopped cleanly:\n${w!.output()}`);
    }
  } finally {
    await killAll(workers);
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await server.dispose();
    tmp.remove();
  }
});

test.run();
