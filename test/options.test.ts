/**
 * One options pattern: each component parses its options once, with its defaults, and says which
 * option was wrong and what it accepts; a misspelt key is refused, not ignored.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, isSessiondError } from '../src/errors.ts';
import { RecoverySweeper, DEFAULT_SWEEP_INTERVAL_MS } from '../src/recovery/sweeper.ts';
import { ManualClock } from '../src/clock.ts';
import { echoRunner } from '../src/runner/echo.ts';
import { fixture } from './support/fixture.ts';

const refused = (fn: () => unknown): string => {
  try { fn(); } catch (err) { assert.ok(isSessiondError(err, ErrorCode.InvalidOption), String(err)); return (err as Error).message; }
  return assert.unreachable('refused') as never;
};

test('options - the sweeper checks its options and refuses unknown ones', async () => {
  const fx = fixture();
  const execution = fx.service({ runner: echoRunner() });
  const base = { execution, candidates: { expired: () => [], runnable: () => [] }, clock: new ManualClock(0) };
  assert.is(new RecoverySweeper(base).intervalMs, DEFAULT_SWEEP_INTERVAL_MS);
  assert.match(refused(() => new RecoverySweeper({ ...base, intervalMs: 0 })), 'Invalid RecoverySweeper option intervalMs=0: use a whole number of milliseconds >= 1');
  assert.match(refused(() => new RecoverySweeper({ ...base, wakeBackoffMs: 1.5 })), 'wakeBackoffMs=1.5');
  assert.match(refused(() => new RecoverySweeper({ ...base, crashAfterAdmit: true } as never)), 'Unknown RecoverySweeper option "crashAfterAdmit"');
  assert.match(refused(() => fx.service({ runner: echoRunner(), leaseMs: -5 })), 'Invalid SessionExecution option leaseMs=-5');
  await fx.close();
});

test.run();
