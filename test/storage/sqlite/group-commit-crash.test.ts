/**
 * A crash between a group commit's write and its acknowledgements (a real process, SIGKILL while
 * 64 sessions append in groups): every acknowledged append is in the file, every session's events
 * are gapless with no id twice, and a writer that retries what it had sent (same ids, same expected
 * sequence) after the crash gets the committed events back or commits them once, never twice.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../../src/storage/sqlite/sqlite-event-log.ts';
import { waitFor } from '../../../src/testing/wait.ts';
import { drafts } from '../../support/append-writer.ts';
import { tempDir } from '../../support/tmp.ts';

const WRITER = fileURLToPath(new URL('../../support/append-writer.ts', import.meta.url));

test('group commit crash - SIGKILL mid-stream: nothing acknowledged is lost, nothing is written twice, retries are recognised', async () => {
  const tmp = tempDir();
  const file = tmp.file('crash.db');
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, JSON.stringify({ file })], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let buf = '';
  child.stdout!.on('data', (d) => {
    buf += d;
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(() => lines.filter((l) => l.startsWith('ACK ')).length >= 2_000, { timeoutMs: 60_000, what: '2,000 acknowledged appends' });
  child.kill('SIGKILL');
  await exited;

  const acked = lines
    .filter((l) => l.startsWith('ACK '))
    .map((l) => l.split(' '))
    .map(([, s, seq]) => ({ session: s!, seq: Number(seq) }));
  const sent = new Map<string, { seq: number; ids: string[] }>(); // the last append each session sent
  for (const l of lines.filter((x) => x.startsWith('SEND '))) {
    const [, s, seq, ids] = l.split(' ');
    sent.set(s!, { seq: Number(seq), ids: ids!.split(',') });
  }
  const db = openDatabase(file);
  const log = new SqliteEventLog(db);
  try {
    for (const a of acked) assert.ok((await log.lastSeq(a.session)) >= a.seq + 3, `acknowledged append ${a.session}@${a.seq} is in the file`);
    // the writer retries what it had sent last (it cannot know whether the crash took it)
    let recognised = 0;
    for (const [session, last] of sent) {
      const before = await log.lastSeq(session);
      const events = await log.append(session, last.seq, drafts(last.ids));
      assert.equal(
        events.map((e) => e.id),
        last.ids,
      );
      if (before === last.seq + 3) recognised++;
    }
    for (const session of sent.keys()) {
      const events = await log.readSession(session);
      assert.equal(
        events.map((e) => e.seq),
        events.map((_, i) => i + 1),
        `${session}: gapless`,
      );
      assert.is(new Set(events.map((e) => e.id)).size, events.length, `${session}: no event twice`);
    }
    assert.ok(acked.length >= 2_000, `${acked.length} acknowledged appends checked; ${recognised} retries recognised as committed`);
  } finally {
    await log.close();
    db.close();
    tmp.remove();
  }
});

test.run();
