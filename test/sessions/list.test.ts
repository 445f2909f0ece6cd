/**
 * `list` on the embedded engine, with an injected clock: every filter, paging that misses and repeats
 * nothing while sessions are created and changed between pages, the session rows the same whether
 * folded batch by batch or rebuilt from the log, and each query shape read by an index in page order
 * (no sort, no scan: what keeps a deep page as cheap as the first at 100k sessions; bench/ measures it).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { openEngine, type Engine } from '../../src/engine.ts';
import { sequentialIds } from '../../src/ids.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { RunContext } from '../../src/runner/types.ts';
import { catchUpProjection } from '../../src/projector/catch-up.ts';
import { projectionHash, rebuildProjection } from '../../src/projector/rebuild.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { checkListFilter, type ListFilter } from '../../src/sessions/list.ts';
import { tempDir } from '../support/tmp.ts';

const T0 = Date.parse('2026-12-01T00:00:00Z');

/** An echo, except that `wait` waits for a signal (the session then waits, holding nothing). */
const echo = echoRunner({ steps: 1 });
async function runner(ctx: RunContext): Promise<void> {
  if (ctx.inputs[0]?.prompt === 'wait') await ctx.waitFor('go');
  await echo(ctx);
}

type World = { tmp: ReturnType<typeof tempDir>; clock: ManualClock; engine: Engine };

/** Runs `body` on a fresh engine (injected clock, sequential ids) and closes it after, whatever happens. */
async function inWorld(body: (w: World) => Promise<void>): Promise<void> {
  const tmp = tempDir('sessiond-list-');
  const clock = new ManualClock(T0);
  const engine = await openEngine({ file: tmp.file('list.db'), runner, clock, ids: sequentialIds() });
  try {
    await body({ tmp, clock, engine });
  } finally {
    await engine.close();
    tmp.remove();
  }
}

async function everything(engine: Engine, filter: ListFilter, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  do {
    const page = await engine.list({ ...filter, limit, ...(after ? { after } : {}) });
    assert.ok(page.sessions.length <= limit);
    ids.push(...page.sessions.map((s) => s.sessionId));
    after = page.next;
  } while (after);
  return ids;
}

test('list - filters by state, waiting, every tag and updated-since; newest first; counts pending inputs', () =>
  inWorld(async ({ clock, engine }) => {
    // ses_00..ses_29, one a second: every third waits for a signal, every fifth is only admitted; tags by parity
    for (let i = 0; i < 30; i++) {
      clock.set(T0 + i * 1000);
      const id = `ses_${String(i).padStart(2, '0')}`;
      const tags = { parity: i % 2 === 0 ? 'even' : 'odd', ...(i % 10 === 0 ? { round: 'yes' } : {}) };
      await engine.admit(id, { prompt: i % 3 === 0 ? 'wait' : 'hi', wake: i % 5 !== 0, tags });
      await engine.awaitIdle(id);
    }
    const ids = (f: ListFilter) => everything(engine, f, 7);
    const range = (pick: (i: number) => boolean) =>
      Array.from({ length: 30 }, (_, i) => 29 - i)
        .filter(pick)
        .map((i) => `ses_${String(i).padStart(2, '0')}`);
    assert.equal(
      await ids({}),
      range(() => true),
      'newest first',
    );
    assert.equal(
      await ids({ waiting: true }),
      range((i) => i % 3 === 0 && i % 5 !== 0),
    );
    assert.equal(
      await ids({ waiting: false }),
      range((i) => i % 3 !== 0 || i % 5 === 0),
    );
    assert.equal(
      await ids({ state: 'idle' }),
      range((i) => i % 5 === 0),
      'admitted without a wake: never claimed',
    );
    assert.equal(
      await ids({ state: 'settled' }),
      range((i) => i % 5 !== 0),
    );
    assert.equal(
      await ids({ tags: { parity: 'even' } }),
      range((i) => i % 2 === 0),
    );
    assert.equal(
      await ids({ tags: { parity: 'even', round: 'yes' } }),
      range((i) => i % 10 === 0),
      'every tag must match',
    );
    assert.equal(
      await ids({ tags: { parity: 'even' }, state: 'idle', waiting: false }),
      range((i) => i % 10 === 0),
    );
    assert.equal(
      await ids({ updatedSince: T0 + 25_000 }),
      range((i) => i >= 25),
    );
    const [idle] = (await engine.list({ state: 'idle', limit: 1 })).sessions;
    assert.equal([idle!.sessionId, idle!.pendingInputs, idle!.waiting, idle!.createdAt], ['ses_25', 1, false, T0 + 25_000]);
    // a later event changes updatedAt and state, never the order (creation)
    clock.set(T0 + 60_000);
    await engine.resolve('ses_03', 'go', { data: 1 });
    await engine.awaitIdle('ses_03');
    assert.equal(await ids({ updatedSince: T0 + 60_000 }), ['ses_03']);
    assert.not.ok((await ids({ waiting: true })).includes('ses_03'), 'it no longer waits');
    assert.equal((await ids({})).slice(-4), ['ses_03', 'ses_02', 'ses_01', 'ses_00'], 'still in creation order');
  }));

