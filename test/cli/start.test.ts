import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

test('cli start + prompt - a worker on the embedded default runs a prompt admitted from another process', async () => {
  const tmp = tempDir();
  const db = tmp.file('demo.db');
  const worker = startCli(['start', '--db', db, '--echo-delay-ms', '5']);
  await worker.waitFor('send it a prompt');
  assert.match(worker.output(), 'npx sessiond prompt');
  const admitted = await runCli(['prompt', 'ses_demo', 'hello from the test', '--db', db]);
  assert.is(admitted.code, 0, admitted.stderr);
  assert.match(admitted.stdout, /admitted inp_\w+ to ses_demo at sequence 1/);
  await worker.waitFor('ses_demo  turn succeeded');
  assert.match(worker.output(), 'ses_demo  echo: hello');
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0);
  assert.match(worker.output(), 'stopped (nothing was running)');
  tmp.remove();
});

test('cli prompt - same id and content is idempotent, different content is refused with exit 1', async () => {
  const tmp = tempDir();
  const db = tmp.file('p.db');
  const first = await runCli(['prompt', 'ses_p', 'one', '--db', db, '--id', 'inp_fixed', '--no-wake']);
  assert.is(first.code, 0);
  assert.match(first.stdout, 'not woken');
  const again = await runCli(['prompt', 'ses_p', 'one', '--db', db, '--id', 'inp_fixed', '--no-wake']);
  assert.match(again.stdout, 'already admitted inp_fixed');
  const conflict = await runCli(['prompt', 'ses_p', 'two', '--db', db, '--id', 'inp_fixed', '--no-wake']);
  assert.is(conflict.code, 1);
  assert.match(conflict.stderr, 'already admitted to session ses_p with different content');
  assert.not.match(conflict.stderr, '    at ', 'no stack trace for a user mistake');
  const bad = await runCli(['prompt', 'ses.bad', 'x', '--db', db]);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, 'Invalid session id "ses.bad"');
  const badDelivery = await runCli(['prompt', 'ses_p', 'x', '--db', db, '--delivery', 'later']);
  assert.is(badDelivery.code, 2);
  assert.match(badDelivery.stderr, '--delivery must be one of steer, queue');
  tmp.remove();
});

test.run();
