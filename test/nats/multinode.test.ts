// Several real `sessiond start --nats` worker processes on one real nats-server (the harness), each
// with its own SQLite projection file, driven through the NATS command subjects like a service would:
//
// 1. many sessions admitted at once: every turn runs exactly once, never two live owners, and the
//    work is spread over more than one worker; every committed event is published live exactly once,
//    by its writer;
// 2. one worker SIGKILLed while it runs turns: the others recover each of its unsettled executions
//    after the lease expires (once), the continuations run once, nothing is doubled;
// 3. the nats-server restarted (same port and store) while turns run: the workers reconnect (their
//    command, log and projection subscriptions too) and finish everything; nothing lost or doubled.
//
// Waits are on output lines or on polls of the JetStream log with deadlines; every process started
// here is killed in a `finally`.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { get as httpGet } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditLog } from '../../src/audit/audit-log.ts';
import { SessiondClient, type LiveSubscription } from '../../src/client/client.ts';
import type { LiveMessage } from '../../src/nats/live-bus.ts';
import type { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { continuationIdFor } from '../../src/recovery/sweeper.ts';
import { admitted } from '../../src/testing/event-log-contract.ts';
import { startNatsServer, CLIENT, OBSERVER, type NatsServer } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';
import { assertContinuationChainsSucceed } from '../support/continuations.ts';
import {
  allDone,
  analyse,
  describeOpen,
  ended,
  killAll,
  openReader,
  pollLog,
  projectionCheckpoint,
  startWorkers,
  stopWorker,
  timeline,
  type LogAnalysis,
  type WorkerProc,
} from './cluster.ts';

interface World {
  server: NatsServer;
  tmp: ReturnType<typeof tempDir>;
  workers: WorkerProc[];
  closers: (() => Promise<unknown>)[];
}

/** Runs `body` with a fresh server, temp dir and worker list; kills and closes everything afterwards, pass or fail. */
async function withWorld(body: (w: World) => Promise<void>): Promise<void> {
  const w: World = { server: await startNatsServer(), tmp: tempDir('sessiond-multinode-'), workers: [], closers: [] };
  try {
    await body(w);
  } catch (err) {
    // the workers' whole output, with arrival times, makes a failure readable
    const dir = mkdtempSync(join(tmpdir(), 'sessiond-multinode-failure-'));
    for (const p of w.workers) writeFileSync(join(dir, `${p.name}.out`), p.timed.map((l) => `${l.t} ${l.line}`).join('\n'));
    process.stderr.write(`multinode: the workers' output (ms since the epoch, line) is in ${dir}\n`);
    throw err;
  } finally {
    await killAll(w.workers);
    for (const close of w.closers.reverse()) await close().catch(() => undefined);
    await w.server.dispose();
    w.tmp.remove();
  }
}

async function client(w: World, user: { user: string; pass: string } = CLIENT): Promise<SessiondClient> {
  const c = await SessiondClient.connect({ connection: { servers: w.server.url, ...user, reconnectWaitMs: 50 } });
  w.closers.push(() => c.close());
  return c;
}

async function reader(w: World): Promise<JetStreamEventLog> {
  const log = await openReader(w.server);
  w.closers.push(() => log.close());
  return log;
}

/** Admits one prompt per session at once through the command subjects; returns the input ids. */
async function admitAll(c: SessiondClient, sessions: string[], label: string, wake = true): Promise<string[]> {
  const receipts = await Promise.all(
    sessions.map((s, i) => c.admit(s, { id: `inp_${label}_${i}`, prompt: `hello ${label} number ${i} from the cluster test`, wake })),
  );
  for (const r of receipts) assert.ok(r.created, `input ${r.inputId} newly admitted`);
  return receipts.map((r) => r.inputId);
}

/**
 * Admits without a wake, then wakes each session with the `wake` command: only the worker the queue
 * group hands the command to tries to claim, so who runs what follows the queue group (random),
 * not the claim race that every worker joins for an admission with a wake.
 */
async function admitThenWake(c: SessiondClient, sessions: string[], label: string): Promise<string[]> {
  const inputs = await admitAll(c, sessions, label, false);
  const results = await Promise.all(sessions.map((s) => c.wake(s)));
  assert.equal(
    results.map((r) => r.status),
    sessions.map(() => 'started'),
    'each wake command started a turn',
  );
  return inputs;
}

/** Claims per worker among the executions of sessions whose id starts with `prefix`. */
function spread(a: LogAnalysis, workers: WorkerProc[], prefix: string): number[] {
  const xs = [...a.executions.values()].filter((x) => x.sessionId.startsWith(prefix));
  return workers.map((w) => xs.filter((x) => x.ownerId === w.ownerId).length);
}

const sessionsNamed = (label: string, n: number) => Array.from({ length: n }, (_, i) => `ses_${label}_${i}`);

/** Polls the log until no work is left (every input promoted, every execution ended). */
function untilAllDone(log: JetStreamEventLog, inputs: string[], what: string, timeoutMs = 30_000) {
  return pollLog(log, (events) => allDone(analyse(events), inputs), what, { timeoutMs, describe: describeOpen });
}

/**
 * The exactly-once checks shared by the tests, on the final log:
 * - the audit finds nothing (no two live owners, no promotion twice, no zombie write, no recovery twice);
 * - no event id appears twice;
 * - every admitted input (user or continuation) was admitted once and promoted once;
 * - every claimed execution ended exactly once: settled (succeeded) xor recovered (started and completed once);
 * - every recovered execution that had promoted inputs admitted its continuation, which was promoted;
 * - every user input's turn ran once: the execution that promoted it settled `succeeded`, or it was
 *   recovered and its continuation's chain ended in a `succeeded` settlement.
 * Returns the executions that were recovered.
 */
function assertExactlyOnce(a: LogAnalysis, userInputs: string[]): string[] {
  assert.equal(auditLog(a.events), [], 'auditLog: no two live owners, each input promoted once, no zombie writes, recovered once');
  assert.equal(a.duplicateIds, [], 'no event id appears twice in the log');
  for (const id of userInputs) assert.ok(a.admitted.has(id), `user input ${id} is in the log`);
  for (const [id, list] of a.admitted) {
    assert.is(list.length, 1, `input ${id} admitted once`);
    assert.is(a.promoted.get(id)?.length ?? 0, 1, `input ${id} promoted exactly once`);
  }
  const recovered: string[] = [];
  for (const x of a.executions.values()) {
    assert.ok(x.ownerId.startsWith('own_'), `execution ${x.id} was claimed`);
    const endings = x.settled.length + x.recoveryStarted.length;
    assert.is(
      endings,
      1,
      `execution ${x.id} (${x.sessionId}, owner ${x.ownerId}) ended exactly once (settled ${x.settled.length}, recovered ${x.recoveryStarted.length})`,
    );
    if (x.settled.length === 1) {
      assert.is(x.settled[0]!.payload.outcome, 'succeeded', `execution ${x.id} succeeded: ${JSON.stringify(x.settled[0]!.payload.error)}`);
    } else {
      recovered.push(x.id);
      assert.is(x.recoveryCompleted.length, 1, `execution ${x.id} recovery completed once`);
      const cont = x.recoveryCompleted[0]!.payload.continuationInputId;
      if (x.promoted.length > 0) {
        assert.is(cont, continuationIdFor(x.id), `execution ${x.id} admitted its continuation`);
        assert.is(a.admitted.get(cont!)?.[0]?.payload.source, 'recovery', `continuation ${cont} is a recovery input`);
      }
    }
  }
  // each user input's turn ran once, following continuations through recoveries
  assertContinuationChainsSucceed(a, userInputs);
  return recovered;
}

/** Each worker printed a `claimed` line for exactly the executions the log says it claimed. */
function assertClaimLines(a: LogAnalysis, workers: WorkerProc[]): void {
  for (const w of workers) {
    const fromLog = [...a.executions.values()]
      .filter((x) => x.ownerId === w.ownerId)
      .map((x) => x.id)
      .sort();
    const printed = w
      .claimedLines()
      .map((l) => /execution (exe_\S+)\)/.exec(l)![1]!)
      .sort();
    assert.equal(printed, fromLog, `${w.name} (${w.ownerId}) printed a claimed line for each execution it claimed in the log`);
  }
}

