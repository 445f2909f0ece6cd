/**
 * A fork racing a delete on NATS, one nats-server: the fork reads its source and marks the objects
 * it copies; the admin purges the source; a worker applying the deletion brings its projection to
 * the head, and only then is the fork appended; the worker stalls before it removes the source's
 * objects. The fork's objects stay: its mark is after the removal's cut, taken before the read.
 */
import * as assert from 'uvu/assert';
import { cliSuite } from './cli-suite.ts';
import { ADMIN, WORKER } from '../../src/testing/nats-server.ts';
import { pngBytes } from '../support/png.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { ObjectBlobStore } from '../../src/nats/object-blob-store.ts';
import { applyDeletion, deleteNatsSession } from '../../src/nats/delete-session.ts';
import { Projector } from '../../src/projector/projector.ts';
import { catchUpProjection } from '../../src/projector/catch-up.ts';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';
import { sha256Hex } from '../../src/blobs/blob-store.ts';
import { DEFAULT_BLOB_GRACE_MS } from '../../src/blobs/sweep.ts';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { EventLog } from '../../src/events/event-log.ts';

const s = cliSuite('a fork racing a delete on NATS');
const HOUR = DEFAULT_BLOB_GRACE_MS;

/** The log with `hook` run once after a catch-up's read of its pages has ended. */
function afterPages(log: EventLog, hook: () => Promise<void>): EventLog {
  let armed = true;
  return new Proxy(log, {
    get(target, prop, receiver) {
      if (prop === 'readPages')
        return async function* (options: never) {
          yield* target.readPages(options);
          if (!armed) return;
          armed = false;
          await hook();
        };
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

s('a fork appended after a deleting worker read the references keeps the objects it copies', async (ctx) => {
  const worker = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...WORKER }, ensureStream: false });
  const admin = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...ADMIN }, ensureStream: false });
  const clock = new ManualClock(systemClock.now());
  const store = await ObjectBlobStore.open(worker.nc, { clock });
  // the fork's append waits for the deleting worker's read
  let atAppend!: () => void;
  const reachedAppend = new Promise<void>((r) => (atAppend = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const gated = (log: EventLog): EventLog =>
    new Proxy(log, {
      get(target, prop, receiver) {
        if (prop === 'append')
          return async (sessionId: string, expected: number, drafts: never) => {
            if (sessionId === 'ses_fork') {
              atAppend();
              await released;
            }
            return target.append(sessionId, expected, drafts);
          };
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const engine = await openEngine({ file: ctx.tmp.file('fork-delete.db'), log: worker, decorateLog: gated, runner: echoRunner(), clock, blobs: store });
  try {
    const image = pngBytes(300_000, 31);
    await engine.admit('ses_src', {
      prompt: [
        { type: 'text', text: 'what is this?' },
        { type: 'image', data: image.toString('base64'), mediaType: 'image/png' },
      ],
    });
    await engine.awaitIdle('ses_src');
    await catchUpProjection(engine.db, worker);
    await clock.advance(2 * HOUR);

    const fork = engine.fork('ses_src', 'ses_fork');
    await reachedAppend; // read its source and marked its objects
    const d = await deleteNatsSession(admin, systemClock, sequentialIds('del'), 'ses_src', { by: 'dpo' });
    await engine.admit('ses_other', { prompt: 'the projection is behind the head again', wake: false });
    let forked = false;
    const reading = afterPages(worker, async () => {
      release();
      forked = (await fork).created;
      await clock.advance(1.5 * HOUR); // the worker stalls before removing
    });
    assert.ok(await applyDeletion(engine.db, reading, new Projector(engine.db), d, { store, clock, graceMs: HOUR }));
    assert.ok(forked, 'the fork landed after the read of the references');
    assert.is(await store.has(sha256Hex(image)), true, "the fork's copy keeps its object");
  } finally {
    release();
    await engine.close();
    await worker.close();
    await admin.close();
  }
});

s.run();
