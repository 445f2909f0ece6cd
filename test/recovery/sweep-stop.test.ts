/**
 * A stop that waits for the recovery sweep says what the sweep is on (the worker's `stopping`, the
 * host's `closing`, and `sessiond start` when a stop outlasts --shutdown-timeout-ms), so a stop that
 * hangs names the session it hangs on.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { RecoverySweeper } from '../../src/recovery/sweeper.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { fixture } from '../support/fixture.ts';

test('sweep stop - while a pass is on a session, the sweep says which; stop waits for it; then it is doing nothing', async () => {
  const fx = fixture();
  const execution = fx.service({ runner: echoRunner() });
  let release = () => {};
  const held = new Promise<void>((r) => {
    release = r;
  });
  const load = execution.handler.load.bind(execution.handler);
  execution.handler.load = async (id: string) => {
    if (id === 'ses_slow') await held;
    return load(id);
  };
  const sweeper = new RecoverySweeper({ execution, candidates: { expired: () => ['ses_slow'], runnable: () => [], due: () => [] }, clock: new ManualClock(0) });
  assert.is(sweeper.doing, 'nothing');
  sweeper.start();
  await waitFor(() => sweeper.doing === 'a pass, on session ses_slow', { timeoutMs: 5_000, what: 'the pass on ses_slow' });
  let stopped = false;
  const stopping = sweeper.stop().then(() => {
    stopped = true;
  });
  await new Promise((r) => setImmediate(r));
  assert.is(stopped, false, 'stop waits for the pass');
  assert.is(sweeper.doing, 'a pass, on session ses_slow');
  release();
  await stopping;
  assert.is(sweeper.doing, 'nothing');
  await fx.close();
});

test.run();