/** Every committed event of `sessions` arrived live exactly once: its writer published it, no other worker did. */
async function assertPublishedOnce(seen: LiveMessage[], events: { id: string; sessionId: string }[], sessions: Set<string>): Promise<void> {
  const copies = 1;
  const wanted = events.filter((e) => sessions.has(e.sessionId));
  const count = () => {
    const n = new Map<string, number>();
    for (const m of seen) if (m.seq !== undefined && sessions.has(m.sessionId)) n.set(m.id, (n.get(m.id) ?? 0) + 1);
    return n;
  };
  await waitFor(
    () => {
      const n = count();
      return wanted.every((e) => (n.get(e.id) ?? 0) >= copies);
    },
    { timeoutMs: 10_000, intervalMs: 50, what: 'every committed event published live by its writer' },
  ).catch((err: Error) => {
    const n = count();
    const short = wanted.filter((e) => (n.get(e.id) ?? 0) < copies).map((e) => `${e.id}:${n.get(e.id) ?? 0}`);
    throw new Error(`${err.message}; ${short.length} of ${wanted.length} events short (id:copies): ${short.slice(0, 10).join(' ')}`);
  });
  const n = count();
  const over = wanted.filter((e) => n.get(e.id)! > copies).map((e) => `${e.id}:${n.get(e.id)}`);
  assert.equal(over, [], 'no committed event published live more than once (not once per worker)');
  const known = new Set(wanted.map((e) => e.id));
  assert.equal(
    [...n.keys()].filter((id) => !known.has(id)),
    [],
    'no live committed event that is not in the log',
  );
}

