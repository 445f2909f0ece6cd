/**
 * Deleting sessions on the embedded engine: everything of the session goes (events, every projection
 * table, snapshot, quarantine) and nothing of the others; one audit row says who, when and why and
 * how many events, never the content; the projection equals a rebuild of the log that is left, and
 * the safety audit of the log passes; a running turn is cancelled first; a projector that read the
 * session before the delete does not bring its rows back; the id starts afresh afterwards.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pngBytes } from '../support/png.ts';
import { openEngine, type Engine } from '../../src/engine.ts';
import { ErrorCode, isSessiondError } from '../../src/errors.ts';
import type { RunContext } from '../../src/runner/types.ts';
import { auditLog } from '../../src/audit/audit-log.ts';
import { catchUpProjection } from '../../src/projector/catch-up.ts';
import { Projector } from '../../src/projector/index.ts';
import { projectionHash, rebuildProjection } from '../../src/projector/rebuild.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { summarize } from '../../src/inspector/store.ts';
import { SqliteInspectorIndex } from '../../src/inspector/sqlite-index.ts';
import { tempDir } from '../support/tmp.ts';

let release: (() => void) | undefined;
const histories = new Map<string, string[]>();
/** Answers each prompt; `hold` waits until released (a turn in progress); `wait` waits for a signal. */
async function runner(ctx: RunContext): Promise<void> {
  histories.set(
    ctx.sessionId,
    (await ctx.history()).flatMap((i) => (i.type === 'user' ? [i.text] : [])),
  );
  const { messageId } = await ctx.startStep();
  await ctx.text(messageId, `answer to ${ctx.inputs[0]!.prompt}`);
  if (ctx.inputs[0]!.prompt === 'hold') await new Promise<void>((r) => (release = r));
  if (ctx.inputs[0]!.prompt === 'wait') await ctx.waitFor('go');
  await ctx.endStep(messageId);
}

async function inEngine(body: (engine: Engine, file: string) => Promise<void>): Promise<void> {
  const tmp = tempDir('sessiond-delete-');
  const file = tmp.file('delete.db');
  const engine = await openEngine({ file, runner });
  try {
    await body(engine, file);
  } finally {
    await engine.close();
    tmp.remove();
  }
}

