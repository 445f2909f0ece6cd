// Failover on a real 3-server NATS cluster (src/testing/nats-cluster.ts, the repo's
// nats-cluster.conf) with three real `sessiond start --nats u1,u2,u3` worker processes, while they
// run turns (the faults of the issue "The replicated cluster, for real"; the leader's own faults (d)
// and (e) are in failover-leader.test.ts, the clock skew (g) in failover-skew.test.ts):
//
// a. the server leading the events stream is SIGKILLed, then restarted (with 3 replicas the leader
//    is first moved to the server holding the most worker connections);
// b. a server that does not lead the stream is SIGKILLed, and restarted with its store (a server
//    back with an empty store is durability.test.ts's second test);
// c. a server that does not lead the stream is cut off from the other two (its routes dropped by
//    TCP proxies: a minority partition) and healed;
// f. the whole cluster is SIGKILLed at once and started again.
//
// (a), (b) and (f) run one after the other on one cluster and the same three workers (helpers.ts
// sharedWorld: the set-up is a third of a test's time); (c) on its own.
//
// The stream has 3 replicas where the nats-server fences appends on replicated streams, else 1 (see
// helpers.ts REPLICAS and fencing.test.ts: Debian's 2.9.10 does not); the mode is printed. With
// 1 replica, "the leader" of (a) is the server holding the stream (it may hold no worker
// connection: then (b) is where workers move), and (c) cuts off a server that does not hold it.
//
// Prompts are admitted before each fault (their turns in flight when it hits), during it (retried
// through the outage with the same input id) and after it. Afterwards: nothing acknowledged lost
// (every event a worker published live, which it does once its append is acknowledged, is in the
// log at the same seq and position; every acknowledged admission is in the log; what was committed
// before the fault is still there), nothing doubled, never two owners, every admitted input run,
// the fault suite's independent checker passes on the raw stream, the same worker processes still
// run (reconnected by themselves to the surviving servers), and the replicas hold the same messages.
//
// Waits are on the servers' state, the workers' connections or polls of the log, with deadlines;
// nothing here is timed. Every process started is killed in a `finally`, and on exit.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { analyse, allDone, describeOpen, pollLog } from '../nats/cluster.ts';
import {
  MODE,
  REPLICAS,
  admitAll,
  assertClusterLog,
  assertKept,
  assertWorkersKeptRunning,
  begin,
  client,
  sharedWorld,
  cutOffBy,
  mostConnected,
  partitionVictim,
  reader,
  firstBatchMidTurn,
  sessionsNamed,
  summary,
  touching,
  untilAllDone,
  untilReplicasEqual,
  untilWorkersOn,
  withCluster,
} from './helpers.ts';

process.stdout.write(`  [cluster] ${MODE}\n`);

const s = suite(`cluster failover: real workers on a 3-server JetStream cluster, R${REPLICAS} stream`);
// (a), (b) and (f) on one cluster and its workers, one after the other; (c) on its own
const crashes = sharedWorld('crashes');

s(
  `(a) the server leading the stream is SIGKILLed mid-run and restarted: workers reconnect, nothing lost or doubled`,
  crashes.test('leader-kill', async (w, { workers, pids, acked, log, placed, holder }) => {
    const t0 = Date.now();
    // the victim leads the stream and holds worker connections: with 3 replicas, the leader is moved
    // to the server holding the most; with 1, it is the server that holds the stream
    let victim = holder;
    if (REPLICAS === 3) {
      victim = mostConnected(placed, [...w.cluster.nodes]);
      await w.cluster.moveLeader(STREAM_NAME, victim);
    }
    const moved = touching(placed, victim);
    w.note(`victim ${victim.name}, connections of ${moved.join(', ') || 'no worker'}`);
    const c = await client(w);

    const { admitting: admittingA, acked: atKill } = await firstBatchMidTurn(c, acked, 'lk_a');
    const killedAt = Date.now();
    await victim.kill();
    const survivors = w.cluster.nodes.filter((n) => n !== victim);

    // admitted during the outage: the client sends the same ids again until a worker answers
    const batchB = sessionsNamed('lk_b', 6);
    const admittingB = admitAll(c, batchB, 'lk_b', { timeoutMs: 90_000 });
    await untilWorkersOn(w.cluster, workers, survivors, 'every worker to reconnect to the surviving servers');
    const reconnectedMs = Date.now() - killedAt;
    let leader = victim;
    if (REPLICAS === 3) {
      leader = await w.cluster.streamLeader(STREAM_NAME);
      assert.ok(leader !== victim, 'a surviving server leads the stream');
      await admittingB; // with 3 replicas the survivors take the admissions while the victim is down
    }
    const electedMs = Date.now() - killedAt;
    w.note(`workers on the survivors after ${reconnectedMs} ms; stream led by ${leader.name} after ${electedMs} ms`);

    await victim.start();
    await w.cluster.waitStreamCurrent(STREAM_NAME, { replicas: REPLICAS });
    const inputsB = await admittingB;
    const batchC = sessionsNamed('lk_c', 6);
    const inputsC = await admitAll(c, batchC, 'lk_c');
    const inputs = [...(await admittingA), ...inputsB, ...inputsC];
    const events = await untilAllDone(log, inputs, 'everything admitted before, during and after the kill to finish');

    const { a, recovered, raw } = await assertClusterLog(w, events, acked, inputs);
    assertKept(atKill, events, 'before the kill');
    assertWorkersKeptRunning(workers, pids);
    const replicas = await untilReplicasEqual(w.cluster, 'the restarted server to hold the same messages as the others');
    process.stdout.write(
      `  [cluster a] ${((Date.now() - t0) / 1000).toFixed(1)} s; SIGKILLed ${victim.name} (leading the stream; connections of ${moved.join(', ') || 'no worker'}); ` +
        `workers on the survivors ${(reconnectedMs / 1000).toFixed(1)} s later${REPLICAS === 3 ? `, ${leader.name} elected ${(electedMs / 1000).toFixed(1)} s after the kill` : ''}; ` +
        `${summary(a, recovered, acked, raw, replicas)}\n`,
    );
  }),
);