/** Live subscription of every message (no dedupe) as the observer user. */
async function watchAll(w: World): Promise<{ seen: LiveMessage[]; sub: LiveSubscription }> {
  const watcher = await client(w, OBSERVER);
  const seen: LiveMessage[] = [];
  const sub = await watcher.subscribe(
    {},
    (m) => {
      seen.push(m);
    },
    { dedupe: false },
  );
  return { seen, sub };
}

/** The server's connections named `name`, with their subscriptions (monitoring endpoint /connz). */
function connz(server: NatsServer): Promise<{ name?: string; subscriptions_list?: string[] }[]> {
  return new Promise((resolve, reject) => {
    const req = httpGet({ host: '127.0.0.1', port: server.monitorPort, path: '/connz?subs=1&limit=1024', timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        try {
          resolve((JSON.parse(body) as { connections?: [] }).connections ?? []);
        } catch (err) {
          reject(err);
        }
      });
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('connz timed out')));
  });
}

const s = suite('multi-node: real worker processes on one nats-server');

s('three workers, 30 sessions admitted at once over the command subjects: each turn runs once, one live owner, work spread', async () => {
  await withWorld(async (w) => {
    const t0 = Date.now();
    const workers = await startWorkers(w.server, 3, w.tmp.file, { leaseMs: 2000, heartbeatMs: 500, sweepMs: 300 }, w.workers);
    assert.is(new Set(workers.map((x) => x.ownerId)).size, 3, 'three distinct owners');
    const { seen } = await watchAll(w);
    const log = await reader(w);
    const c = await client(w);
    // half admitted with a wake (every worker races to claim), half woken by the wake command (queue group)
    const raced = sessionsNamed('many_race', 15);
    const queued = sessionsNamed('many_queue', 15);
    const sessions = [...raced, ...queued];
    const [racedInputs, queuedInputs] = await Promise.all([admitAll(c, raced, 'many_race'), admitThenWake(c, queued, 'many_queue')]);
    const inputs = [...racedInputs, ...queuedInputs];
    const events = await untilAllDone(log, inputs, 'all 30 turns to settle');
    const a = analyse(events);

    const recovered = assertExactlyOnce(a, inputs);
    const lapsed = recovered.map((id) => a.executions.get(id)!.sessionId);
    assert.equal(recovered, [], `nothing needed recovery; but these leases lapsed (t0 = ${t0}):\n${timeline(events, lapsed, t0)}`);
    assert.is(a.executions.size, 30, 'one execution per input');
    for (const x of a.executions.values()) assert.is(x.promoted.length, 1, `execution ${x.id} ran one input`);
    const owners = [...a.claimsByOwner.keys()];
    assert.ok(
      owners.every((o) => workers.some((x) => x.ownerId === o)),
      'every claim is by one of the three workers',
    );
    const byQueue = spread(a, workers, 'ses_many_queue_');
    assert.ok(byQueue.filter((n) => n > 0).length > 1, `the sessions woken by command were spread over more than one worker: ${byQueue.join('/')}`);
    assertClaimLines(a, workers);
    await assertPublishedOnce(seen, events, new Set(sessions));
    // every projection follows the whole log
    const head = events.at(-1)!.position!;
    await waitFor(() => workers.every((x) => projectionCheckpoint(x.db) >= head), { timeoutMs: 10_000, what: 'every worker projection to reach the log head' });

    // a clean stop of each: nothing was running, exit 0
    for (const x of workers) {
      assert.is(await stopWorker(x), 0, `${x.name} exits 0 on SIGTERM`);
      assert.match(x.output(), 'stopped (nothing was running)');
    }
    process.stdout.write(
      `  [multinode 1] ${((Date.now() - t0) / 1000).toFixed(1)} s; claims per worker: woken by command ${byQueue.join('/')}, admitted with a wake (claim race) ${spread(a, workers, 'ses_many_race_').join('/')}\n`,
    );
  });
});

