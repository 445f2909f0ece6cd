/**
 * `sessiond start --max-running-turns N`, real processes: two workers on one SQLite file, each
 * allowed one turn at a time, and six sessions prompted at once. A worker never runs two turns at
 * once (the runner logs each turn's start and end with the worker's pid), a session it has no room
 * for waits unclaimed and is taken by the other worker or runs here later, and every turn settles.
 * (The rules on one engine: test/execution/max-running-turns.test.ts.)
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { waitFor } from '../../src/testing/wait.ts';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

test('max running turns - two workers with --max-running-turns 1 on one file: neither runs two turns at once, both run some, all six settle', async () => {
  const tmp = tempDir();
  const db = tmp.file('w.db');
  const trace = tmp.file('trace.log');
  const runner = tmp.file('traced.mjs');
  // each turn: a line when it starts and one when it ends, 300 ms apart, with the worker's pid
  writeFileSync(
    runner,
    [
      "import { appendFileSync } from 'node:fs';",
      'export default async (ctx) => {',
      `  appendFileSync(${JSON.stringify(trace)}, \`start \${process.pid} \${ctx.sessionId}\\n\`);`,
      '  await new Promise((r) => setTimeout(r, 300));',
      `  appendFileSync(${JSON.stringify(trace)}, \`end \${process.pid} \${ctx.sessionId}\\n\`);`,
      '};',
      '',
    ].join('\n'),
  );
  const bad = await runCli(['start', '--db', db, '--max-running-turns', '0']);
  assert.is(bad.code, 2, bad.stdout + bad.stderr);
  assert.match(bad.stderr, '--max-running-turns');
  writeFileSync(trace, '');
  const workers = [0, 1].map(() => startCli(['start', '--db', db, '--runner', runner, '--max-running-turns', '1', '--sweep-ms', '200']));
  try {
    for (const w of workers) await w.waitFor('at most 1 turns at once');
    const ids = Array.from({ length: 6 }, (_, i) => `ses_room${i}`);
    const prompts = await Promise.all(ids.map((id) => runCli(['prompt', id, 'go', '--db', db])));
    for (const p of prompts) assert.is(p.code, 0, p.stdout + p.stderr);
    await waitFor(
      () =>
        readFileSync(trace, 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('end ')).length >= 6,
      {
        what: 'six turns to end',
        timeoutMs: 60_000,
      },
    );
    const lines = readFileSync(trace, 'utf8').trim().split('\n');
    const open = new Map<string, number>();
    for (const line of lines) {
      const [what, pid] = line.split(' ');
      const n = (open.get(pid!) ?? 0) + (what === 'start' ? 1 : -1);
      assert.ok(n <= 1, `worker ${pid} ran two turns at once:\n${lines.join('\n')}`);
      open.set(pid!, n);
    }
    assert.is(new Set(lines.map((l) => l.split(' ')[1])).size, 2, `both workers ran turns:\n${lines.join('\n')}`);
    assert.equal(new Set(lines.filter((l) => l.startsWith('end ')).map((l) => l.split(' ')[2])).size, 6, 'each session ran once');
    for (const id of ids) {
      await waitFor(
        async () => {
          const status = await runCli(['status', id, '--db', db, '--json']);
          return JSON.parse(status.stdout).execution?.outcome === 'succeeded';
        },
        { what: `${id} settled`, timeoutMs: 20_000 },
      );
    }
    assert.ok(
      workers.some((w) => w.output().includes('waits for room')),
      `a worker said a session waits for room:\n${workers.map((w) => w.output()).join('\n')}`,
    );
  } finally {
    for (const w of workers) {
      w.child.kill('SIGTERM');
      await w.exited;
    }
    tmp.remove();
  }
});

test.run();
