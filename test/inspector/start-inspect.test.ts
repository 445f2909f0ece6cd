/**
 * `sessiond start --inspect PORT`: the worker serves the inspector for its own log on
 * 127.0.0.1:PORT, prints the URL, and the API shows what the worker runs. A bad port is a usage error.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort } from '../../src/testing/nats-server.ts';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

test('cli start --inspect - serves the inspector for the worker log and prints its URL', async () => {
  const tmp = tempDir();
  const db = tmp.file('inspect.db');
  const port = await freePort();
  const worker = startCli(['start', '--db', db, '--inspect', String(port)]);
  try {
    await worker.waitFor(`inspector: http://127.0.0.1:${port}/`);
    const admitted = await runCli(['prompt', 'ses_cli', 'inspect me', '--db', db]);
    assert.is(admitted.code, 0, admitted.stderr);
    await worker.waitFor('ses_cli  turn succeeded');
    const view = (await fetch(`http://127.0.0.1:${port}/api/sessions/ses_cli`).then((r) => r.json())) as {
      state: string;
      timeline: { events: { type: string }[] };
    };
    assert.is(view.state, 'settled');
    assert.is(view.timeline.events[0]!.type, 'input.admitted');
    const page = await fetch(`http://127.0.0.1:${port}/`);
    assert.is(page.status, 200);
  } finally {
    worker.child.kill('SIGTERM');
    assert.is(await worker.exited, 0, worker.output());
    tmp.remove();
  }
  const after = await fetch(`http://127.0.0.1:${port}/api/sessions`).then(
    () => 'answered',
    () => 'refused',
  );
  assert.is(after, 'refused', 'the inspector stops with the worker');
});

test('cli start --inspect - a port out of range is a usage error (exit 2)', async () => {
  const bad = await runCli(['start', '--inspect', '70000']);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, '--inspect must be a port from 1 to 65535 (got "70000")');
});

test.run();