s('a worker SIGKILLed mid-run: the others recover each of its unsettled executions once, continuations run once', async () => {
  await withWorld(async (w) => {
    const t0 = Date.now();
    const workers = await startWorkers(w.server, 3, w.tmp.file, { leaseMs: 2000, heartbeatMs: 500, sweepMs: 300, echoDelayMs: 1000 }, w.workers);
    const log = await reader(w);
    const c = await client(w);
    const sessions = sessionsNamed('kill', 12);
    const inputs = await admitAll(c, sessions, 'kill');
    // every session is mid-turn: claimed, its first step started (a turn takes ~3 s: 3 steps of 1 s)
    const running = await pollLog(
      log,
      (events) => {
        const xs = [...analyse(events).executions.values()];
        return sessions.every((id) => xs.some((x) => x.sessionId === id && x.stepStarted >= 1));
      },
      'all 12 sessions to be mid-turn',
      { timeoutMs: 15_000, intervalMs: 100, describe: describeOpen },
    );
    // the victim: the worker owning the most turns in progress (read from the log, named by its startup line)
    const open = [...analyse(running).executions.values()].filter((x) => !ended(x));
    const victim = workers.map((x) => ({ x, n: open.filter((o) => o.ownerId === x.ownerId).length })).sort((p, q) => q.n - p.n)[0]!.x;
    victim.child.kill('SIGKILL');
    await victim.exited;
    victim.killed = true;
    const killedAt = Date.now();
    const survivors = workers.filter((x) => x !== victim);

    const events = await untilAllDone(log, inputs, 'the survivors to recover and finish everything', 30_000);
    const a = analyse(events);
    const recovered = assertExactlyOnce(a, inputs);
    // what the victim left unsettled, judged on the final log (a write in flight at the kill may have landed)
    const orphaned = [...a.executions.values()]
      .filter((x) => x.ownerId === victim.ownerId && x.settled.length === 0)
      .map((x) => x.id)
      .sort();
    assert.ok(orphaned.length >= 1, `the victim ${victim.ownerId} had turns in progress`);
    const lapsed = recovered.filter((id) => !orphaned.includes(id)).map((id) => a.executions.get(id)!.sessionId);
    assert.equal(
      [...recovered].sort(),
      orphaned,
      `exactly the victim's unsettled executions were recovered, nothing of the survivors (t0 = ${t0}):\n${timeline(events, lapsed, t0)}`,
    );
    for (const exe of orphaned) {
      const x = a.executions.get(exe)!;
      assert.is(x.recoveryCompleted[0]!.payload.phase, 'unknown', `${exe} was mid-step (phase unknown)`);
      const cont = continuationIdFor(exe);
      const runner = a.executions.get(a.promoted.get(cont)![0]!.payload.executionId)!;
      assert.ok(
        survivors.some((s2) => s2.ownerId === runner.ownerId),
        `continuation of ${exe} ran on a survivor`,
      );
      assert.ok(runner.settled[0]!.time >= killedAt, 'the continuation settled after the kill');
      // exactly one survivor printed the recovery of this execution
      const printed = survivors.filter((s2) => s2.output().includes(`recovered expired execution ${exe};`));
      assert.is(printed.length, 1, `one survivor says it recovered ${exe}`);
      assert.is(printed[0]!.output().split(`recovered expired execution ${exe};`).length - 1, 1, `${exe} recovered once`);
    }
    // the survivors' claims are in their output; the victim's claims before the kill too
    assertClaimLines(a, survivors);
    assert.ok(
      survivors.every((x) => x.child.exitCode === null),
      'the survivors keep running',
    );
    process.stdout.write(
      `  [multinode 2] ${((Date.now() - t0) / 1000).toFixed(1)} s; killed ${victim.name} with ${orphaned.length} turn(s) in progress; all recovered and finished ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill\n`,
    );
  });
});

