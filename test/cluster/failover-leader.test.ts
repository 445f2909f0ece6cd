// Failover from the stream leader's own faults, on the 3-server cluster with three real
// `sessiond start --nats u1,u2,u3` workers running turns (failover.test.ts has the crashes, the
// minority partition of a follower and the whole-cluster restart):
//
// d. the server leading the stream (moved there first: the one holding the most worker
//    connections that leaves a whole worker on the majority side) is cut off from the other two
//    while the majority elects a new leader, then healed;
// e. the server leading the stream is SIGSTOPped until the other two have elected a new leader
//    (past the election timeout, 4-9 s in nats-server's Raft), then SIGCONTed.
//
// (e) runs after (d) on the same cluster and workers (helpers.ts sharedWorld).
//
// Beside the workers, a probe (probe.ts) keeps sending appends to the old leader alone, on a
// connection to it only: while it is cut off, none may be acknowledged (a leader that cannot reach
// a majority cannot commit), and each one acknowledged at any time must be in the log after the
// fault at the position acknowledged. The old leader must step down (judged by its own /jsz). Then
// the checks of every failover test (helpers.ts assertClusterLog): nothing acknowledged lost or
// doubled, never two owners, every admitted input run, the independent checker on the raw stream,
// the same worker processes, back on every server by themselves.
//
// These are properties of a replicated stream: with 1 replica (SESSIOND_CLUSTER_REPLICAS=1, or a
// nats-server that does not fence replicated streams) the server holding the stream acknowledges
// every probe while cut off, and no other can be elected, so (d) and (e) fail there, as they must.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import type { NatsClusterNode } from '../../src/testing/nats-cluster.ts';
import { analyse, allDone, describeOpen, pollLog } from '../nats/cluster.ts';
import {
  MODE,
  REPLICAS,
  admitAll,
  assertClusterLog,
  assertKept,
  assertWorkersKeptRunning,
  client,
  cutOffBy,
  sharedWorld,
  partitionVictim,
  reader,
  firstBatchMidTurn,
  sessionsNamed,
  summary,
  untilAllDone,
  untilReplicasEqual,
  untilSteppedDown,
  untilWorkersOn,
} from './helpers.ts';
import { describeAnswers, lostProbes, probeOf } from './probe.ts';

process.stdout.write(`  [cluster] ${MODE}\n`);

const s = suite(`cluster failover of the stream leader: real workers on a 3-server JetStream cluster, R${REPLICAS} stream`);
// (d) then (e) on one cluster and its workers
const leaderFaults = sharedWorld('leader');
s.after(leaderFaults.close);

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

