// g. Clock skew on the 3-server cluster with three real `sessiond start --nats u1,u2,u3` workers:
// one server and one worker run under libfaketime (Debian's faketime: LD_PRELOAD of
// libfaketime.so.1 with FAKETIME, the monotonic clock left alone), the stream's leadership is
// moved to the skewed server, then, with turns in flight, away from it (an election with a
// skewed clock on either side).
//
// What faketime can skew here:
// - the worker (Node): V8 reads the wall clock through libc's clock_gettime, which libfaketime
//   replaces; the worker's events are stamped WORKER_SKEW ahead (checked below on the live events:
//   the test fails if the skew did not take);
// - NOT nats-server: a Go binary reads the time in its runtime (runtime·walltime / nanotime call the
//   vDSO's clock_gettime directly from assembly, never libc's, even in this dynamically linked,
//   cgo-enabled build), so LD_PRELOAD interposes nothing and the server's clock stays right. The
//   test measures it (/varz `now` against this process's clock) and prints it. Skewing a Go server
//   would need a time namespace (CLOCK_REALTIME cannot be offset there either: Linux time
//   namespaces offset only the monotonic and boottime clocks) or a changed system clock, which
//   would skew every process on this shared machine, so the server's skew is not tested here; the
//   Raft elections and lease timers of nats-server use the monotonic clock anyway.
//
// The worker's skew is kept under its lease (WORKER_SKEW < FLAGS.leaseMs): leases are judged on
// the wall clocks of the workers (a claim's expiresAt is the claimer's clock plus the lease, and
// another worker recovers it once its own clock passes that), so a worker ahead by more than the
// lease less the heartbeat would recover live turns of the others at once (fencing still keeps one
// owner: the recovered owner's next append fails) and a worker behind by as much would have its
// own turns recovered under it. Then the checks of every failover test (helpers.ts
// assertClusterLog).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import type { NatsClusterNode } from '../../src/testing/nats-cluster.ts';
import {
  FLAGS,
  MODE,
  REPLICAS,
  admitAll,
  assertClusterLog,
  assertKept,
  assertWorkersKeptRunning,
  begin,
  client,
  faketimeEnv,
  firstBatchMidTurn,
  sessionsNamed,
  summary,
  untilAllDone,
  untilReplicasEqual,
  withCluster,
} from './helpers.ts';

process.stdout.write(`  [cluster] ${MODE}\n`);

const SERVER_SKEW = '+30s';
const WORKER_SKEW = '+1.5s';
const WORKER_SKEW_MS = 1_500;
const SKEWED_WORKER = 'w3';

/** A node's clock against this process's, from /varz `now` (ms; the request's round trip bounds the error). */
async function clockOffset(node: NatsClusterNode): Promise<number> {
  const before = Date.now();
  const varz = await node.monitor<{ now: string }>('/varz');
  const after = Date.now();
  // `now` has nanoseconds: keep milliseconds for Date.parse
  const now = Date.parse(varz.now.replace(/(\.\d{3})\d*/, '$1'));
  return now - (before + after) / 2;
}

const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)]!;

const s = suite(`cluster clock skew: real workers on a 3-server JetStream cluster, R${REPLICAS} stream`);

s(
  `(g) one server under faketime ${SERVER_SKEW} leads the stream, one worker runs ${WORKER_SKEW} ahead; the leader moves mid-turn: nothing lost or doubled, one owner`,
  async () => {
    assert.ok(WORKER_SKEW_MS < FLAGS.leaseMs, 'the worker skew is under the lease');
    await withCluster(
      'clock-skew',
      async (w) => {
        const t0 = Date.now();
        const skewedServer = w.cluster.nodes[0]!;
        const { workers, pids, acked, log } = await begin(w, (name) => (name === SKEWED_WORKER ? faketimeEnv(WORKER_SKEW) : undefined));
        const skewedWorker = workers.find((x) => x.name === SKEWED_WORKER)!;
        const offsets = await Promise.all(w.cluster.nodes.map(clockOffset));
        w.note(`server clocks against the test's: ${w.cluster.nodes.map((n, i) => `${n.name} ${offsets[i]} ms`).join(', ')}`);
        await w.cluster.moveLeader(STREAM_NAME, skewedServer);
        const c = await client(w);

        const { admitting: admittingA, acked: atMove } = await firstBatchMidTurn(c, acked, 'sk_a');
        const movedAt = Date.now();
        const next = w.cluster.nodes[1]!;
        await w.cluster.moveLeader(STREAM_NAME, next);
        const movedMs = Date.now() - movedAt;
        const batchB = sessionsNamed('sk_b', 6);
        const inputs = [...(await admittingA), ...(await admitAll(c, batchB, 'sk_b'))];
        const events = await untilAllDone(log, inputs, 'everything admitted before and after the move to finish');
        const { a, recovered, raw } = await assertClusterLog(w, events, acked, inputs);
        assertKept(atMove, events, 'before the move');
        assertWorkersKeptRunning(workers, pids);
        const replicas = await untilReplicasEqual(w.cluster, 'the replicas to hold the same messages');

        // the skew took: the skewed worker's own writes (of the executions it claimed) arrive stamped ahead
        const owned = (owner: string) => new Set([...a.executions.values()].filter((x) => x.ownerId === owner).map((x) => x.id));
        const lead = (owner: string) => {
          const mine = owned(owner);
          const ahead = acked
            .filter(
              (m) =>
                ['step.started', 'step.ended', 'execution.settled'].includes(m.type) && mine.has((m.payload as { executionId?: string }).executionId ?? ''),
            )
            .map((m) => m.time - (m as { arrived?: number }).arrived!);
          return ahead.length ? median(ahead) : undefined;
        };
        const skewedLead = lead(skewedWorker.ownerId);
        const otherLeads = workers.filter((x) => x !== skewedWorker).map((x) => lead(x.ownerId));
        assert.ok(skewedLead !== undefined, `${SKEWED_WORKER} ran turns (${owned(skewedWorker.ownerId).size} claimed)`);
        assert.ok(skewedLead! > WORKER_SKEW_MS / 2, `${SKEWED_WORKER}'s events are stamped ahead (median ${skewedLead} ms): faketime skewed its clock`);
        process.stdout.write(
          `  [cluster g] ${((Date.now() - t0) / 1000).toFixed(1)} s; server clocks under faketime ${SERVER_SKEW} / not: ${w.cluster.nodes.map((n, i) => `${n.name}${n === skewedServer ? '*' : ''} ${offsets[i]} ms`).join(', ')} ` +
            `(the Go server ignores libfaketime); ${SKEWED_WORKER} stamps its events ${skewedLead} ms ahead (median, against arrival; the others ${otherLeads.map((l) => `${l ?? '-'} ms`).join(', ')}), ` +
            `${owned(skewedWorker.ownerId).size} turns claimed by it; leadership moved ${skewedServer.name} -> ${next.name} mid-turn in ${(movedMs / 1000).toFixed(1)} s; ${summary(a, recovered, acked, raw, replicas)}\n`,
        );
      },
      { env: (i) => (i === 0 ? faketimeEnv(SERVER_SKEW) : undefined) },
    );
  },
);

s.run();
