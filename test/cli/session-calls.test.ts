/**
 * Session calls across real worker processes on one SQLite file: a parent calls two children at
 * once and waits; its worker is SIGKILLed (the children mid-turn on it); a second worker recovers
 * the children, finishes each (its prompt's work done once), delivers their answers, and the parent
 * answers with both.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';

async function readEvents(db: string, sessionId: string): Promise<SessionEvent[]> {
  const handle = openDatabase(db, { readonly: true });
  try {
    return await new SqliteEventLog(handle).readSession(sessionId);
  } finally {
    handle.close();
  }
}

/** ses_lead calls ses_lead-a and ses_lead-b at once; a child on a worker with HOLD_CHILDREN=1 holds until stopped, else does its work (one line in `effects`) and answers. */
function writeRunner(file: string, effects: string): void {
  writeFileSync(
    file,
    `import { appendFileSync } from 'node:fs';
export default async (ctx) => {
  if (ctx.sessionId === 'ses_lead') {
    const [a, b] = await Promise.all([
      ctx.callSession('a', { sessionId: 'ses_lead-a', prompt: 'count the apples' }),
      ctx.callSession('b', { sessionId: 'ses_lead-b', prompt: 'count the pears' }),
    ]);
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, 'a ' + a.outcome + ': ' + a.text + ' | b ' + b.outcome + ': ' + b.text);
    await ctx.endStep(messageId, 'stop');
    return;
  }
  const { messageId } = await ctx.startStep();
  if (process.env.HOLD_CHILDREN === '1') await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  appendFileSync(${JSON.stringify(effects)}, ctx.sessionId + '\\n');
  await ctx.text(messageId, ctx.sessionId + ' counted');
  await ctx.endStep(messageId, 'stop');
};
`,
  );
}

test('session calls - the parent worker SIGKILLed while it waits on two children: another worker finishes them, each once, and the parent answers with both', async () => {
  const tmp = tempDir('sessiond-calls-cli-');
  const db = tmp.file('calls.db');
  const runner = tmp.file('calls-runner.mjs');
  const effects = tmp.file('effects.txt');
  writeRunner(runner, effects);
  const flags = ['start', '--db', db, '--runner', runner, '--lease-ms', '1500', '--heartbeat-ms', '500', '--sweep-ms', '300'];
  const a = startCli(flags, { env: { HOLD_CHILDREN: '1' } });
  let b: ReturnType<typeof startCli> | undefined;
  try {
    await a.waitFor('send it a prompt');
    const admitted = await runCli(['prompt', 'ses_lead', 'count the fruit', '--db', db]);
    assert.is(admitted.code, 0, admitted.stderr);
    const claimed = async (id: string) => (await readEvents(db, id)).some((e) => e.type === 'execution.claimed');
    await waitFor(async () => (await readEvents(db, 'ses_lead')).some((e) => e.type === 'execution.settled' && e.payload.outcome === 'waiting'), {
      what: 'the parent to settle waiting',
      timeoutMs: 20_000,
    });
    await waitFor(async () => (await claimed('ses_lead-a')) && (await claimed('ses_lead-b')), {
      what: 'both children running on the first worker',
      timeoutMs: 20_000,
    });
    const waiting = await runCli(['status', 'ses_lead', '--db', db]);
    assert.match(waiting.stdout, /session call a: session ses_lead-a/);
    assert.match(waiting.stdout, /session call b: session ses_lead-b/);
    // in the order their waits were recorded: the two calls race
    assert.match(waiting.stdout, /\n {2}children (ses_lead-a, ses_lead-b|ses_lead-b, ses_lead-a) \(its turn waits on their turns\)/);
    const child = await runCli(['status', 'ses_lead-a', '--db', db]);
    assert.match(child.stdout, /\n {2}called by ses_lead /);
    const json = JSON.parse((await runCli(['status', 'ses_lead', '--json', '--db', db])).stdout) as { calledBy: string | null; children: string[] };
    assert.equal([json.calledBy, [...json.children].sort()], [null, ['ses_lead-a', 'ses_lead-b']]);
    const childJson = JSON.parse((await runCli(['status', 'ses_lead-b', '--json', '--db', db])).stdout) as { calledBy: string | null; children: string[] };
    assert.equal([childJson.calledBy, childJson.children], ['ses_lead', []]);
    a.child.kill('SIGKILL');
    await a.exited;
    assert.ok(!existsSync(effects), 'no child did its work on the killed worker');

    b = startCli(flags);
    await waitFor(async () => (await readEvents(db, 'ses_lead')).some((e) => e.type === 'execution.settled' && e.payload.outcome === 'succeeded'), {
      what: 'the parent to answer',
      timeoutMs: 30_000,
    });
    const lead = await readEvents(db, 'ses_lead');
    const answer = lead.flatMap((e) => (e.type === 'text.completed' ? [e.payload.text] : []));
    assert.equal(answer, ['a succeeded: ses_lead-a counted | b succeeded: ses_lead-b counted']);
    assert.equal(
      lead
        .filter((e) => e.type === 'wait.resolved')
        .map((e) => `${e.payload.name} ${e.payload.outcome}`)
        .sort(),
      ['a delivered', 'b delivered'],
      'each child delivered once',
    );
    assert.equal(readFileSync(effects, 'utf8').trim().split('\n').sort(), ['ses_lead-a', 'ses_lead-b'], 'each child did its work once');
    for (const child of ['ses_lead-a', 'ses_lead-b']) {
      const events = await readEvents(db, child);
      assert.is(events.filter((e) => e.type === 'input.admitted' && e.payload.source === 'user').length, 1, `${child}: the prompt admitted once`);
      assert.is(events.filter((e) => e.type === 'recovery.completed').length, 1, `${child}: recovered from the killed worker`);
    }
    // ls: each child names its parent, the parent counts its children; --called-by lists them
    const ls = await runCli(['ls', '--db', db]);
    assert.is(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, /^ses_lead-a {2}settled .*, called by ses_lead$/m);
    assert.match(ls.stdout, /^ses_lead-b {2}settled .*, called by ses_lead$/m);
    assert.match(ls.stdout, /^ses_lead {2}settled .*, 2 children$/m);
    const kids = JSON.parse((await runCli(['ls', '--db', db, '--called-by', 'ses_lead', '--json'])).stdout) as {
      sessions: { sessionId: string; calledBy: string | null; childCount: number }[];
    };
    assert.equal(kids.sessions.map((x) => [x.sessionId, x.calledBy, x.childCount]).sort(), [
      ['ses_lead-a', 'ses_lead', 0],
      ['ses_lead-b', 'ses_lead', 0],
    ]);
    const bad = await runCli(['ls', '--db', db, '--called-by', 'not an id']);
    assert.is(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /is not a session id/);
    const check = await runCli(['check', '--db', db, '--safety-only']);
    assert.is(check.code, 0, check.stdout + check.stderr);
  } finally {
    a.child.kill('SIGKILL');
    b?.child.kill('SIGTERM');
    await b?.exited;
    tmp.remove();
  }
});

test.run();