s(
  '(b) a server not leading the stream is SIGKILLed and restarted with its store: turns go on, it catches up',
  crashes.test('follower-kill', async (w, { workers, pids, acked, log, placed, holder }) => {
    const t0 = Date.now();
    const victim = mostConnected(
      placed,
      w.cluster.nodes.filter((n) => n !== holder),
    );
    const moved = touching(placed, victim);
    w.note(`victim ${victim.name}, connections of ${moved.join(', ') || 'no worker'}`);
    const c = await client(w);

    const { admitting: admittingA, acked: atKill } = await firstBatchMidTurn(c, acked, 'fk_a');
    const killedAt = Date.now();
    await victim.kill();
    const survivors = w.cluster.nodes.filter((n) => n !== victim);
    const batchB = sessionsNamed('fk_b', 6);
    const admittingB = admitAll(c, batchB, 'fk_b');
    await untilWorkersOn(w.cluster, workers, survivors, 'every worker to reconnect to the surviving servers');
    const reconnectedMs = Date.now() - killedAt;
    const inputsB = await admittingB;
    assert.is((await w.cluster.streamLeader(STREAM_NAME)).name, holder.name, 'the stream kept its leader');
    const inputsA = await admittingA;
    const whileDown = await untilAllDone(log, [...inputsA, ...inputsB], 'the turns to finish on two servers');

    // back with its store (a process crash, not a lost disk: durability.test.ts brings a server back
    // empty): it catches up on what the other two stored meanwhile
    const restartAt = Date.now();
    await victim.start();
    await w.cluster.waitStreamCurrent(STREAM_NAME, { replicas: REPLICAS });
    const caughtUpMs = Date.now() - restartAt;
    const batchC = sessionsNamed('fk_c', 6);
    const inputsC = await admitAll(c, batchC, 'fk_c');
    const inputs = [...inputsA, ...inputsB, ...inputsC];
    const events = await untilAllDone(log, inputs, 'everything to finish with the restarted server back');
    const { a, recovered, raw } = await assertClusterLog(w, events, acked, inputs);
    assertKept(atKill, events, 'before the kill');
    assertKept(whileDown, events, 'while the server was down');
    assertWorkersKeptRunning(workers, pids);
    const replicas = await untilReplicasEqual(w.cluster, 'the restarted server to hold the same messages as the others');
    process.stdout.write(
      `  [cluster b] ${((Date.now() - t0) / 1000).toFixed(1)} s; SIGKILLed ${victim.name} (connections of ${moved.join(', ') || 'no worker'}; ${holder.name} kept the stream), ` +
        `workers on the survivors ${(reconnectedMs / 1000).toFixed(1)} s later, ${whileDown.length} events committed while it was down; restarted with its store, current ${(caughtUpMs / 1000).toFixed(1)} s after its start; ` +
        `${summary(a, recovered, acked, raw, replicas)}\n`,
    );
  }),
);

s(
  '(f) the whole cluster is SIGKILLed and started again: every acknowledged write survives, workers reconnect, turns finish',
  crashes.test('cluster-restart', async (w, { workers, pids, acked, log }) => {
    const t0 = Date.now();
    const c = await client(w);
    const { admitting: admittingA, acked: atKill } = await firstBatchMidTurn(c, acked, 'cr_a');
    const killedAt = Date.now();
    await w.cluster.killAll();
    await w.cluster.startAll();
    await w.cluster.waitStreamCurrent(STREAM_NAME, { replicas: REPLICAS });
    await untilWorkersOn(w.cluster, workers, [...w.cluster.nodes], 'every worker to reconnect');
    const backMs = Date.now() - killedAt;
    const batchB = sessionsNamed('cr_b', 6);
    const inputsB = await admitAll(c, batchB, 'cr_b');
    const inputs = [...(await admittingA), ...inputsB];
    const events = await untilAllDone(log, inputs, 'everything admitted before and after the restart to finish');
    const { a, recovered, raw } = await assertClusterLog(w, events, acked, inputs);
    assertKept(atKill, events, 'before the kill');
    assertWorkersKeptRunning(workers, pids);
    const replicas = await untilReplicasEqual(w.cluster, 'the replicas to hold the same messages');
    const settledAfter = new Set([...a.executions.values()].filter((x) => x.sessionId.startsWith('ses_cr_b_')).map((x) => x.ownerId));
    process.stdout.write(
      `  [cluster f] ${((Date.now() - t0) / 1000).toFixed(1)} s; all three servers SIGKILLed with turns in flight (${atKill.length} acknowledged events seen live by then), ` +
        `stream and every worker back ${(backMs / 1000).toFixed(1)} s later; ` +
        `${settledAfter.size} workers ran turns after it; ${summary(a, recovered, acked, raw, replicas)}\n`,
    );
  }),
);

