// Attack 4 of the issue "Hostile input must not stop a session or a worker": streams created first by
// a holder of the worker password, on a fresh deployment. SESSIOND_EVENTS keeping 3 messages per
// subject (history dropped), SESSIOND_SNAPSHOTS also capturing the client's and admin's inboxes and
// the command subjects (every command and reply stored for the worker user to read, publish acks as
// command replies); `sessiond setup` said "ready" and changed nothing. Now:
//
// 1. nats.conf gives the worker user no right to create a stream, so this cannot be done any more;
//    a worker on a fresh server refuses to start and says to run `sessiond setup` first;
// 2. on streams made that way (here with the permissions workers used to have), a worker refuses to
//    start naming each setting; `sessiond setup` as admin changes what it can in place, recreates the
//    snapshot cache (dropping what it captured) and says so; then the worker starts;
// 3. what cannot be changed in place (storage) is refused by setup with how to back up and recreate.
//
// natscli is the client that is not the Node client; real `sessiond` processes; a real nats-server.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../src/nats/connection.ts';
import { isStreamNotFound } from '../../src/nats/stream.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { SNAPSHOT_STREAM } from '../../src/nats/snapshot-store.ts';
import { REPO_NATS_CONF, startNatsServer, ADMIN, CLIENT, WORKER, workerNatsFlags, type NatsServer } from '../../src/testing/nats-server.ts';
import { tempDir } from '../support/tmp.ts';
import { runCli, startCli } from '../support/cli.ts';
import { natsCli } from './natscli.ts';

const s = suite('hostile streams on a fresh deployment');
const tmp = tempDir('sessiond-hostile-streams-');
s.after(() => tmp.remove());

const HOSTILE_EVENTS = {
  name: STREAM_NAME,
  subjects: ['sessiond.events.>'],
  retention: 'limits',
  storage: 'file',
  discard: 'old',
  max_msgs_per_subject: 3,
  max_msgs: -1,
  max_bytes: -1,
  max_age: 0,
  max_msg_size: -1,
  max_consumers: -1,
  num_replicas: 1,
  duplicate_window: 120_000_000_000,
};
const HOSTILE_SNAPSHOTS = {
  name: SNAPSHOT_STREAM,
  subjects: ['sessiond.snapshots.>', '_INBOX_client.>', '_INBOX_admin.>', 'sessiond.cmd.>'],
  retention: 'limits',
  storage: 'file',
  discard: 'old',
  max_msgs_per_subject: 1,
  max_msgs: -1,
  max_bytes: -1,
  max_age: 0,
  max_msg_size: -1,
  max_consumers: -1,
  num_replicas: 1,
  duplicate_window: 120_000_000_000,
  deny_delete: true,
  deny_purge: true,
};

/** nats.conf as it was before: the worker user could create both streams. */
function oldPermissionsConf(): string {
  const text = readFileSync(REPO_NATS_CONF, 'utf8').replace(
    '"$JS.API.STREAM.MSG.GET.SESSIOND_EVENTS",',
    '"$JS.API.STREAM.MSG.GET.SESSIOND_EVENTS", "$JS.API.STREAM.CREATE.SESSIOND_EVENTS", "$JS.API.STREAM.CREATE.SESSIOND_SNAPSHOTS",',
  );
  const file = tmp.file('nats-old-permissions.conf');
  writeFileSync(file, text);
  return file;
}

