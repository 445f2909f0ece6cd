/**
 * `sessiond start --turn-timeout`: a real worker stops a turn that runs past its deadline and
 * settles it failed with a recorded turn_timeout error, which `status` shows; the worker goes on
 * taking work. (The rules in detail, on an injected clock: test/execution/turn-deadline.test.ts.)
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { parseDuration } from '../../src/cli/options.ts';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

test('turn timeout - a worker with --turn-timeout 1s stops a turn that would run for ever; status shows it failed with turn_timeout; a bad duration is refused', async () => {
  const tmp = tempDir();
  const db = tmp.file('w.db');
  const runner = tmp.file('slow.mjs');
  // waits until its signal aborts (a model call that never answers), then stops as asked
  writeFileSync(
    runner,
    "export default (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));\n",
  );
  const bad = await runCli(['start', '--db', db, '--runner', runner, '--turn-timeout', '10']);
  assert.is(bad.code, 2, bad.stdout + bad.stderr);
  assert.match(bad.stderr, '--turn-timeout must be a duration such as 500ms, 90s, 10m, 1h30m or 2d (got "10")');
  const worker = startCli(['start', '--db', db, '--runner', runner, '--turn-timeout', '1s']);
  await worker.waitFor('turns stopped after 1 s');
  const prompt = await runCli(['prompt', 'ses_slow', 'hello', '--db', db]);
  assert.is(prompt.code, 0, prompt.stdout + prompt.stderr);
  await worker.waitFor('ses_slow  turn failed: Execution');
  const status = await runCli(['status', 'ses_slow', '--db', db, '--json']);
  assert.is(status.code, 0, status.stdout + status.stderr);
  const execution = JSON.parse(status.stdout).execution;
  assert.equal([execution.outcome, execution.error.type], ['failed', 'turn_timeout']);
  assert.match(execution.error.message, 'ran longer than the turn deadline of 1 s');
  // and the worker goes on taking work: the next prompt is claimed (and stopped at its deadline in turn)
  const next = await runCli(['prompt', 'ses_slow', 'again', '--db', db]);
  assert.is(next.code, 0, next.stdout + next.stderr);
  await worker.waitFor(/ses_slow {2}turn failed: Execution[^\n]*\n[\s\S]*ses_slow {2}turn failed: Execution/);
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
  tmp.remove();
});

test('durations - whole units, one or more, in milliseconds; anything else is not a duration', () => {
  const cases: [string, number | undefined][] = [
    ['500ms', 500],
    ['90s', 90_000],
    ['10m', 600_000],
    ['1h30m', 5_400_000],
    ['2d', 172_800_000],
    ['1m30s500ms', 90_500],
    ['10', undefined],
    ['0s', undefined],
    ['1.5h', undefined],
    ['-1s', undefined],
    ['1 h', undefined],
    ['', undefined],
  ];
  for (const [text, ms] of cases) assert.is(parseDuration(text), ms, text);
});

test.run();