s(
  '(d) the stream leader is cut off with the minority while the majority elects: it acknowledges nothing while cut off, nothing acknowledged is lost',
  leaderFaults.test('leader-isolated', async (w, { workers, pids, acked, log, placed, holder }) => {
    const t0 = Date.now();
    // (with 1 replica the stream cannot move: the server holding it is cut off)
    const victim = REPLICAS === 1 ? holder : partitionVictim(placed, w.cluster.nodes);
    await w.cluster.moveLeader(STREAM_NAME, victim);
    const majority = w.cluster.nodes.filter((n) => n !== victim);
    const { cutOff, whole } = cutOffBy(placed, victim);
    w.note(`victim (leader) ${victim.name}; cut off: ${cutOff.join(', ') || 'no worker'}; whole on the majority: ${whole.join(', ') || 'none'}`);
    // one request of the probe times out after 1 s; the log resends it for 2 s in all, then fails
    const probe = await probeOf(w, victim, 'iso', { timeoutMs: 1_000, retryMs: 2_000 });
    const c = await client(
      w,
      majority.map((n) => n.url),
    );
    const majorityLog = await reader(
      w,
      majority.map((n) => n.url),
    );

    const { admitting: admittingA, acked: atCut } = await firstBatchMidTurn(c, acked, 'li_a', { timeoutMs: 120_000 });
    const cutAt = Date.now();
    w.cluster.isolate(victim);
    // one a second until the majority has elected: each append the old leader takes is an entry
    // the others never had, which it must undo after the heal (slowly: see below)
    const probing = probe.repeat(1_000);
    const first = await Promise.race([w.cluster.streamLeader(STREAM_NAME, 40_000), probe.firstAck]);
    if ('sessionId' in first)
      assert.unreachable(
        `the cut-off old leader acknowledged an append ${first.answeredAt - cutAt} ms after the cut (${first.sessionId} at ${first.acked!.position})`,
      );
    const leader = first as NatsClusterNode;
    const electedMs = Date.now() - cutAt;
    assert.ok(leader !== victim, 'the majority elected a new leader');
    w.note(`${leader.name} elected by the majority after ${electedMs} ms`);
    await probing.stop();

    const batchB = sessionsNamed('li_b', 6);
    const inputsB = whole.length > 0 ? await admitAll(c, batchB, 'li_b') : [];
    const inputsDuring = whole.length > 0 ? [...(await admittingA), ...inputsB] : [];
    const duringCut = await pollLog(majorityLog, (events) => allDone(analyse(events), inputsDuring), 'the majority side to finish or recover every turn', {
      timeoutMs: 60_000,
      describe: describeOpen,
    });
    // the old leader gives up its leadership by itself once it has heard from no majority for
    // nats-server's lost-quorum interval (10 s)
    const steppedDownMs = (await untilSteppedDown(victim, `${victim.name} to step down while cut off`)) - cutAt;
    // and once it has stepped down, still cut off
    const afterStepDown = await probe.send();
    const healAt = Date.now();
    const whileCut = [...probe.answers];
    w.cluster.heal(victim);
    w.note(`healed after ${healAt - cutAt} ms; probes while cut off: ${describeAnswers(whileCut)}`);

    // the old leader's log has entries the others never had (the appends it took while cut off,
    // never committed): it catches up slowly, warning "expected first catchup entry to be a
    // snapshot and peerstate, will retry" (40 s after 68 such appends, 63 s after 20 and the
    // workers' here), while the other two carry on; batch C runs meanwhile
    const catchingUp = w.cluster.waitStreamCurrent(STREAM_NAME, { replicas: REPLICAS, timeoutMs: 180_000 }).then(() => Date.now() - healAt);
    catchingUp.catch(() => undefined);
    const all = await client(w);
    const batchC = sessionsNamed('li_c', 6);
    const inputsC = await admitAll(all, batchC, 'li_c');
    const inputs = [...(await admittingA), ...inputsB, ...inputsC];
    const events = await untilAllDone(log, inputs, 'everything admitted before, during and after the cut to finish');
    const currentMs = await catchingUp;
    assert.ok(whileCut.length >= 3, `the probe sent appends to the cut-off leader (${whileCut.length})`);
    assert.equal(
      whileCut.filter((p) => p.acked).map((p) => `${p.sessionId} acked ${p.answeredAt - cutAt} ms after the cut`),
      [],
      `the cut-off old leader acknowledged no append (${describeAnswers(whileCut)})`,
    );
    assert.equal(lostProbes(probe.answers, events), [], 'no acknowledged probe append is lost');
    const { a, recovered, raw } = await assertClusterLog(w, events, acked, inputs);
    assertKept(atCut, events, 'before the cut');
    assertKept(duringCut, events, 'on the majority side during the cut');
    assertWorkersKeptRunning(workers, pids);
    await untilWorkersOn(w.cluster, workers, [...w.cluster.nodes], 'every worker to have both connections up after the heal');
    const replicas = await untilReplicasEqual(w.cluster, 'the healed server to hold the same messages as the others');
    process.stdout.write(
      `  [cluster d] ${seconds(Date.now() - t0)}; cut off the leader ${victim.name} (connections of ${cutOff.join(', ') || 'no worker'}; whole on the majority: ${whole.join(', ') || 'none'}); ` +
        `${leader.name} elected ${seconds(electedMs)} after the cut, ${victim.name} stepped down ${seconds(steppedDownMs)} after it; healed ${seconds(healAt - cutAt)} after the cut, its replica current ${seconds(currentMs)} after the heal; ` +
        `probe appends to the old leader while cut off: ${describeAnswers(whileCut)} (the last one, after it stepped down: ${afterStepDown.error ?? 'acknowledged'}); ${summary(a, recovered, acked, raw, replicas)}\n`,
    );
  }),
);