/** `nats stream add` with a JSON config, as `user`. */
async function addStream(server: NatsServer, user: { user: string; pass: string }, config: object): Promise<{ code: number | null; out: string }> {
  const file = tmp.file(`stream-${(config as { name: string }).name}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(config));
  const r = await natsCli(server.url, user, ['stream', 'add', '--config', file]);
  return { code: r.code, out: r.stdout + r.stderr };
}

async function streamInfo(server: NatsServer, name: string) {
  const nc = await connectNats({ servers: server.url, ...ADMIN });
  try {
    return await (await jetstreamManager(nc)).streams.info(name).catch((err: unknown) => {
      if (isStreamNotFound(err)) return undefined;
      throw err;
    });
  } finally {
    await nc.close();
  }
}

const startArgs = (server: NatsServer) => ['start', ...workerNatsFlags(server.url), '--db', tmp.file(`w-${Math.random().toString(36).slice(2)}.db`)];
const setupArgs = (server: NatsServer, ...more: string[]) => ['setup', '--nats', server.url, '--nats-user', ADMIN.user, '--nats-pass', ADMIN.pass, ...more];

/** A worker starts on the streams (it prints how to send it a prompt), then stops. */
async function workerStarts(server: NatsServer): Promise<void> {
  const started = startCli(startArgs(server));
  try {
    await started.waitFor('send it a prompt');
  } finally {
    started.child.kill('SIGTERM');
    await started.exited;
  }
}

s('the worker user may create neither stream; a worker on a fresh server refuses to start and says to run sessiond setup first', async () => {
  const server = await startNatsServer({ streams: false });
  try {
    for (const config of [HOSTILE_EVENTS, HOSTILE_SNAPSHOTS]) {
      const r = await addStream(server, WORKER, config);
      assert.is.not(r.code, 0, `the worker user created ${config.name}: ${r.out}`);
      assert.is(await streamInfo(server, config.name), undefined, `${config.name} does not exist`);
    }
    const worker = await runCli(startArgs(server), { timeoutMs: 30_000 });
    assert.is.not(worker.code, 0, worker.stdout);
    assert.match(worker.stderr, `JetStream stream ${STREAM_NAME} does not exist`);
    assert.match(worker.stderr, 'sessiond setup --nats');
    // a client's command is not stored anywhere (no stream captures it)
    const probe = await natsCli(server.url, CLIENT, ['request', 'sessiond.cmd.status', '{"sessionId":"ses_x"}', '--timeout', '1s']);
    assert.not.match(probe.stdout, '"stream"', 'no publish ack as a command reply');
    // setup as admin creates both, with a single server's 1 replica
    const setup = await runCli(setupArgs(server));
    assert.is(setup.code, 0, setup.stderr);
    assert.match(setup.stdout, `stream ${STREAM_NAME} created; stream ${SNAPSHOT_STREAM} created`);
    assert.match(setup.stdout, '1 replica,');
    await workerStarts(server);
  } finally {
    await server.dispose();
  }
});

s(
  'streams pre-created by the worker user (as it once could): the worker refuses naming each setting; setup repairs them, saying what it changed; then workers run',
  async () => {
    const server = await startNatsServer({ streams: false, config: oldPermissionsConf() });
    try {
      for (const config of [HOSTILE_EVENTS, HOSTILE_SNAPSHOTS]) {
        const r = await addStream(server, WORKER, config);
        assert.is(r.code, 0, `with the old permissions the worker user creates ${config.name}: ${r.out}`);
      }
      // what the hostile snapshot stream does: a client's command lands in it
      await natsCli(server.url, CLIENT, ['request', 'sessiond.cmd.status', '{"sessionId":"ses_x","secret":"prompt text"}', '--timeout', '1s']);
      assert.ok((await streamInfo(server, SNAPSHOT_STREAM))!.state.messages > 0, 'the hostile stream captured the command');

      const refused = await runCli(startArgs(server), { timeoutMs: 30_000 });
      assert.is.not(refused.code, 0, refused.stdout);
      assert.match(refused.stderr, `JetStream stream ${STREAM_NAME} is not set up as sessiond needs`);
      assert.match(refused.stderr, 'max_msgs_per_subject 3 (needs -1)');
      assert.match(refused.stderr, 'deny_delete false (needs true)');
      assert.match(refused.stderr, 'sessiond setup --nats');

      const setup = await runCli(setupArgs(server));
      assert.is(setup.code, 0, setup.stdout + setup.stderr);
      assert.match(setup.stdout, `stream ${STREAM_NAME} changed`);
      assert.match(setup.stdout, 'max_msgs_per_subject 3 -> -1');
      assert.match(setup.stdout, `stream ${SNAPSHOT_STREAM} recreated (it differed: subjects`);
      const events = (await streamInfo(server, STREAM_NAME))!;
      assert.equal([events.config.max_msgs_per_subject, events.config.deny_delete, events.config.deny_purge], [-1, true, false]);
      const snapshots = (await streamInfo(server, SNAPSHOT_STREAM))!;
      assert.equal(snapshots.config.subjects, ['sessiond.snapshots.>'], 'exactly its own subjects');
      assert.is(snapshots.state.messages, 0, 'what it captured is gone with it');
      // setup again: nothing left to change
      const again = await runCli(setupArgs(server));
      assert.match(again.stdout, `stream ${STREAM_NAME} unchanged; stream ${SNAPSHOT_STREAM} unchanged`);

      await workerStarts(server);
    } finally {
      await server.dispose();
    }
  },
);

s(
  'what cannot change in place (storage, a subject set holding other messages) is refused by setup with how to back up and recreate; a worker refuses too',
  async () => {
    const server = await startNatsServer({ streams: false, config: oldPermissionsConf() });
    try {
      const r = await addStream(server, WORKER, {
        ...HOSTILE_EVENTS,
        storage: 'memory',
        subjects: ['sessiond.events.>', 'sessiond.cmd.>'],
        max_msgs_per_subject: -1,
      });
      assert.is(r.code, 0, r.out);
      await natsCli(server.url, CLIENT, ['request', 'sessiond.cmd.status', '{"sessionId":"ses_x"}', '--timeout', '1s']);
      const setup = await runCli(setupArgs(server));
      assert.is.not(setup.code, 0, setup.stdout);
      assert.match(setup.stderr, 'storage memory (needs file)');
      assert.match(setup.stderr, 'subjects');
      assert.match(setup.stderr, "messages on subjects that are not sessiond's (sessiond.cmd.>)");
      assert.match(setup.stderr, `stream backup ${STREAM_NAME}`);
      assert.match(setup.stderr, `stream rm ${STREAM_NAME}`);
      const worker = await runCli(startArgs(server), { timeoutMs: 30_000 });
      assert.is.not(worker.code, 0, worker.stdout);
      assert.match(worker.stderr, 'storage memory (needs file)');
    } finally {
      await server.dispose();
    }
  },
);

s.run();
