/**
 * `sessiond start` prints JSON lines when its output is not a terminal (or with --log-format json):
 * one object per line with level, time, msg, the worker id, and the session and execution a line is
 * about; readable lines with --log-format text (and on a terminal).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

interface Line {
  level: string;
  time: string;
  msg: string;
  worker?: string;
  session?: string;
  execution?: string;
  notice?: string;
  event?: string;
}

test('worker log - JSON lines off a terminal: every line an object naming its worker, session and execution', async () => {
  const tmp = tempDir();
  const db = tmp.file('json.db');
  const worker = startCli(['start', '--db', db], { env: { SESSIOND_LOG_FORMAT: '' } }); // stdout is a pipe: JSON by default
  try {
    await worker.waitFor('is running on');
    const admitted = await runCli(['prompt', 'ses_json', 'log me', '--db', db]);
    assert.is(admitted.code, 0, admitted.stderr);
    await worker.waitFor('"notice":"settled"');
  } finally {
    worker.child.kill('SIGTERM');
    assert.is(await worker.exited, 0, worker.output());
  }
  const lines = worker
    .output()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);
  assert.ok(
    lines.every((l) => typeof l.level === 'string' && typeof l.time === 'string' && typeof l.msg === 'string'),
    'every line is a log object',
  );
  const workerId = lines.find((l) => l.worker)?.worker;
  assert.match(workerId ?? '', /^own_/);
  const claimed = lines.find((l) => l.notice === 'claimed')!;
  assert.equal([claimed.session, claimed.worker, claimed.level], ['ses_json', workerId, 'info']);
  assert.match(claimed.execution ?? '', /^exe_/);
  const settled = lines.find((l) => l.notice === 'settled')!;
  assert.equal([settled.session, settled.execution, settled.msg], ['ses_json', claimed.execution, 'ses_json  turn succeeded']);
  assert.ok(
    lines.some((l) => l.event === 'input.admitted' && l.session === 'ses_json'),
    'events name their type and session',
  );
  assert.match(lines.at(-1)!.msg, 'stopped (nothing was running)');
  tmp.remove();
});

test('worker log - --log-format text keeps readable lines; a bad format is a usage error', async () => {
  const tmp = tempDir();
  const db = tmp.file('text.db');
  const worker = startCli(['start', '--db', db, '--log-format', 'text'], { env: { SESSIOND_LOG_FORMAT: '' } });
  try {
    await worker.waitFor('is running on');
  } finally {
    worker.child.kill('SIGTERM');
    assert.is(await worker.exited, 0);
  }
  assert.match(worker.output(), /^sessiond worker own_\S+ is running on /m);
  assert.not.match(worker.output(), '"level"');
  const bad = await runCli(['start', '--db', db, '--log-format', 'xml']);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, '--log-format must be one of text, json (got "xml")');
  tmp.remove();
});

test.run();