s(
  '(c) a server not leading the stream is cut off from the other two and healed: its workers are fenced out, the others recover their turns, nothing doubled',
  async () => {
    await withCluster('partition', async (w) => {
      const t0 = Date.now();
      const { workers, pids, acked, log, placed, holder } = await begin(w);
      // a minority partition of a follower (with 3 replicas; with 1, of a server not holding the
      // stream): the stream keeps its leader; the cut-off server's clients lose the stream. The cut
      // of the leader itself is failover-leader.test.ts (d).
      const victim = partitionVictim(
        placed,
        w.cluster.nodes.filter((n) => n !== holder),
      );
      const majority = w.cluster.nodes.filter((n) => n !== victim);
      const { cutOff, whole } = cutOffBy(placed, victim);
      w.note(`victim ${victim.name}; cut off: ${cutOff.join(', ') || 'no worker'}; whole on the majority: ${whole.join(', ') || 'none'}`);
      // the client and the reader of the partition phase are on the majority side (a client on the
      // cut-off server would be cut off too)
      const c = await client(
        w,
        majority.map((n) => n.url),
      );
      const majorityLog = await reader(
        w,
        majority.map((n) => n.url),
      );

      const { admitting: admittingA, acked: atCut } = await firstBatchMidTurn(c, acked, 'pt_a', { timeoutMs: 120_000 });
      const cutAt = Date.now();
      w.cluster.isolate(victim);
      assert.is((await w.cluster.streamLeader(STREAM_NAME)).name, holder.name, 'the stream kept its leader');
      // admitted during the partition when a worker can serve them from the majority side
      const batchB = sessionsNamed('pt_b', 6);
      const inputsB = whole.length > 0 ? await admitAll(c, batchB, 'pt_b') : [];
      const inputsDuring = whole.length > 0 ? [...(await admittingA), ...inputsB] : [];
      // the majority side finishes everything in the log: turns of cut-off workers are recovered once
      // their lease runs out (admissions of batch A not acknowledged by now wait for the heal when no
      // worker serves commands on the majority side)
      const duringCut = await pollLog(majorityLog, (events) => allDone(analyse(events), inputsDuring), 'the majority side to finish or recover every turn', {
        timeoutMs: 60_000,
        describe: describeOpen,
      });
      const recoveredDuringCut = [...analyse(duringCut).executions.values()].filter((x) => x.recoveryStarted.length > 0).length;
      const healAt = Date.now();
      w.cluster.heal(victim);
      await w.cluster.waitStreamCurrent(STREAM_NAME, { replicas: REPLICAS });
      w.note(`healed after ${healAt - cutAt} ms; ${recoveredDuringCut} executions recovered during the cut`);

      // after the heal every worker takes commands again (the client now on every server)
      const all = await client(w);
      const batchC = sessionsNamed('pt_c', 6);
      const inputsC = await admitAll(all, batchC, 'pt_c');
      const inputs = [...(await admittingA), ...inputsB, ...inputsC];
      const events = await untilAllDone(log, inputs, 'everything admitted before, during and after the partition to finish');
      const { a, recovered, raw } = await assertClusterLog(w, events, acked, inputs);
      assertKept(atCut, events, 'before the cut');
      assertKept(duringCut, events, 'on the majority side during the cut');
      assertWorkersKeptRunning(workers, pids);
      const replicas = await untilReplicasEqual(w.cluster, 'the healed server to hold the same messages as the others');
      const claimedAfter = new Set([...a.executions.values()].filter((x) => x.sessionId.startsWith('ses_pt_c_')).map((x) => x.ownerId));
      process.stdout.write(
        `  [cluster c] ${((Date.now() - t0) / 1000).toFixed(1)} s; cut off ${victim.name} (connections of ${cutOff.join(', ') || 'no worker'}; whole on the majority: ${whole.join(', ') || 'none'})` +
          `, ${holder.name} kept the stream, healed ${((healAt - cutAt) / 1000).toFixed(1)} s later once the majority had finished or recovered everything ` +
          `(${recoveredDuringCut} recovered); ` +
          `${claimedAfter.size} workers ran turns after the heal; ${summary(a, recovered, acked, raw, replicas)}\n`,
      );
    });
  },
);

s.after(crashes.close);

s.run();
