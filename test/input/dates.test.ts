/**
 * Times a client gives: a notBefore past year 9999 (or past what Date represents) is refused at
 * admission; one already in a log (written before that rule) never breaks `sessiond status`.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAdmitRequest } from '../../src/input/admit.ts';
import { LATEST_CLIENT_TIME, isoTime } from '../../src/clock.ts';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { ErrorKind, isSessiondError } from '../../src/errors.ts';
import { runCli } from '../support/cli.ts';
import { formatEvent } from '../../src/cli/commands/tail.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
test.after(() => tmp.remove());

const DATE_MAX = 8.64e15;

test('notBefore past year 9999 or past the Date range is refused at admission, saying the latest time', () => {
  for (const notBefore of [DATE_MAX + 1, DATE_MAX, LATEST_CLIENT_TIME + 1, Number.MAX_SAFE_INTEGER]) {
    try {
      parseAdmitRequest('ses_1', { prompt: 'hi', notBefore });
      assert.unreachable(`accepted ${notBefore}`);
    } catch (err) {
      assert.ok(isSessiondError(err), String(err));
      assert.is(err.kind, ErrorKind.InvalidInput);
      assert.match(err.message, `notBefore ${notBefore} is after 9999-12-31T23:59:59.999Z`);
    }
  }
  assert.is(parseAdmitRequest('ses_1', { prompt: 'hi', notBefore: LATEST_CLIENT_TIME }).notBefore, LATEST_CLIENT_TIME);
});

test('isoTime shows a time no date can show as its raw number; sessiond tail lines use it', () => {
  assert.is(isoTime(0), '1970-01-01T00:00:00.000Z');
  assert.match(isoTime(DATE_MAX + 1), '8640000000000001 ms since the epoch');
  const event = { id: 'evt_1', sessionId: 'ses_1', seq: 1, type: 'session.created', version: 1, time: DATE_MAX + 1, payload: {} } as never;
  assert.match(formatEvent(event), /^8640000000000001 ms since the epoch \(past any date\) ses_1 #1 /);
  assert.match(formatEvent({ ...(event as object), time: 0 } as never), /^00:00:00\.000 ses_1 #1 /);
});

test('sessiond status on a log holding a notBefore past the Date range prints the raw number (no "Invalid time value")', async () => {
  const file = tmp.file('far.db');
  const engine = await openEngine({ file, runner: echoRunner() });
  // as a log written before admission refused it: straight through the machine
  await engine.execution.handler.execute('ses_far', (now) => ({
    type: 'admit',
    now,
    inputId: 'inp_far',
    prompt: 'much later',
    delivery: 'queue',
    wake: false,
    limits: { maxPendingInputs: 10, maxPendingBytes: 1_000_000 },
    notBefore: DATE_MAX + 1,
  }));
  await engine.close();
  const r = await runCli(['status', 'ses_far', '--db', file]);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.not.match(r.stdout + r.stderr, 'Invalid time value');
  assert.match(r.stdout, 'inp_far (queue, not before 8640000000000001 ms since the epoch');
});

test.run();
