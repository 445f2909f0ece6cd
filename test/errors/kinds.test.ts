/**
 * One error hierarchy: every failure sessiond raises is a SessiondError whose code has a kind, and
 * the kind decides the CLI's exit code; no error class outside the hierarchy; an unexpected failure
 * is reported as what it is, not as a refusal.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ConnectionError,
  CorruptDataError,
  ErrorCode,
  InvalidInputError,
  NotFoundError,
  PermissionError,
  type SessiondError,
  TimeoutError,
  kindOf,
  UsageError,
  CancelledError,
} from '../../src/errors.ts';
import { ExitCode, exitCodeFor } from '../../src/cli/exit.ts';
import { CommandError, CommandFailureCode } from '../../src/nats/command-protocol.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import { fixture } from '../support/fixture.ts';

test('errors - every code has a kind, and each kind its exit code', () => {
  for (const code of Object.values(ErrorCode)) assert.type(kindOf(code), 'string', code);
  const exits = (e: SessiondError) => [e.kind, exitCodeFor(e)];
  assert.equal(exits(new ConnectionError('down')), ['unavailable', ExitCode.Unavailable]);
  assert.equal(exits(new PermissionError('no')), ['permission', 77]);
  assert.equal(exits(new NotFoundError('gone')), ['not_found', 66]);
  assert.equal(exits(new InvalidInputError('bad')), ['invalid_input', 2]);
  assert.equal(exits(new UsageError('wrong')), ['invalid_input', 2]);
  assert.equal(exits(new CorruptDataError('garbled')), ['corrupt_data', 65]);
  assert.equal(exits(new TimeoutError('late')), ['timeout', 75]);
  assert.equal(exits(new CancelledError('exe_1')), ['refused', 1]);
  assert.is(new CancelledError('exe_1').code, ErrorCode.Cancelled, 'a cancel has its own code (not command_refused)');
  assert.equal(exits(new CommandError('admit', CommandFailureCode.NoWorker, 'none')), ['unavailable', 69]);
  assert.equal(exits(new CommandError('admit', CommandFailureCode.Timeout, 'late')), ['timeout', 75]);
  assert.equal(exits(new CommandError('status', CommandFailureCode.UnknownSession, 'who?')), ['not_found', 66]);
  assert.equal(exits(new CommandError('admit', CommandFailureCode.Internal, 'boom')), ['failure', 1]);
  assert.is(exitCodeFor(new Error('not ours')), ExitCode.Failure);
});

test('errors - no error class in src/ outside the SessiondError hierarchy', () => {
  const offenders: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith('.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/class (\w+) extends (Error|TypeError|RangeError)\b/g)) {
          if (!(path.endsWith('errors.ts') && m[1] === 'SessiondError')) offenders.push(`${path}: ${m[1]}`);
        }
      }
    }
  };
  walk('src');
  assert.equal(offenders, [], 'every error class extends SessiondError');
});

test("errors - every exported error class is in src/errors.ts, but the command protocol's CommandError", () => {
  const elsewhere: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith('.ts') && path !== join('src', 'errors.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/export class (\w+) extends \w*Error\b/g)) elsewhere.push(`${path}: ${m[1]}`);
      }
    }
  };
  walk('src');
  // CommandError's code is derived from the protocol's failure codes (src/nats/command-protocol.ts); a class
  // private to one module (not exported) that never leaves it may stay there too.
  assert.equal(elsewhere, [join('src', 'nats', 'command-protocol.ts') + ': CommandError']);
});

test('errors - resume reports an unexpected failure as failed with its code, not as a lost claim', async () => {
  const fx = fixture();
  const svc = fx.service({ runner: echoRunner() });
  const log = svc.handler.log as EventLog;
  log.readSession = async () => {
    throw new ConnectionError('the log is unreachable');
  };
  const r = await svc.resume('ses_broken');
  assert.equal(r, { status: 'failed', code: ErrorCode.Unavailable, message: 'the log is unreachable' });
  await fx.close();
});

test.run();
