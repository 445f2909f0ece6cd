/**
 * `sessiond verify --nats` against a real nats-server (the pinned build, SESSIOND_NATS_SERVER):
 * a JetStream log written by an engine reads the same, its stored snapshots compared when the user
 * may read them; a message on a session's subject that does not decode is that session's problem.
 */
import { jetstream } from '@nats-io/jetstream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hydrate } from '../../src/machines/decider.ts';
import { JetStreamSnapshotStore } from '../../src/nats/snapshot-store.ts';
import { subjects } from '../../src/nats/subjects.ts';
import { CLIENT, WORKER } from '../../src/testing/nats-server.ts';
import { runCli } from '../support/cli.ts';
import { natsWorld, type NatsWorld } from '../nats/helpers.ts';

let world: NatsWorld;
let log: Awaited<ReturnType<NatsWorld['engine']>>['log'];
const as = (user: { user: string; pass: string }) => ['--nats', world.server.url, '--nats-user', user.user, '--nats-pass', user.pass];

test.before(async () => {
  world = await natsWorld();
  const opened = await world.engine({ liveCommits: false });
  const { engine, nc } = opened;
  log = opened.log;
  for (const id of ['ses_n1', 'ses_n2', 'ses_n3']) {
    await engine.admit(id, { prompt: `hello from ${id}` });
    await engine.awaitIdle(id);
  }
  const snapshots = await JetStreamSnapshotStore.open(nc);
  await snapshots.put(hydrate('ses_n1', await log.readSession('ses_n1')));
});
test.after(async () => {
  await world.dispose();
});

test('verify nats - a JetStream log written by an engine reads the same: exit 0, its stored snapshot compared (worker user)', async () => {
  const r = await runCli(['verify', ...as(WORKER)]);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, `read NATS ${world.server.url}`);
  assert.match(r.stdout, 'compared 1 stored snapshot with the current fold at its sequence');
  assert.match(r.stdout, /verified 3 sessions \(\d+ events\): all read the same with this version/);
});

test('verify nats - a user that may not read the snapshot stream: the log verified, the snapshots said not compared', async () => {
  const r = await runCli(['verify', ...as(CLIENT), '--json']);
  assert.is(r.code, 0, r.stdout + r.stderr);
  const report = JSON.parse(r.stdout);
  assert.is(report.sessions, 3);
  assert.ok(
    report.notes.some((n: string) => n.startsWith('stored snapshots were not compared: the snapshot stream SESSIOND_SNAPSHOTS could not be read')),
    report.notes,
  );
});

test('verify nats - a stored message that does not decode: its session undecodable at the sequence after its last good event, exit 1', async () => {
  const nc = await world.connect(WORKER);
  const js = jetstream(nc);
  const last = (await log.readSession('ses_n2')).at(-1)!;
  await js.publish(subjects.events('ses_n2'), new Uint8Array([0x92, 0x01]), { expect: { lastSubjectSequence: last.position! } });
  const r = await runCli(['verify', ...as(WORKER)]);
  assert.is(r.code, 1, r.stderr);
  const line = r.stdout.split('\n').find((l) => l.startsWith('ses_n2  '));
  assert.ok(line?.startsWith(`ses_n2  undecodable at seq ${last.seq + 1}: `), r.stdout);
  assert.match(r.stdout, '1 of 3 sessions would read differently with this version: 1 undecodable');
});

test.run();
