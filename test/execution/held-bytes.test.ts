/**
 * A worker's memory for the sessions it has loaded is bounded by the bytes of their pending prompts
 * (`maxHeldBytes`): past it the least recently used sessions leave the cache, and load again from
 * the log, unchanged, when next needed.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir('sessiond-held-');

test('held bytes - the cached sessions hold at most maxHeldBytes of pending prompts; dropped ones load again unchanged', async () => {
  const prompt = 'q'.repeat(100 * 1024);
  const engine = await openEngine({ file: tmp.file('held.db'), runner: echoRunner(), limits: { maxHeldBytes: 1024 * 1024, maxPromptBytes: 100 * 1024 } });
  try {
    for (let s = 0; s < 10; s++) {
      for (let i = 0; i < 3; i++) await engine.admit(`ses_${s}`, { id: `inp_${i}`, prompt, wake: false });
      const held = engine.execution.handler.holding();
      assert.ok(held.pendingBytes <= 1024 * 1024, `after ${s + 1} sessions the cache holds ${held.pendingBytes} bytes`);
    }
    const held = engine.execution.handler.holding();
    assert.ok(held.sessions < 10, `some sessions left the cache (${held.sessions} cached)`);
    for (let s = 0; s < 10; s++) {
      const view = await engine.status(`ses_${s}`);
      assert.equal([view.pendingCount, view.pendingBytes], [3, 3 * prompt.length], `ses_${s} loads again with everything it had`);
    }
    assert.ok(engine.execution.handler.holding().pendingBytes <= 1024 * 1024);
  } finally {
    await engine.close();
  }
});

test.after(() => tmp.remove());
test.run();
