/**
 * Operating sessions from the command line, as real processes: `prompt --tag`, `tag`, `ls` (filters,
 * pages by cursor, --json) and the tags in `status`, on a SQLite file (the log at rest, no worker
 * needed) and over NATS (a `sessiond start --nats` worker answers `list` from its projection).
 */
import * as assert from 'uvu/assert';
import { as, cliSuite, natsWorker } from './cli-suite.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { runCli } from '../support/cli.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { SessionPage } from '../../src/sessions/list.ts';

const s = cliSuite('sessiond ls and tag');

async function ok(args: string[]): Promise<string> {
  const r = await runCli(args);
  assert.is(r.code, 0, `sessiond ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

async function page(where: string[], args: string[]): Promise<SessionPage> {
  return JSON.parse(await ok(['ls', ...where, ...args, '--json'])) as SessionPage;
}

/** Every session the filter lists, page after page (`--limit 2`), by id. */
async function all(where: string[], args: string[]): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  do {
    const p = await page(where, [...args, '--limit', '2', ...(after ? ['--after', after] : [])]);
    ids.push(...p.sessions.map((x) => x.sessionId));
    after = p.next;
  } while (after);
  return ids;
}

for (const transport of ['db', 'nats'] as const) {
  s(`cli ls and tag (${transport}) - tagged prompts, a tag changed and removed, listed by tag and state over pages, shown in status`, async (ctx) => {
    const where = transport === 'db' ? ['--db', ctx.tmp.file('ls.db')] : ['--nats', ctx.server.url, ...as(CLIENT)];
    if (transport === 'nats') await natsWorker(ctx, 'ls-worker.db', 1);
    const run = `r${transport}`;
    for (const i of [1, 2, 3]) await ok(['prompt', `ses_${run}_${i}`, `hi ${i}`, '--no-wake', '--tag', `run=${run}`, '--tag', `n=${i}`, ...where]);
    const tagged = await ok(['tag', `ses_${run}_2`, 'tier=gold', 'n=', ...where]);
    assert.match(tagged, `tagged ses_${run}_2 at sequence 2`);
    assert.match(tagged, `tags: run=${run} tier=gold`);
    const full = transport === 'db'; // over NATS, what differs: the worker answers tag and list (the rest is the same code)
    if (full) assert.match(await ok(['tag', `ses_${run}_2`, 'tier=gold', ...where]), 'already had these tags; nothing changed');
    // on NATS the worker's projection follows the stream: wait until it lists the three
    await waitFor(async () => (await all(where, ['--tag', `run=${run}`])).length === 3, { timeoutMs: 15_000, what: 'three sessions listed' });
    assert.equal(await all(where, ['--tag', `run=${run}`]), [`ses_${run}_3`, `ses_${run}_2`, `ses_${run}_1`], 'newest first, over two pages');
    assert.equal(
      (await page(where, ['--tag', `run=${run}`, '--tag', 'tier=gold'])).sessions.map((x) => x.sessionId),
      [`ses_${run}_2`],
    );
    if (full) assert.equal((await page(where, ['--tag', `run=${run}`, '--state', 'running'])).sessions, []);
    assert.equal(await all(where, ['--prefix', `ses_${run}_`]), [`ses_${run}_3`, `ses_${run}_2`, `ses_${run}_1`], 'by id prefix, over two pages');
    assert.equal(
      (await page(where, ['--prefix', `ses_${run}_2`])).sessions.map((x) => x.sessionId),
      [`ses_${run}_2`],
    );
    const badPrefix = await runCli(['ls', ...where, '--prefix', 'a b']);
    assert.is(badPrefix.code, 2, badPrefix.stderr);
    assert.match(badPrefix.stderr, 'cannot start a session id');
    const first = await page(where, ['--tag', `run=${run}`, '--limit', '1']);
    assert.equal(
      first.sessions.map((x) => [x.sessionId, x.state, x.pendingInputs, x.tags]),
      [[`ses_${run}_3`, 'idle', 1, { n: '3', run }]],
    );
    assert.ok(first.next, 'a cursor to the next page');
    const human = await ok(['ls', ...where, '--tag', `run=${run}`, '--limit', '1', '--updated-since', '1h']);
    assert.match(human, `ses_${run}_3  idle  seq 1, 1 pending`);
    assert.match(human, `more: sessiond ls ... --after ${first.next}`);
    if (!full) return;
    assert.match(await ok(['status', `ses_${run}_2`, ...where]), `tags    run=${run} tier=gold`);
    const badTag = await runCli(['ls', ...where, '--tag', 'nokey']);
    assert.is(badTag.code, 2);
    assert.match(badTag.stderr, 'is not key=value');
    const badCursor = await runCli(['ls', ...where, '--after', 'xyz']);
    assert.is(badCursor.code, 2, badCursor.stderr);
    assert.match(badCursor.stderr, 'is not a cursor');
    const unknown = await runCli(['tag', 'ses_nobody', 'a=b', ...where]);
    assert.is(unknown.code, 66, unknown.stderr);
    assert.match(unknown.stderr, 'Session ses_nobody has no events, so there is nothing to tag');
  });
}

s.run();
