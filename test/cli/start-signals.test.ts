/**
 * A SIGTERM at start-up: a worker still waiting for its NATS server stops at once, closes what it
 * opened and exits 0 (it used to wait for the server forever). A runner that ignores its abort
 * signal does not keep a stopped worker alive. A SIGHUP stops a worker as SIGTERM does.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort, WORKER } from '../../src/testing/nats-server.ts';
import { writeFileSync } from 'node:fs';
import { runCli, startCli } from '../support/cli.ts';
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

test('start signals - a runner that ignores its abort signal does not keep a stopped worker alive: exit 1 after --shutdown-timeout-ms, saying why', async () => {
  const tmp = tempDir();
  const db = tmp.file('w.db');
  const runner = tmp.file('stuck.mjs');
  writeFileSync(runner, 'export default async () => { await new Promise(() => {}); };\n'); // never returns, aborted or not
  const worker = startCli(['start', '--db', db, '--runner', runner, '--shutdown-timeout-ms', '1500']);
  await worker.waitFor('send it a prompt');
  const prompt = await runCli(['prompt', 'ses_stuck', 'hello', '--db', db]);
  assert.is(prompt.code, 0, prompt.stdout + prompt.stderr);
  await worker.waitFor('ses_stuck  claimed');
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 1, worker.output());
  assert.match(worker.output(), 'SIGTERM: stopping');
  assert.match(worker.output(), 'still closing the worker, at the turns in progress (handing them back): still driving ses_stuck 1.5 s after the stop');
  tmp.remove();
});

test('start signals - SIGHUP (a closed terminal or ssh session) hands the running turn back at once, as SIGTERM does, instead of leaving it to wait out its lease', async () => {
  const tmp = tempDir();
  const db = tmp.file('w.db');
  const worker = startCli(['start', '--db', db, '--echo-delay-ms', '60000']);
  await worker.waitFor('send it a prompt');
  await runCli(['prompt', 'ses_hup', 'a long one', '--db', db]);
  await worker.waitFor('ses_hup  claimed');
  worker.child.kill('SIGHUP');
  assert.is(await worker.exited, 0, worker.output());
  assert.match(worker.output(), 'SIGHUP: stopping; turns in progress are handed back');
  assert.match(worker.output(), 'stopped (handed back 1 running session)');
  const status = await runCli(['status', 'ses_hup', '--db', db]);
  assert.match(status.stdout, 'last turn released');
  tmp.remove();
});

test.run();
