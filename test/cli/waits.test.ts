/**
 * Turns that wait, with real worker processes (`sessiond start`) on one SQLite file:
 * - a worker SIGKILLed while a session waits for approval; `sessiond approve` on the log at rest;
 *   another worker runs the approved call exactly once; a denied call never runs;
 * - a durable timer across a SIGKILL and a restart;
 * - a scheduled prompt (`sessiond prompt --in`), run by the worker's sweep when due;
 * - `sessiond resolve` delivers a signal's value; `sessiond check` finds nothing wrong after all.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, existsSync } from 'node:fs';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { writeRunner } from '../support/wait-runner.ts';

async function status(db: string, session: string) {
  const r = await runCli(['status', session, '--db', db, '--json']);
  assert.is(r.code, 0, r.stdout + r.stderr);
  return JSON.parse(r.stdout) as {
    outcome: string | null;
    owner: string | null;
    waits: { kind: string; name: string; outcome: string | null; tool: string | null }[];
  };
}

const until = (what: string, check: () => Promise<boolean>) => waitFor(check, { timeoutMs: 30_000, intervalMs: 100, what });

test('waits (processes) - SIGKILL while waiting for approval; approved on the log at rest, another worker runs the call once; a denied call never runs', async () => {
  const tmp = tempDir('sessiond-waits-cli-');
  const db = tmp.file('w.db');
  const runner = tmp.file('runner.mjs');
  const effects = tmp.file('effects.txt');
  writeRunner(runner, effects);
  const a = startCli(['start', '--db', db, '--runner', runner, '--sweep-ms', '200']);
  try {
    await a.waitFor('Stop it with Ctrl-C');
    for (const s of ['ses_ok', 'ses_no']) {
      const admitted = await runCli(['prompt', s, 'deploy', '--db', db]);
      assert.is(admitted.code, 0, admitted.stdout + admitted.stderr);
    }
    await a.waitFor('ses_ok  waits for approval of call call_ses_ok (deploy)');
    await a.waitFor(/ses_no {2}turn waiting/);
    await a.waitFor(/ses_ok {2}turn waiting/);
    const waiting = await status(db, 'ses_ok');
    assert.equal([waiting.outcome, waiting.owner], ['waiting', null], 'the waiting turn holds nothing');
    assert.equal(
      waiting.waits.map((w) => [w.kind, w.name, w.tool, w.outcome]),
      [['approval', 'call_ses_ok', 'deploy', null]],
    );
    const human = await runCli(['status', 'ses_ok', '--db', db]);
    assert.match(human.stdout, 'WAITING for one thing');
    assert.match(human.stdout, 'sessiond approve|deny ses_ok call_ses_ok');
    a.child.kill('SIGKILL');
    await a.exited;

    const approve = await runCli(['approve', 'ses_ok', 'call_ses_ok', '--reason', 'ship it', '--db', db]);
    assert.is(approve.code, 0, approve.stdout + approve.stderr);
    assert.match(approve.stdout, 'approved call call_ses_ok of ses_ok at sequence');
    assert.match(approve.stdout, 'the turn resumes (input inp_resume_');
    const again = await runCli(['approve', 'ses_ok', 'call_ses_ok', '--db', db]);
    assert.match(again.stdout, 'was already approved; nothing changed');
    const deny = await runCli(['deny', 'ses_no', 'call_ses_no', '--reason', 'not on a Friday', '--db', db]);
    assert.is(deny.code, 0, deny.stdout + deny.stderr);
    const flip = await runCli(['approve', 'ses_no', 'call_ses_no', '--db', db]);
    assert.is(flip.code, 1, 'a different second decision is refused');
    assert.match(flip.stderr, 'already_resolved');
    const unknown = await runCli(['approve', 'ses_no', 'call_nope', '--db', db]);
    assert.is(unknown.code, 1);
    assert.match(unknown.stderr, 'no_such_wait');

    const b = startCli(['start', '--db', db, '--runner', runner, '--sweep-ms', '200']);
    try {
      await b.waitFor(/ses_ok {2}done: approval call_ses_ok approved/);
      await b.waitFor(/ses_no {2}done: approval call_ses_no denied/);
      await until(
        'both turns succeeded',
        async () => (await status(db, 'ses_ok')).outcome === 'succeeded' && (await status(db, 'ses_no')).outcome === 'succeeded',
      );
    } finally {
      b.child.kill('SIGTERM');
      await b.exited;
    }
    const lines = readFileSync(effects, 'utf8').trim().split('\n');
    assert.equal(lines.length, 1, `the approved call ran once, the denied one never: ${lines.join(' | ')}`);
    assert.match(lines[0]!, /^ses_ok ses_ok:exe_\S+:call_ses_ok$/);
    const check = await runCli(['check', '--db', db]);
    assert.is(check.code, 0, check.stdout + check.stderr);
  } finally {
    a.child.kill('SIGKILL');
    tmp.remove();
  }
});

test('waits (processes) - a timer across SIGKILL and restart; a scheduled prompt runs when due; resolve delivers a value', async () => {
  const tmp = tempDir('sessiond-waits-cli-');
  const db = tmp.file('w.db');
  const runner = tmp.file('runner.mjs');
  writeRunner(runner, tmp.file('effects.txt'));
  const a = startCli(['start', '--db', db, '--runner', runner, '--sweep-ms', '200']);
  try {
    await a.waitFor('Stop it with Ctrl-C');
    const sleep = await runCli(['prompt', 'ses_sleep', 'sleep', '--db', db]);
    assert.is(sleep.code, 0, sleep.stdout + sleep.stderr);
    await a.waitFor('ses_sleep  waits for timer sleep-1 until');
    a.child.kill('SIGKILL');
    await a.exited;
    const { waits } = await status(db, 'ses_sleep');
    const timerEnds = Date.parse(/until (\S+)/.exec(a.output())![1]!);
    assert.equal(
      waits.map((w) => [w.kind, w.name, w.outcome]),
      [['timer', 'sleep-1', null]],
    );
    await until('the timer is due', async () => Date.now() > timerEnds);

    const b = startCli(['start', '--db', db, '--runner', runner, '--sweep-ms', '200']);
    try {
      await b.waitFor('ses_sleep  timer sleep-1 elapsed; the turn resumes');
      await b.waitFor('ses_sleep  done: timer sleep-1 elapsed');

      const scheduled = await runCli(['prompt', 'ses_later', 'good morning', '--in', '1s', '--db', db]);
      assert.is(scheduled.code, 0, scheduled.stdout + scheduled.stderr);
      assert.match(scheduled.stdout, 'scheduled: no turn runs it before');
      const at = Date.parse(/before (\S+);/.exec(scheduled.stdout)![1]!);
      await b.waitFor('ses_later  done: good morning');
      assert.ok(Date.now() >= at, 'not before its time');
      const both = await runCli(['prompt', 'ses_later', 'x', '--in', '1s', '--at', '2030-01-01T00:00:00Z', '--db', db]);
      assert.is(both.code, 2);
      assert.match(both.stderr, '--at and --in both say when');
      const badAt = await runCli(['prompt', 'ses_later', 'x', '--at', 'tomorrow', '--db', db]);
      assert.is(badAt.code, 2);
      assert.match(badAt.stderr, '--at must be a date and time with its zone');

      const ask = await runCli(['prompt', 'ses_ask', 'ask', '--db', db]);
      assert.is(ask.code, 0, ask.stdout + ask.stderr);
      await b.waitFor('ses_ask  waits for signal answer');
      const badData = await runCli(['resolve', 'ses_ask', 'answer', '--data', '{nope', '--db', db]);
      assert.is(badData.code, 2);
      assert.match(badData.stderr, '--data must be JSON');
      const resolved = await runCli(['resolve', 'ses_ask', 'answer', '--data', '{"pick":"blue"}', '--db', db]);
      assert.is(resolved.code, 0, resolved.stdout + resolved.stderr);
      assert.match(resolved.stdout, 'delivered signal answer of ses_ask');
      await b.waitFor('ses_ask  done: signal answer delivered {"pick":"blue"}');
    } finally {
      b.child.kill('SIGTERM');
      await b.exited;
    }
    const check = await runCli(['check', '--db', db]);
    assert.is(check.code, 0, check.stdout + check.stderr);
    assert.ok(existsSync(db));
  } finally {
    a.child.kill('SIGKILL');
    tmp.remove();
  }
});

test.run();