s(
  '(e) the stream leader is SIGSTOPped past the election timeout and SIGCONTed: it steps down, nothing it acknowledged is lost, its workers recover',
  leaderFaults.test('leader-stopped', async (w, { workers, pids, acked, log, placed, holder }) => {
    const t0 = Date.now();
    const victim = REPLICAS === 1 ? holder : partitionVictim(placed, w.cluster.nodes);
    await w.cluster.moveLeader(STREAM_NAME, victim);
    const others = w.cluster.nodes.filter((n) => n !== victim);
    const { cutOff: frozen, whole } = cutOffBy(placed, victim);
    w.note(`victim (leader) ${victim.name}; connections of ${frozen.join(', ') || 'no worker'}`);
    // a request to the frozen leader waits in its socket until SIGCONT: its timeout outlasts the stop
    const probe = await probeOf(w, victim, 'stop', { timeoutMs: 20_000, retryMs: 30_000 });
    const c = await client(
      w,
      others.map((n) => n.url),
    );

    const { admitting: admittingA, acked: atStop } = await firstBatchMidTurn(c, acked, 'ls_a', { timeoutMs: 120_000 });
    const stoppedAt = Date.now();
    victim.pause();
    // appends sent to the frozen leader: read by it only once it is continued
    const frozenProbes = [probe.send(), probe.send(), probe.send()];
    const leader = await w.cluster.streamLeader(STREAM_NAME, 40_000);
    const electedMs = Date.now() - stoppedAt;
    assert.ok(leader !== victim, 'the other two elected a new leader');
    // admitted while the old leader is frozen, on the others
    const batchB = sessionsNamed('ls_b', 6);
    const inputsB = whole.length > 0 ? await admitAll(c, batchB, 'ls_b') : [];
    const resumedAt = Date.now();
    victim.resume();
    w.note(`${leader.name} elected ${electedMs} ms after the SIGSTOP; SIGCONT after ${resumedAt - stoppedAt} ms`);
    const steppedDownMs = (await untilSteppedDown(victim, `${victim.name} to step down after SIGCONT`)) - resumedAt;
    const inFrozen = await Promise.all(frozenProbes);
    assert.equal(
      inFrozen.filter((p) => p.acked && p.answeredAt < resumedAt).map((p) => `${p.sessionId} via ${p.via} (${victim.url})`),
      [],
      'no append acknowledged while the leader was stopped',
    );
    const afterProbe = await probe.send();
    await w.cluster.waitStreamCurrent(STREAM_NAME, { replicas: REPLICAS });
    await untilWorkersOn(w.cluster, workers, [...w.cluster.nodes], 'every worker to have both connections up after SIGCONT');
    const backMs = Date.now() - resumedAt;

    const all = await client(w);
    const batchC = sessionsNamed('ls_c', 6);
    const inputsC = await admitAll(all, batchC, 'ls_c');
    const inputs = [...(await admittingA), ...inputsB, ...inputsC];
    const events = await untilAllDone(log, inputs, 'everything admitted before, during and after the stop to finish');
    assert.ok(afterProbe.acked, `an append through ${victim.name} after it stepped down is acknowledged (forwarded to the new leader): ${afterProbe.error}`);
    assert.equal(lostProbes(probe.answers, events), [], 'no acknowledged probe append is lost');
    const { a, recovered, raw } = await assertClusterLog(w, events, acked, inputs);
    assertKept(atStop, events, 'before the stop');
    assertWorkersKeptRunning(workers, pids);
    const replicas = await untilReplicasEqual(w.cluster, 'the continued server to hold the same messages as the others');
    process.stdout.write(
      `  [cluster e] ${seconds(Date.now() - t0)}; SIGSTOPped the leader ${victim.name} (connections of ${frozen.join(', ') || 'no worker'}) for ${seconds(resumedAt - stoppedAt)}; ` +
        `${leader.name} elected ${seconds(electedMs)} after the stop; ${victim.name} stepped down ${seconds(steppedDownMs)} after SIGCONT; every worker on both connections ${seconds(backMs)} after SIGCONT; ` +
        `the 3 appends sent to it while stopped: ${describeAnswers(inFrozen)} (answered ${inFrozen.map((p) => seconds(p.answeredAt - resumedAt)).join(', ')} after SIGCONT); ` +
        `${summary(a, recovered, acked, raw, replicas)}\n`,
    );
  }),
);

s.run();
