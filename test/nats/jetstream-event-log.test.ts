// The EventLog contract against a real nats-server (started by the harness, one per file). Each
// test gets a fresh events stream: cleanup deletes it and sets it up again as the admin user (workers
// may not create streams).
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../src/nats/connection.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { eventLogContract } from '../../src/testing/event-log-contract.ts';
import { startNatsServer, setupStreams, ADMIN, OBSERVER, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { draft, ev } from '../../src/testing/fixtures.ts';
import { lateWrites } from '../../src/audit/late-writes.ts';
import { runCli } from '../support/cli.ts';

let server: NatsServer | undefined;

const contract = eventLogContract('jetstream', async () => {
  server ??= await startNatsServer();
  const connection = { servers: server.url, ...WORKER, reconnectWaitMs: 100 };
  const log = await JetStreamEventLog.open({ connection });
  const others: JetStreamEventLog[] = [];
  const jsm = await jetstreamManager(log.nc);
  return {
    log,
    openReads: async () => (await jsm.streams.info(STREAM_NAME)).state.consumer_count,
    another: async () => {
      const other = await JetStreamEventLog.open({ connection });
      others.push(other);
      return other;
    },
    cleanup: async () => {
      for (const o of others) await o.close();
      await log.close();
      // workers may not delete the stream (nats.conf): the admin user does
      const admin = await connectNats({ servers: server!.url, ...ADMIN });
      await (await jetstreamManager(admin)).streams.delete(STREAM_NAME);
      await admin.close();
      await setupStreams(server!.url);
    },
  };
});
contract.after(async () => {
  await server?.dispose();
});
contract.run();

/**
 * Issue 19, finding 5, on NATS: a renewal decided while the lease is live, published while the
 * server is frozen (SIGSTOP: an outage the client cannot tell from a slow network), is stored once
 * the server is back, after the lease expired. Its `time` is the decision; reads carry the server's
 * stored time as `committedAt`, and `sessiond check` warns of the late write with its lag.
 */
const late = suite('JetStream: a write stored after its lease');
late('an append published during an outage lands after the lease: committedAt shows it, check warns', async () => {
  const own = await startNatsServer();
  const log = await JetStreamEventLog.open({ connection: { servers: own.url, ...WORKER, reconnectWaitMs: 100 } });
  try {
    const ses = 'ses_outage';
    const leaseMs = 1000;
    const claimedAt = Date.now();
    const expiresAt = claimedAt + leaseMs;
    await log.append(ses, 0, [
      draft(ev('execution.claimed', { executionId: 'exe_outage', ownerId: 'own_outage', expiresAt, leaseMs, assistantSeq: -1 }), {
        id: 'evt_outage_claim',
        time: claimedAt,
      }),
    ]);
    const decidedAt = Date.now();
    const renewal = draft(ev('execution.renewed', { executionId: 'exe_outage', expiresAt: decidedAt + leaseMs }), { id: 'evt_outage_renew', time: decidedAt });
    const pid = own.pid!;
    process.kill(pid, 'SIGSTOP');
    let appended: Promise<SessionEvent[]> | undefined;
    try {
      await waitFor(() => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] === 'T', { what: 'nats-server to be stopped' });
      appended = log.append(ses, 1, [renewal]); // sent to a frozen server: stored when it wakes up
      await waitFor(() => Date.now() > expiresAt + 300, { timeoutMs: leaseMs + 10_000, intervalMs: 50, what: 'the lease to expire' });
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const [acked] = await appended;
    assert.ok(renewal.time < expiresAt, 'decided while the lease was live');
    assert.ok(acked!.committedAt! > expiresAt, 'the append result says when the ack came back');
    const stored = (await log.readSession(ses))[1]!;
    assert.is(stored.time, renewal.time, 'time stays the decision time');
    assert.ok(stored.committedAt! > expiresAt + 300, `the server stored it after the lease expired (${stored.committedAt} vs ${expiresAt})`);
    assert.equal(
      lateWrites(await log.readAll()).map((w) => [w.seq, w.lagMs]),
      [[2, stored.committedAt! - expiresAt]],
    );

    const r = await runCli(['check', '--nats', own.url, '--nats-user', OBSERVER.user, '--safety-only'], { env: { SESSIOND_NATS_PASS: OBSERVER.pass } });
    assert.is(r.code, 0, `a warning does not fail check: ${r.stdout}${r.stderr}`);
    assert.match(
      r.stdout,
      `WARNING late_write at seq 2: session ${ses}: execution.renewed of execution exe_outage was decided at ${new Date(decidedAt).toISOString()}, while its lease was live, but committed at ${new Date(stored.committedAt!).toISOString()}, ${stored.committedAt! - expiresAt} ms after the lease expired`,
    );
  } finally {
    await log.close();
    await own.dispose();
  }
});
late.run();