s('the nats-server restarts mid-run: workers reconnect and finish everything, nothing lost, nothing doubled', async () => {
  await withWorld(async (w) => {
    const t0 = Date.now();
    const workers = await startWorkers(w.server, 3, w.tmp.file, { leaseMs: 2000, heartbeatMs: 500, sweepMs: 300, echoDelayMs: 600 }, w.workers);
    const log = await reader(w);
    const c = await client(w);
    const before = sessionsNamed('rs_a', 12);
    const inputsBefore = await admitAll(c, before, 'rs_a');
    // mid-run: every session claimed and stepping, none finished yet (a turn takes ~1.8 s)
    const beforeRestart = await pollLog(
      log,
      (events) => {
        const xs = [...analyse(events).executions.values()];
        return xs.length === before.length && xs.every((x) => x.stepStarted >= 1);
      },
      'the first batch to be mid-turn',
      { timeoutMs: 15_000, intervalMs: 100, describe: describeOpen },
    );
    const restartAt = Date.now();
    await w.server.restart();
    const restartMs = Date.now() - restartAt;

    // every worker is back with its command subscription (so admits reach all of them again)
    await waitFor(
      async () => {
        const conns = await connz(w.server).catch(() => []);
        return conns.filter((x) => x.name === 'sessiond-commands' && (x.subscriptions_list ?? []).includes('sessiond.cmd.*')).length === 3;
      },
      { timeoutMs: 15_000, intervalMs: 50, what: 'the three workers to reconnect and serve commands again' },
    );
    const reconnectedMs = Date.now() - restartAt;

    // a second batch after the restart, watched live: every worker publishes its commits again
    const { seen } = await watchAll(w);
    // woken by command: the queue group hands the wakes to the workers, so this shows that the
    // command subscriptions of more than one worker work again
    const after = sessionsNamed('rs_b', 9);
    const inputsAfter = await admitThenWake(c, after, 'rs_b');
    const inputs = [...inputsBefore, ...inputsAfter];
    const events = await untilAllDone(log, inputs, 'everything admitted before and after the restart to finish', 40_000);
    const a = analyse(events);
    const recovered = assertExactlyOnce(a, inputs);
    assertClaimLines(a, workers);
    assert.ok(
      workers.every((x) => x.child.exitCode === null),
      'no worker died with the server',
    );
    const byQueue = spread(a, workers, 'ses_rs_b_');
    assert.ok(byQueue.filter((n) => n > 0).length > 1, `the wakes after the restart were served by more than one worker: ${byQueue.join('/')}`);
    await assertPublishedOnce(seen, events, new Set(after));
    // the log subscriptions (projector) of every worker followed the log through the restart
    const head = events.at(-1)!.position!;
    await waitFor(() => workers.every((x) => projectionCheckpoint(x.db) >= head), {
      timeoutMs: 10_000,
      what: 'every worker projection to reach the log head after the restart',
    });
    // the store survived the restart: everything committed before it is still there, at the same positions
    const finalPositions = new Map(events.map((e) => [e.id, e.position]));
    assert.equal(
      beforeRestart.filter((e) => finalPositions.get(e.id) !== e.position).map((e) => e.id),
      [],
      'events committed before the restart kept',
    );
    process.stdout.write(
      `  [multinode 3] ${((Date.now() - t0) / 1000).toFixed(1)} s; server down/up in ${restartMs} ms, workers serving again after ${reconnectedMs} ms; claims after it ${byQueue.join('/')}; ${recovered.length} execution(s) recovered because the outage outlived their lease\n`,
    );
  });
});

