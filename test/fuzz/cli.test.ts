/**
 * Fuzzing the command line (fast-check, fixed seed, bounded): random arguments to the commands that
 * read or write a local database or file. Each run ends in a result, a usage error or a SessiondError
 * with a message; never any other exception (a TypeError would reach a user as a stack trace).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { CommanderError } from 'commander';
import { buildProgram } from '../../src/cli/program.ts';
import { SessiondError, UsageError } from '../../src/errors.ts';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { tempDir } from '../support/tmp.ts';
import { EventEmitter } from 'node:events';
import { watchStdout } from '../../src/cli/stdout-closed.ts';

const RUNS = 150;

test(`fuzz - ${RUNS} random command lines end in a result, a usage error or a SessiondError, never a crash`, async () => {
  const tmp = tempDir();
  const db = tmp.file('fuzz.db');
  const engine = await openEngine({ file: db, runner: echoRunner() });
  await engine.admit('ses_z', { prompt: 'fuzz me' });
  await engine.awaitIdle('ses_z');
  await engine.close();
  const junk = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.constantFrom('', '-1', '0', '1e9', 'NaN', 'ses.bad', 'ses_z', '--', '-x', '\u0000', 'tool.*', 'svg', 'dot'),
  );
  const flag = fc.oneof(
    fc.constantFrom('--json', '--safety-only', '--no-wake').map((f) => [f]),
    fc
      .tuple(fc.constantFrom('--session', '--format', '--until-seq', '--grace-ms', '--delivery', '--id', '--reason', '--type', '--out'), junk)
      .map(([f, v]) => (f === '--out' ? [f, tmp.file(`out-${Math.abs(v.length)}.x`)] : [f, v])),
  );
  // each command with the positional arguments it takes (sometimes one too many or too few)
  const command = fc.oneof(
    fc.tuple(fc.constant('status'), fc.array(junk, { maxLength: 1 })),
    fc.tuple(fc.constant('cancel'), fc.array(junk, { minLength: 1, maxLength: 1 })),
    fc.tuple(fc.constant('wake'), fc.array(junk, { minLength: 1, maxLength: 1 })),
    fc.tuple(fc.constant('check'), fc.constant([] as string[])),
    fc.tuple(fc.constant('export'), fc.constant([] as string[])),
    fc.tuple(fc.constant('migrate'), fc.constant([] as string[])),
    fc.tuple(fc.constant('prompt'), fc.array(junk, { minLength: 2, maxLength: 2 })),
    fc.tuple(fc.constant('replay'), fc.constantFrom([tmp.file('missing.sdx')], [db], [tmp.file('fresh.sdx')])),
    fc.tuple(fc.constantFrom('chart', 'nope'), fc.array(junk, { maxLength: 2 })),
  );
  const outcomes = { ok: 0, usage: 0, refused: 0 };
  const write = { out: process.stdout.write, err: process.stderr.write };
  try {
    await fc.assert(
      fc.asyncProperty(command, fc.array(flag, { maxLength: 3 }), fc.boolean(), async ([cmd, positional], flags, withDb) => {
        const argv = [
          cmd,
          ...positional,
          ...flags.flat(),
          ...(withDb && cmd !== 'chart' && cmd !== 'nope' ? ['--db', cmd === 'replay' ? tmp.file('replayed.db') : db] : []),
        ];
        const program = buildProgram({ out: () => {}, err: () => {}, stdout: watchStdout(new EventEmitter()), env: {}, defaultDb: db, defaultNats: undefined });
        process.stdout.write = (() => true) as typeof process.stdout.write;
        process.stderr.write = (() => true) as typeof process.stderr.write;
        try {
          await program.parseAsync(argv, { from: 'user' });
          outcomes.ok++;
        } catch (err) {
          if (err instanceof CommanderError || err instanceof UsageError) outcomes.usage++;
          else if (err instanceof SessiondError && err.message.length > 20) outcomes.refused++;
          else throw new Error(`sessiond ${argv.join(' ')} threw ${String(err)} (${(err as Error)?.constructor?.name})`);
        } finally {
          process.stdout.write = write.out;
          process.stderr.write = write.err;
          process.exitCode = undefined;
        }
      }),
      { numRuns: RUNS, seed: 20261130 },
    );
  } finally {
    process.stdout.write = write.out;
    process.stderr.write = write.err;
  }
  assert.ok(outcomes.usage > 0 && outcomes.ok + outcomes.refused > 10, `every kind of outcome reached: ${JSON.stringify(outcomes)}`);
  tmp.remove();
});

test.run();