test('list - paging by cursor while sessions are created and change between pages: nothing missed, nothing twice', () =>
  inWorld(async ({ clock, engine }) => {
    for (let i = 0; i < 120; i++) {
      clock.set(T0 + Math.floor(i / 4) * 1000); // four sessions a second: the cursor orders ties by id
      await engine.admit(`ses_${String(i).padStart(3, '0')}`, { prompt: 'hi', wake: false, tags: { batch: 'a' } });
    }
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const page = await engine.list({ tags: { batch: 'a' }, limit: 25, ...(after ? { after } : {}) });
      seen.push(...page.sessions.map((s) => s.sessionId));
      after = page.next;
      pages++;
      // between pages: a new session (newer than every page: never in a later one) and a change to an old one
      clock.set(T0 + 100_000 + pages);
      await engine.admit(`ses_new_${pages}`, { prompt: 'hi', wake: false, tags: { batch: 'a' } });
      await engine.tag('ses_000', { touched: String(pages) });
    } while (after);
    assert.is(pages, 5, '120 sessions in pages of 25');
    assert.equal(
      seen,
      Array.from({ length: 120 }, (_, i) => `ses_${String(119 - i).padStart(3, '0')}`),
    );
    const fresh = await engine.list({ tags: { batch: 'a' }, limit: 5 });
    assert.equal(
      fresh.sessions.map((s) => s.sessionId),
      ['ses_new_5', 'ses_new_4', 'ses_new_3', 'ses_new_2', 'ses_new_1'],
    );
  }));

test('list - the session rows folded batch by batch equal a rebuild from the log (tags, waits, states, pending)', () =>
  inWorld(async ({ tmp, clock, engine }) => {
    for (let i = 0; i < 12; i++) {
      clock.set(T0 + i * 10);
      await engine.admit(`ses_${i}`, { prompt: i % 4 === 0 ? 'wait' : 'hi', wake: i % 3 !== 0, tags: { k: String(i % 3) } });
      if (i % 2 === 0) await engine.tag(`ses_${i}`, { extra: 'x', k: null });
      await engine.awaitIdle(`ses_${i}`);
    }
    await engine.list(); // folds the projection up to the head
    const rows = engine.db.prepare('SELECT COUNT(*) AS n FROM session').get() as { n: number };
    assert.is(rows.n, 12);
    const incremental = projectionHash(engine.db);
    const other = openDatabase(tmp.file('rebuilt.db'));
    migrate(other);
    await rebuildProjection(other, engine.log);
    assert.is(projectionHash(other), incremental, 'rebuilt rows hash the same');
    const tags = other.prepare('SELECT session_id, key, value FROM session_tag ORDER BY session_id, key').all() as { session_id: string; key: string }[];
    assert.ok(tags.some((t) => t.session_id === 'ses_0' && t.key === 'extra'));
    assert.not.ok(
      tags.some((t) => t.session_id === 'ses_0' && t.key === 'k'),
      'a removed tag has no row',
    );
    other.close();
    assert.is(await catchUpProjection(engine.db, engine.log), await engine.log.head(), 'at the head, catching up reads nothing more');
  }));

test('list - a session called by another names its parent, the parent counts its children; calledBy pages the children; a rebuild agrees', () =>
  inWorld(async ({ tmp, clock, engine }) => {
    await engine.admit('ses_lead', { prompt: 'hi', wake: false });
    for (let i = 0; i < 5; i++) {
      clock.set(T0 + (i + 1) * 1000);
      await engine.admit(`ses_kid${i}`, { prompt: 'hi', wake: false, caller: 'ses_lead' });
    }
    clock.set(T0 + 10_000);
    await engine.admit('ses_other', { prompt: 'hi', wake: false });
    // the latest caller is the parent: ses_kid4 called again by ses_other moves to it
    await engine.admit('ses_kid4', { prompt: 'again', wake: false, caller: 'ses_other' });
    await engine.admit('ses_kid3', { prompt: 'plain', wake: false });
    const items = Object.fromEntries((await engine.list({ limit: 100 })).sessions.map((s) => [s.sessionId, [s.calledBy, s.childCount]]));
    assert.equal(items, {
      ses_lead: [null, 4],
      ses_kid0: ['ses_lead', 0],
      ses_kid1: ['ses_lead', 0],
      ses_kid2: ['ses_lead', 0],
      ses_kid3: ['ses_lead', 0],
      ses_kid4: ['ses_other', 0],
      ses_other: [null, 1],
    });
    assert.equal(await everything(engine, { calledBy: 'ses_lead' }, 3), ['ses_kid3', 'ses_kid2', 'ses_kid1', 'ses_kid0'], 'newest first, over pages');
    assert.equal(await everything(engine, { calledBy: 'ses_other' }, 3), ['ses_kid4']);
    assert.equal(await everything(engine, { calledBy: 'ses_kid0' }, 3), [], 'a session with no children');
    assert.throws(() => checkListFilter({ calledBy: 'not an id' }), /calledBy must be a session id/);
    const other = openDatabase(tmp.file('rebuilt.db'));
    migrate(other);
    await rebuildProjection(other, engine.log);
    assert.is(projectionHash(other), projectionHash(engine.db), 'rebuilt rows hash the same');
    other.close();
  }));

