/**
 * A session deleted and written again while an inspector follows the log: the inspector shows its
 * new life (the list, the session view, the conversation), not the older one it had folded, and a
 * restart over its kept index does too.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { SqliteInspectorIndex } from '../../src/inspector/sqlite-index.ts';
import { sqliteDeletionFeed } from '../../src/storage/sqlite/delete-session.ts';
import { systemClock } from '../../src/clock.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
const S = 'ses_written_again';
let engine: Engine;

test.before(async () => {
  engine = await openEngine({ file: tmp.file('again.db'), runner: echoRunner({ steps: 1 }) });
});

test.after(async () => {
  await engine?.close();
  tmp.remove();
});

async function turns(prompts: string[], sessionId = S): Promise<void> {
  for (const prompt of prompts) {
    await engine.admit(sessionId, { prompt });
    await engine.awaitIdle(sessionId);
  }
}

async function get<T>(inspector: Inspector, path: string): Promise<T> {
  const res = await fetch(new URL(path, inspector.url));
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
  return body as T;
}

async function followed(inspector: Inspector): Promise<void> {
  const head = await engine.log.head();
  await waitFor(() => inspector.store.getSnapshot().context.position >= head, { what: 'the inspector to follow the log' });
}

interface Listed {
  sessions: { sessionId: string; seq: number; lastType: string }[];
}

test('written again - the inspector shows the new life of a session deleted and written again, and so does its restart', async () => {
  await turns(['old one', 'old two', 'old three']);
  const index = new SqliteInspectorIndex(engine.db);
  let inspector = await startInspector({ log: engine.log, port: 0, index });
  try {
    await followed(inspector);
    const old = (await get<Listed>(inspector, '/api/sessions')).sessions.find((s) => s.sessionId === S);
    assert.is(old?.seq, await engine.log.lastSeq(S));

    await engine.delete(S);
    await turns(['the new life']);
    await followed(inspector);
    const lastSeq = await engine.log.lastSeq(S);
    assert.ok(lastSeq < old!.seq, 'the new life is shorter than the old');
    const listed = (await get<Listed>(inspector, '/api/sessions')).sessions.find((s) => s.sessionId === S);
    assert.equal([listed?.seq, listed?.lastType], [lastSeq, 'execution.settled'], 'the list shows the new life');
    const conversation = await get<{ entries: { kind: string; text?: string }[] }>(inspector, `/api/sessions/${S}/conversation`);
    const said = JSON.stringify(conversation.entries);
    assert.match(said, 'the new life');
    assert.not.match(said, 'old one', 'nothing of the old life in the conversation');

    await inspector.close();
    inspector = await startInspector({ log: engine.log, port: 0, index: new SqliteInspectorIndex(engine.db) });
    const again = (await get<Listed>(inspector, '/api/sessions')).sessions.find((s) => s.sessionId === S);
    assert.is(again?.seq, lastSeq, 'a restart from the kept index shows the new life');
  } finally {
    await inspector.close();
  }
});

test("written again - a session deleted and not written again leaves the list of an inspector given the file's deletions", async () => {
  const gone = 'ses_deleted_for_good';
  await turns(['soon deleted'], gone);
  const errors: unknown[] = [];
  const inspector = await startInspector({
    log: engine.log,
    port: 0,
    deletions: sqliteDeletionFeed(engine.db, systemClock, (err) => errors.push(err), 20),
  });
  const ids = async () => (await get<Listed>(inspector, '/api/sessions')).sessions.map((s) => s.sessionId);
  try {
    await followed(inspector);
    assert.ok((await ids()).includes(gone));
    await engine.delete(gone);
    await waitFor(async () => !(await ids()).includes(gone), { what: 'the deleted session to leave the list' });
    assert.ok((await ids()).includes(S), 'the other session stays');
    assert.equal(errors, []);
  } finally {
    await inspector.close();
  }
});

test.run();