s('a read in flight across a nats-server restart goes on at once, whole and without repeats (no 30 s ordered-consumer stall)', async () => {
  await withWorld(async (w) => {
    const t0 = Date.now();
    const log = await reader(w);
    // a log big enough that whole-log reads (1500 messages) are often cut by the restart
    const total = 1500;
    for (let i = 0; i < total; i++) await log.append(`ses_read_${i % 20}`, Math.floor(i / 20), [admitted(`prompt ${i}`)]);
    let stop = false;
    let next = 0;
    const inFlight = new Set<number>();
    const bad: string[] = [];
    let reads = 0;
    // Four readers in a loop. Before the fix a read cut by a restart waited ~30 s for nats.js's
    // ordered consumer to retry (it gives up on a consumer info that fails while JetStream is
    // still starting, until the pull's `expires`); it must now go on with a new consumer.
    const loops = [0, 1, 2, 3].map(async () => {
      while (!stop) {
        const me = ++next;
        inFlight.add(me);
        try {
          const events = await log.readAll();
          const ids = new Set(events.map((e) => e.id));
          if (events.length !== total || ids.size !== total) bad.push(`read ${me}: ${events.length} events, ${ids.size} distinct`);
          reads++;
        } finally {
          inFlight.delete(me);
        }
      }
    });
    const looping = Promise.all(loops).catch((err: unknown) => {
      bad.push(`a read failed: ${String(err)}`);
    });
    try {
      for (let round = 1; round <= 2; round++) {
        await waitFor(() => inFlight.size === 4, { timeoutMs: 5_000, what: 'four reads in flight' });
        await w.server.restart();
        const cut = [...inFlight];
        await waitFor(() => cut.every((r) => !inFlight.has(r)), { timeoutMs: 10_000, what: `the reads in flight during restart ${round} to finish` });
      }
    } finally {
      stop = true;
      // on failure a stalled read is not waited for (the log is closed by withWorld)
    }
    await looping;
    assert.equal(bad, [], 'every read returned the whole log once');
    process.stdout.write(`  [multinode 4] ${((Date.now() - t0) / 1000).toFixed(1)} s; ${reads} whole-log reads across 2 restarts\n`);
  });
});

s.run();
