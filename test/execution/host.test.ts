/**
 * startSessiond, the composition root: one call builds a whole embedded worker (engine, worker with
 * projector and sweep, inspector, metrics) that runs a turn, projects it, serves its ports, and
 * closes every part; an aborted start-up closes what it opened.
 */
import { test } from 'uvu';
import { existsSync } from 'node:fs';
import * as assert from 'uvu/assert';
import { startSessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { freePort } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

test('host - one call: a turn runs and is projected, the inspector and metrics answer, close stops every part', async () => {
  const tmp = tempDir();
  const [inspectPort, metricsPort] = [await freePort(), await freePort()];
  const lines: string[] = [];
  const sessiond = await startSessiond({
    db: tmp.file('host.db'),
    runner: echoRunner(),
    inspectPort,
    metricsPort,
    report: { out: (l) => lines.push(l), err: (l) => lines.push(l) },
  });
  await sessiond.admit('ses_host', { prompt: 'one call builds it all' });
  await sessiond.awaitIdle('ses_host');
  assert.is((await sessiond.status('ses_host')).state, 'settled');
  await waitFor(() => sessiond.worker.projector!.checkpoint() >= 10, { what: 'the projector caught up' });
  const db = openDatabase(tmp.file('host.db'), { readonly: true });
  assert.ok(
    (db.prepare("SELECT COUNT(*) FROM session_message WHERE session_id = 'ses_host'").pluck().get() as number) > 0,
    'projected by the worker the host started',
  );
  db.close();
  const inspected = async () => ((await fetch(new URL('api/sessions/ses_host', sessiond.inspectorUrl)).then((r) => r.json())) as { state?: string }).state;
  await waitFor(async () => (await inspected()) === 'settled', { what: 'the inspector showing the settled session' });
  assert.match(await fetch(`${sessiond.metricsUrl}/metrics`).then((r) => r.text()), 'sessiond_turns_settled_total{outcome="succeeded",log="sqlite"} 1');
  assert.ok(
    lines.some((l) => l === 'ses_host  turn succeeded'),
    'it reports what it does',
  );
  assert.equal(await sessiond.close(), { handedBack: 0 });
  const after = await fetch(`${sessiond.metricsUrl}/healthz`).then(
    () => 'answered',
    () => 'refused',
  );
  assert.is(after, 'refused', 'the ports are closed with it');
  tmp.remove();
});

test('host - synchronous: FULL opens the file with synchronous=FULL (NORMAL by default)', async () => {
  const tmp = tempDir();
  for (const [synchronous, level] of [
    [undefined, 1],
    ['FULL', 2],
  ] as const) {
    const host = await startSessiond({
      db: tmp.file(`${synchronous ?? 'default'}.db`),
      runner: echoRunner(),
      report: { out: () => {}, err: () => {} },
      ...(synchronous ? { synchronous } : {}),
    });
    assert.is(host.engine.db.pragma('synchronous', { simple: true }), level);
    await host.admit('ses_sync', { prompt: 'durable' });
    await host.awaitIdle('ses_sync');
    assert.is((await host.status('ses_sync')).state, 'settled');
    await host.close();
  }
  tmp.remove();
});

test('host - an aborted start-up rejects with the reason and leaves nothing open', async () => {
  const tmp = tempDir();
  const controller = new AbortController();
  controller.abort(new Error('stopped during start-up'));
  const file = tmp.file('aborted.db');
  const err = await startSessiond({ db: file, runner: echoRunner(), signal: controller.signal, metricsPort: await freePort() }).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.match(String(err), 'stopped during start-up');
  assert.not.ok(existsSync(file), 'no database was opened');
  tmp.remove();
});

test.run();
