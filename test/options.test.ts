/**
 * One options pattern: each component parses its options once, with its defaults, and says which
 * option was wrong and what it accepts; a misspelt key is refused, not ignored.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../src/errors.ts';
import { RecoverySweeper, DEFAULT_SWEEP_INTERVAL_MS } from '../src/recovery/sweeper.ts';
import { ManualClock } from '../src/clock.ts';
import { echoRunner } from '../src/runner/echo.ts';
import { fixture } from './support/fixture.ts';
import { expectCode } from '../src/testing/fixtures.ts';

test('options - the sweeper checks its options and refuses unknown ones', async () => {
  const fx = fixture();
  const execution = fx.service({ runner: echoRunner() });
  const base = { execution, candidates: { expired: () => [], runnable: () => [], due: () => [] }, clock: new ManualClock(0) };
  assert.is(new RecoverySweeper(base).intervalMs, DEFAULT_SWEEP_INTERVAL_MS);
  expectCode(
    () => new RecoverySweeper({ ...base, intervalMs: 0 }),
    ErrorCode.InvalidOption,
    'Invalid RecoverySweeper option intervalMs=0: use a whole number of milliseconds >= 1',
  );
  expectCode(() => new RecoverySweeper({ ...base, wakeBackoffMs: 1.5 }), ErrorCode.InvalidOption, 'wakeBackoffMs=1.5');
  expectCode(
    () => new RecoverySweeper({ ...base, crashAfterAdmit: true } as never),
    ErrorCode.InvalidOption,
    'Unknown RecoverySweeper option "crashAfterAdmit"',
  );
  expectCode(() => fx.service({ runner: echoRunner(), leaseMs: -5 }), ErrorCode.InvalidOption, 'Invalid SessionExecution option leaseMs=-5');
  await fx.close();
});

test('options - the engine and the worker refuse a misspelt option instead of ignoring it', async () => {
  const { openEngine } = await import('../src/engine.ts');
  const { startSessiond } = await import('../src/host.ts');
  const { tempDir } = await import('./support/tmp.ts');
  const tmp = tempDir();
  await expectCode(
    openEngine({ file: tmp.file('a.db'), runner: echoRunner(), leaseMS: 5 } as never),
    ErrorCode.InvalidOption,
    'Unknown openEngine option "leaseMS"',
  );
  await expectCode(
    startSessiond({ db: tmp.file('b.db'), runner: echoRunner(), metricPort: 9000 } as never),
    ErrorCode.InvalidOption,
    'Unknown startSessiond option "metricPort"',
  );
  tmp.remove();
});

test.run();
