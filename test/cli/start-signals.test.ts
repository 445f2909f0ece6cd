/**
 * A SIGTERM at start-up: a worker still waiting for its NATS server stops at once, closes what it
 * opened and exits 0 (it used to wait for the server forever).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort, WORKER } from '../../src/testing/nats-server.ts';
import { startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

test('start signals - SIGTERM while waiting for the NATS server: stopped, nothing was running, exit 0', async () => {
  const tmp = tempDir();
  const url = `nats://127.0.0.1:${await freePort()}`; // nobody listens there
  const worker = startCli(['start', '--nats', url, '--nats-user', WORKER.user, '--db', tmp.file('w.db')], { env: { SESSIOND_NATS_PASS: WORKER.pass } });
  await worker.waitFor('connecting to NATS');
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
  assert.match(worker.output(), 'SIGTERM: stopping');
  assert.match(worker.output(), 'stopped (nothing was running)');
  tmp.remove();
});

test.run();