test('list - every query shape reads one index in page order: no sort, no scan of the table', () =>
  inWorld(async ({ engine }) => {
    const { listSessionPlan } = await import('../../src/projector/session-list.ts');
    const shapes: ListFilter[] = [
      {},
      { after: 'MTc5NjA1Njc0NTkxNy5zZXNfMQ' },
      { state: 'settled', after: 'MTc5NjA1Njc0NTkxNy5zZXNfMQ' },
      { waiting: true },
      { tags: { customer: 'acme' }, after: 'MTc5NjA1Njc0NTkxNy5zZXNfMQ' },
      { tags: { customer: 'acme', env: 'prod' }, state: 'idle' },
      { calledBy: 'ses_lead', after: 'MTc5NjA1Njc0NTkxNy5zZXNfMQ' },
    ];
    for (const f of shapes) {
      const plan = listSessionPlan(engine.db, checkListFilter(f)).join(' | ');
      assert.not.match(plan, 'TEMP B-TREE', `${JSON.stringify(f)}: no sort (${plan})`);
      assert.not.match(plan, /SCAN s\b(?! USING)/, `${JSON.stringify(f)}: no scan of the session table (${plan})`);
      assert.match(plan, /USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY|PRIMARY KEY/, `${JSON.stringify(f)}: an index (${plan})`);
    }
  }));

test('list - an id prefix: exactly its sessions, paged newest first; a prefix of many walks the order index, one of few its key range', () =>
  inWorld(async ({ clock, engine }) => {
    const { listSessionPlan, PREFIX_SORTED } = await import('../../src/projector/session-list.ts');
    // cust-1:* and cust-10:* interleaved (one is a prefix of the other), then other ids around them
    const ids = Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? `cust-10:s${i}` : i % 3 === 1 ? `cust-1:s${i}` : `cust-2:s${i}`));
    for (const id of [...ids, 'cust-1', 'cust-0:x', 'cust-1=x', 'cust-1:']) {
      clock.set(clock.now() + 1000);
      await engine.admit(id, { prompt: 'p', wake: false });
    }
    const newestFirst = (p: string) => [...ids, 'cust-1', 'cust-0:x', 'cust-1=x', 'cust-1:'].filter((id) => id.startsWith(p)).reverse();
    assert.equal(await everything(engine, { idPrefix: 'cust-1:' }, 2), newestFirst('cust-1:'), 'cust-1: pages, not cust-10: nor cust-1=x');
    assert.equal(await everything(engine, { idPrefix: 'cust-1' }, 3), newestFirst('cust-1'), 'cust-1 holds cust-10: and cust-1 itself');
    assert.equal(await everything(engine, { idPrefix: 'cust-10:s9' }, 5), ['cust-10:s9']);
    assert.equal((await engine.list({ idPrefix: 'nobody' })).sessions, []);
    assert.equal(
      (await engine.list({ idPrefix: 'cust-1:', state: 'idle', limit: 50 })).sessions.map((s) => s.sessionId),
      newestFirst('cust-1:'),
      'with a state filter too',
    );
    const few = listSessionPlan(engine.db, checkListFilter({ idPrefix: 'cust-1:' })).join(' | ');
    assert.match(few, /sqlite_autoindex_session_1 \(session_id>\? AND session_id<\?\)/, `few sessions: the key range (${few})`);
    // more sessions under one prefix than are sorted: the page walks the order's index, no sort
    for (let i = 0; i <= PREFIX_SORTED; i++) {
      clock.set(clock.now() + 1);
      await engine.admit(`many:${i}`, { prompt: 'p', wake: false });
    }
    const page = await engine.list({ idPrefix: 'many:', limit: 3 });
    assert.equal(
      page.sessions.map((s) => s.sessionId),
      [`many:${PREFIX_SORTED}`, `many:${PREFIX_SORTED - 1}`, `many:${PREFIX_SORTED - 2}`],
    );
    const walk = listSessionPlan(engine.db, checkListFilter({ idPrefix: 'many:' })).join(' | ');
    assert.not.match(walk, 'TEMP B-TREE', `many sessions: no sort (${walk})`);
    assert.match(walk, 'session_created_idx', `many sessions: the order's index (${walk})`);
    const bad = await engine.list({ idPrefix: 'no spaces' }).then(
      () => null,
      (err: Error) => err,
    );
    assert.match(bad?.message ?? 'listed', 'idPrefix must be the start of a session id');
  }));

test.run();
