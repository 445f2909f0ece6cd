/**
 * Blobs on NATS, real processes: a `sessiond start --nats` worker on one nats-server stores and reads
 * large payloads in the Object Store bucket (test/nats/blob-turns.ts says what is checked); one
 * started before the bucket exists says so in one line and refuses a prompt that references a blob.
 */
import * as assert from 'uvu/assert';
import { jetstreamManager } from '@nats-io/jetstream';
import { cliSuite, natsWorker } from './cli-suite.ts';
import { checkBlobTurns } from './blob-turns.ts';
import { SessiondClient } from '../../src/client/client.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { BLOB_BUCKET } from '../../src/nats/object-blob-store.ts';
import { ADMIN, CLIENT } from '../../src/testing/nats-server.ts';
import { rejection } from './helpers.ts';

const s = cliSuite('blobs on a NATS worker');

s('nats blobs - a 6 MB image prompt and a 3 MB tool result reach the model whole through a real worker', async (ctx) => {
  await checkBlobTurns([ctx.server.url], (flags) => natsWorker(ctx, 'blobs.db', 0, flags), 'one');
});

s('nats blobs - without the bucket the worker says to run setup, and a prompt referencing a blob is refused saying why', async (ctx) => {
  const admin = await connectNats({ servers: ctx.server.url, ...ADMIN });
  const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
  try {
    for (const w of ctx.workers) if (w.child.exitCode === null) w.child.kill('SIGTERM');
    for (const w of ctx.workers) await w.exited;
    await (await jetstreamManager(admin)).streams.delete(`OBJ_${BLOB_BUCKET}`);
    const worker = await natsWorker(ctx, 'nobucket.db', 0);
    assert.match(worker.output(), `no blob store (Object Store bucket ${BLOB_BUCKET}: its stream OBJ_${BLOB_BUCKET} does not exist)`);
    assert.match(worker.output(), 'run sessiond setup --nats <url> --nats-user admin');
    const err = await rejection(
      client.admit('ses_nobucket', {
        prompt: [
          { type: 'text', text: 'look' },
          { type: 'image', blob: { sha256: 'a'.repeat(64), size: 100_000, mediaType: 'image/png' } },
        ],
      }),
    );
    assert.match(String((err as Error).message), 'keeps no blob store');
    assert.match(String((err as Error).message), 'sessiond setup');
  } finally {
    await client.close();
    await admin.close();
  }
});

s.run();
