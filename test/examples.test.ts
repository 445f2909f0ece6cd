/** The README's examples are real files; they must keep running. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './support/cli.ts';

function runExample(name: string) {
  const cwd = mkdtempSync(join(tmpdir(), 'sessiond-example-'));
  const r = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), join(ROOT, 'examples', name)], { cwd, encoding: 'utf8', timeout: 60_000 });
  rmSync(cwd, { recursive: true, force: true });
  return r;
}

test('example 01 - embedded engine runs a session', () => {
  const r = runExample('01-embedded.ts');
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, /input inp_\w+ ran; session is settled at sequence \d+/);
});

test('example 02 - custom runner with a durable tool', () => {
  const r = runExample('02-custom-runner.ts');
  assert.is(r.status, 0, r.stderr);
  for (const t of ['tool.called', 'tool.succeeded', 'text.completed', 'execution.settled']) assert.match(r.stdout, t);
});

test('example 03 - a person approves a tool call while the turn waits holding nothing', () => {
  const r = runExample('03-approval.ts');
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, 'waiting: approval of call_mail (send_mail {"to":"bob@example.com"}), owner null');
  assert.match(r.stdout, /approved; the turn resumes with input inp_resume_exe_\w+/);
  assert.match(r.stdout, 'succeeded: Done: the mail to Bob is sent.');
});

test.run();