const count = (engine: Engine, table: string, id: string) =>
  (engine.db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE ${table === 'event_batch' ? 'aggregate_id' : 'session_id'} = ?`).get(id) as { n: number }).n;

async function turn(engine: Engine, id: string, prompt: string): Promise<void> {
  await engine.admit(id, { prompt, tags: { who: 'ada' } });
  await engine.awaitIdle(id);
}

/** Every table that holds a session's rows, read from the schema (a table added later is covered too), but the audit itself. */
function sessionTables(engine: Engine): string[] {
  const tables = engine.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  const keyed = tables.filter((t) => (engine.db.prepare(`PRAGMA table_info(${t})`).all() as { name: string }[]).some((c) => c.name === 'session_id'));
  return ['event_batch', ...keyed.filter((t) => t !== 'session_deletion')].sort();
}

test('delete - every row of the session goes and none of the others; one audit row without the content; the projection equals a rebuild', async () =>
  inEngine(async (engine) => {
    const TABLES = sessionTables(engine);
    assert.ok(
      ['session_wait', 'session_tag', 'quarantined_message'].every((t) => TABLES.includes(t)),
      'the schema is read',
    );
    await turn(engine, 'ses_gone', 'my secret address');
    await engine.admit('ses_gone', { prompt: 'wait' });
    await engine.awaitIdle('ses_gone'); // it waits for a signal: a session_wait row
    await turn(engine, 'ses_kept', 'hello');
    // an image each, stored as a blob (a session_blob row each)
    for (const [id, seed] of [
      ['ses_gone', 1],
      ['ses_kept', 2],
    ] as const)
      await engine.admit(id, { prompt: [{ type: 'image', data: pngBytes(100_000, seed).toString('base64'), mediaType: 'image/png' }], wake: false });
    await catchUpProjection(engine.db, engine.log);
    // the inspector's index beside the log (sessiond start --inspect writes it as it follows)
    const index = new SqliteInspectorIndex(engine.db);
    for (const id of ['ses_gone', 'ses_kept']) {
      const snapshot = await engine.execution.handler.load(id);
      index.putCheckpoints([snapshot]);
      index.putMarks(id, [{ seq: snapshot.context.seq, eventId: 'evt_mark', time: 0, first: 0, rows: { inputs: 1, messages: 1, recoveries: 0 } }]);
      index.putFollowed(engine.log.name, 1, [{ snapshot, previous: null, summary: summarize(snapshot) }]);
      index.putTimelineBlocks(id, [{ block: 0, lastId: 'evt_block', times: [0], types: { 'input.admitted': [1] } }]);
    }
    for (const t of TABLES.filter((t) => !['session_execution', 'session_recovery', 'session_snapshot', 'quarantined_message'].includes(t)))
      assert.ok(count(engine, t, 'ses_gone') > 0, `${t} holds the session before`);
    const keptBefore = TABLES.map((t) => count(engine, t, 'ses_kept'));
    const record = await engine.delete('ses_gone', { by: 'ops@example.com', reason: 'GDPR request 42' });
    assert.equal(
      { ...record, deletedAt: 0 },
      {
        sessionId: 'ses_gone',
        deletedAt: 0,
        deletedBy: 'ops@example.com',
        reason: 'GDPR request 42',
        events: record.events,
        lastSeq: record.lastSeq,
        archivedTo: null,
        // its image was stored just now: left to the blob sweep (the grace period)
        blobs: { removed: 0, shared: 0, left: 1 },
      },
    );
    assert.ok(record.events > 5 && record.lastSeq === record.events, 'it counted the events (the waiting turn was cancelled first)');
    for (const t of TABLES) assert.is(count(engine, t, 'ses_gone'), 0, `${t} holds nothing of it`);
    assert.equal(
      TABLES.map((t) => count(engine, t, 'ses_kept')),
      keptBefore,
      'the other session is untouched',
    );
    const { blobs: _blobs, ...recorded } = record; // what became of the blobs is told, not recorded
    assert.equal(engine.deletions(), [recorded]);
    const audit = JSON.stringify(engine.db.prepare('SELECT * FROM session_deletion').all());
    assert.not.match(audit, 'secret', 'the audit holds no content');
    // the projection the engine keeps equals one rebuilt from the log that is left
    await catchUpProjection(engine.db, engine.log);
    const now = projectionHash(engine.db);
    const tmp = tempDir('sessiond-delete-rebuild-');
    const fresh = openDatabase(tmp.file('fresh.db'));
    migrate(fresh);
    await rebuildProjection(fresh, engine.log);
    assert.is(projectionHash(fresh), now);
    fresh.close();
    tmp.remove();
    assert.equal(auditLog(await engine.log.readAll()), [], 'the log that is left passes the safety audit');
    assert.is(await rejectedCode(engine.delete('ses_gone')), ErrorCode.NotFound, 'a second delete finds nothing');
  }));

test('delete - a turn in progress is cancelled first; its runner writes nothing after; the id starts afresh', async () =>
  inEngine(async (engine) => {
    await engine.admit('ses_busy', { prompt: 'hold' });
    await waitForRelease();
    const head = await engine.log.head();
    const deleting = engine.delete('ses_busy', { reason: 'stop' });
    release!(); // the runner's next write meets the cancel
    const record = await deleting;
    assert.ok(record.events >= 4);
    assert.equal(await engine.log.readSession('ses_busy'), [], 'nothing written after the delete');
    await turn(engine, 'ses_busy', 'a new beginning');
    const fresh = await engine.log.readSession('ses_busy');
    assert.ok(
      fresh[0]!.seq === 1 && fresh[0]!.position! > head,
      'positions are never used twice, even after the newest events were deleted (readers following the log have passed them)',
    );
    assert.equal(histories.get('ses_busy'), ['a new beginning'], 'the new session under the old id sees nothing of the old one');
    assert.is((await engine.status('ses_busy')).executions, 1);
  }));

test('delete - a projector that read the session before the delete does not bring its rows back', async () =>
  inEngine(async (engine, file) => {
    await turn(engine, 'ses_race', 'one');
    await catchUpProjection(engine.db, engine.log);
    const other = openDatabase(file);
    const late = new Projector(other, { name: 'late' });
    const read = await engine.log.readAll(); // read before the delete ...
    await engine.delete('ses_race');
    late.apply(read); // ... applied after it
    for (const t of ['session_input', 'session_message', 'session', 'session_tag'])
      assert.is((other.prepare(`SELECT COUNT(*) AS n FROM ${t} WHERE session_id = 'ses_race'`).get() as { n: number }).n, 0, `${t} stays empty`);
    other.close();
  }));

async function rejectedCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (isSessiondError(err)) return err.code;
    throw err;
  }
  throw new Error('expected a rejection');
}

async function waitForRelease(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!release) {
    if (Date.now() > deadline) throw new Error('the turn never reached its hold');
    await new Promise((r) => setImmediate(r));
  }
}

test.run();
