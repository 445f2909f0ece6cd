// What newer nats-servers answer to an append, and what the JetStream log makes of each, on the real
// servers: one server (R1) and the 3-server cluster with a 3-replica stream.
//
// - racing appends expecting the same sequence on R3: the losers get 10164 ("wrong last sequence",
//   no number) where one server says 10071; both are one SequenceConflictError;
// - an append whose earlier attempt was stored but whose ack was lost, resent with the same
//   Nats-Msg-Id: on R3 the server answers `duplicate: true` before it checks the sequence; the log
//   recognises its own batch and returns what is stored;
// - 503 no responders while the stream elects a leader: the append waits and lands;
// - 429 when the stream's inbound queue is full (10167): the append backs off and lands.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { SequenceConflictError } from '../../src/errors.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { JetStreamSnapshotStore, setupSnapshotStream } from '../../src/nats/snapshot-store.ts';
import { encodeBatch, eventStreamConfig } from '../../src/nats/stream.ts';
import { STREAM_NAME, subjects } from '../../src/nats/subjects.ts';
import { catalog } from '../../src/events/catalog.ts';
import type { DraftEvent, SessionEvent } from '../../src/events/envelope.ts';
import { draft, ev, uniqueId } from '../../src/testing/fixtures.ts';
import { fencesReplicatedStreams, startNatsCluster, type NatsCluster } from '../../src/testing/nats-cluster.ts';
import { ADMIN, REPO_NATS_CONF, WORKER, startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';

const admitted = (n = 1): DraftEvent[] => Array.from({ length: n }, () => draft(ev('input.admitted', { inputId: uniqueId('inp') }), { id: uniqueId('evt') }));

/** Creates the events stream as the admin user (as `sessiond setup` does), waiting through a busy meta leader. */
async function createStream(servers: string[], replicas: number): Promise<void> {
  const admin = await connectNats({ servers, ...ADMIN });
  try {
    const jsm = await jetstreamManager(admin);
    await waitFor(
      async () => {
        await jsm.streams.add(eventStreamConfig({ replicas })).catch(() => undefined);
        return jsm.streams.info(STREAM_NAME).then(
          (i) => i.config.num_replicas === replicas,
          () => false,
        );
      },
      { timeoutMs: 30_000, intervalMs: 200, what: `the ${replicas}-replica events stream` },
    );
  } finally {
    await admin.close();
  }
}

const openLog = (servers: string[], extra: Partial<Parameters<typeof JetStreamEventLog.open>[0]> = {}) =>
  JetStreamEventLog.open({ connection: { servers, ...WORKER, reconnectWaitMs: 100 }, ensureStream: false, ...extra });

/** The batch `log.append` would publish for these drafts at `expectedSeq` (to publish it as an earlier attempt would have). */
function batchOf(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Uint8Array {
  return encodeBatch(
    drafts.map(
      (d, i) =>
        ({ id: d.id, type: d.type, version: catalog[d.type].version, sessionId, seq: expectedSeq + i + 1, time: d.time, payload: d.payload }) as SessionEvent,
    ),
  );
}

/** Three logs on three connections append to each session at once, expecting the same sequence, round after round. */
async function race(servers: string[], rounds: number): Promise<{ stored: number; conflicts: number; other: string[] }> {
  const logs = await Promise.all([0, 1, 2].map((i) => openLog([servers[i % servers.length]!])));
  const out = { stored: 0, conflicts: 0, other: [] as string[] };
  try {
    for (let r = 0; r < rounds; r++) {
      const sessionId = uniqueId('ses');
      for (let expected = 0; expected < 3; expected++) {
        const settled = await Promise.allSettled(logs.map((log) => log.append(sessionId, expected, admitted())));
        for (const x of settled) {
          if (x.status === 'fulfilled') out.stored++;
          else if (x.reason instanceof SequenceConflictError) out.conflicts++;
          else out.other.push(`${(x.reason as Error).name}: ${(x.reason as Error).message}`);
        }
      }
    }
    return out;
  } finally {
    for (const log of logs) await log.close();
  }
}

/** The second attempt of an append whose first was stored (its ack lost): the log must hand back what is stored, once. */
async function resendAfterLostAck(servers: string[]): Promise<{ log: JetStreamEventLog; nc: NatsConnection }> {
  const log = await openLog(servers);
  const nc = await connectNats({ servers, ...WORKER });
  const js = jetstream(nc);
  const sessionId = uniqueId('ses');
  // a session's first append: stored by an attempt whose ack never came back
  const first = admitted(2);
  await js.publish(subjects.events(sessionId), batchOf(sessionId, 0, first), { msgID: first[0]!.id, expect: { lastSubjectSequence: 0 } });
  const again = await log.append(sessionId, 0, first);
  assert.equal(
    again.map((e) => e.id),
    first.map((d) => d.id),
    'the stored batch, recognised as this append',
  );
  // a later append with the tail cached: the earlier attempt stored it, the resend expects the old tail
  const second = admitted(1);
  const tailSeq = again[0]!.position!;
  await js.publish(subjects.events(sessionId), batchOf(sessionId, 2, second), { msgID: second[0]!.id, expect: { lastSubjectSequence: tailSeq } });
  const resent = await log.append(sessionId, 2, second);
  assert.equal(
    resent.map((e) => [e.id, e.seq]),
    [[second[0]!.id, 3]],
  );
  const all = await log.readSession(sessionId);
  assert.equal(
    all.map((e) => e.seq),
    [1, 2, 3],
    'stored once each',
  );
  return { log, nc };
}

const single = suite<{ server: NatsServer }>('append answers: one nats-server');
single.before(async (ctx) => {
  ctx.server = await startNatsServer();
  await createStream([ctx.server.url], 1);
});
single.after(async (ctx) => {
  await ctx.server.dispose();
});

single('racing appends: one stored per round, the others a SequenceConflictError', async ({ server }) => {
  const r = await race([server.url], 10);
  assert.equal(r.other, []);
  assert.is(r.stored, 30);
  assert.is(r.conflicts, 60);
});

single('an append stored by an attempt whose ack was lost is recognised when resent with the same msg id', async ({ server }) => {
  const { log, nc } = await resendAfterLostAck([server.url]);
  assert.ok(log.stats.retriesRecognised >= 2, JSON.stringify(log.stats));
  await log.close();
  await nc.close();
});

single('429: a full stream queue (max_buffered_msgs) is waited out, every append lands once', async () => {
  // a server whose streams buffer a single inbound message: concurrent appends overflow it at once
  const dir = mkdtempSync(join(tmpdir(), 'sessiond-429-'));
  const config = join(dir, 'nats.conf');
  writeFileSync(
    config,
    readFileSync(REPO_NATS_CONF, 'utf8').replace(/jetstream\s*\{/, (m) => `${m}\n  max_buffered_msgs: 1`),
  );
  const server = await startNatsServer({ config });
  try {
    await createStream([server.url], 1);
    const log = await openLog([server.url]);
    const sessions = Array.from({ length: 300 }, () => uniqueId('ses'));
    const results = await Promise.allSettled(sessions.map((s) => log.append(s, 0, admitted())));
    const failed = results.flatMap((x) => (x.status === 'rejected' ? [String(x.reason)] : []));
    assert.equal(failed.slice(0, 3), [], `${failed.length} of ${sessions.length} appends failed`);
    assert.ok(log.stats.retries > 0, `the queue never filled (stats ${JSON.stringify(log.stats)}): the test did not reach a 429`);
    for (const s of sessions.slice(0, 20)) assert.is(await log.lastSeq(s), 1);
    await log.close();
  } finally {
    await server.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

const cluster = suite<{ cluster: NatsCluster }>(`append answers: 3-server cluster, 3 replicas`);
cluster.before(async (ctx) => {
  ctx.cluster = await startNatsCluster();
  assert.ok(fencesReplicatedStreams(), 'the cluster tests need a nats-server that fences replicated streams (npm test builds one)');
  await createStream(ctx.cluster.urls, 3);
  await ctx.cluster.waitStreamCurrent(STREAM_NAME, { replicas: 3 });
});
cluster.after(async (ctx) => {
  await ctx.cluster.dispose();
});

cluster(
  'racing appends on R3 (10164, wrong last sequence without the number): one stored per round, the others a SequenceConflictError',
  async ({ cluster: c }) => {
    const r = await race(c.urls, 10);
    assert.equal(r.other, [], 'every refusal is a SequenceConflictError');
    assert.is(r.stored, 30);
    assert.is(r.conflicts, 60);
  },
);

cluster('R3: a resend with the same msg id is answered duplicate before the sequence check, and recognised', async ({ cluster: c }) => {
  const { log, nc } = await resendAfterLostAck(c.urls);
  assert.ok(log.stats.duplicateAcks >= 1, `the server answered duplicate: ${JSON.stringify(log.stats)}`);
  await log.close();
  await nc.close();
});

cluster(
  'R3: the same append sent at once by two logs (a resend racing its original; 10158 while it is in process): both get the stored batch, stored once',
  async ({ cluster: c }) => {
    const logs = await Promise.all([0, 1].map((i) => openLog([c.urls[i]!])));
    const seen = { other: [] as string[] };
    try {
      for (let round = 0; round < 30; round++) {
        const sessionId = uniqueId('ses');
        const batch = admitted(2);
        const settled = await Promise.allSettled(logs.map((log) => log.append(sessionId, 0, batch)));
        for (const x of settled) {
          if (x.status === 'fulfilled')
            assert.equal(
              x.value.map((e) => e.id),
              batch.map((d) => d.id),
            );
          else seen.other.push(`${(x.reason as Error).name}: ${(x.reason as Error).message}`);
        }
        assert.equal(
          (await logs[0]!.readSession(sessionId)).map((e) => e.seq),
          [1, 2],
          'stored once',
        );
      }
      assert.equal(seen.other, [], 'every attempt got the stored batch');
    } finally {
      for (const log of logs) await log.close();
    }
  },
);

cluster(
  'R3: a worker opens a 3-replica snapshot stream (it is verified as fenced on this server, not refused for an unknown version)',
  async ({ cluster: c }) => {
    const admin = await connectNats({ servers: c.urls, ...ADMIN });
    const worker = await connectNats({ servers: c.urls, ...WORKER });
    try {
      await setupSnapshotStream(await jetstreamManager(admin), { replicas: 3, serverVersion: admin.info?.version });
      const store = await JetStreamSnapshotStore.open(worker);
      assert.ok(store);
    } finally {
      await worker.close();
      await admin.close();
    }
  },
);

cluster('R3: appends sent while the stream elects a new leader (no responders, not leader) wait and land', async ({ cluster: c }) => {
  const leader = await c.streamLeader(STREAM_NAME);
  const others = c.nodes.filter((n) => n !== leader).map((n) => n.url);
  const log = await openLog(others);
  const sessionId = uniqueId('ses');
  await log.append(sessionId, 0, admitted());
  await leader.kill();
  // at once, before any new leader exists
  const appended = await log.append(sessionId, 1, admitted());
  assert.is(appended[0]!.seq, 2);
  const next = await log.append(sessionId, 2, admitted());
  assert.is(next[0]!.seq, 3);
  assert.equal(
    (await log.readSession(sessionId)).map((e) => e.seq),
    [1, 2, 3],
  );
  await log.close();
  await leader.start();
});

single.run();
cluster.run();
