/**
 * Export and replay carry blobs: a session with a 2 MB image prompt and a 3 MB tool result, exported
 * with `sessiond export` (events, then the blobs they reference; format version 2) and replayed with
 * `sessiond replay` into a fresh file: the same events, each blob restored and checked against its
 * hash, and `check` finds nothing missing. A blob whose bytes were changed in the file stops the replay.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { openEngine } from '../../src/engine.ts';
import { sha256Hex } from '../../src/blobs/blob-store.ts';
import { blobRefsOf } from '../../src/events/blob-refs.ts';
import { SqliteBlobStore } from '../../src/storage/sqlite/sqlite-blob-store.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { systemClock } from '../../src/clock.ts';
import type { Runner } from '../../src/runner/types.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { pngBytes } from '../support/png.ts';

const bigResult = 'r'.repeat(3 * 1000 * 1000);
const runner: Runner = async (ctx) => {
  const { messageId } = await ctx.startStep();
  await ctx.tool(messageId, { name: 'fetch_report', input: {}, durable: true }, async () => bigResult);
  await ctx.text(messageId, 'done');
  await ctx.endStep(messageId);
};

test('export/replay - a session with an image part and a large tool result round-trips with its blobs, hash-checked', async () => {
  const tmp = tempDir('sessiond-blob-export-');
  try {
    const source = tmp.file('source.db');
    const image = pngBytes(2_000_000, 9);
    const engine = await openEngine({ file: source, runner });
    try {
      await engine.admit('ses_doc', {
        prompt: [
          { type: 'text', text: 'summarise' },
          { type: 'image', data: image.toString('base64'), mediaType: 'image/png' },
        ],
      });
      await engine.awaitIdle('ses_doc');
    } finally {
      await engine.close();
    }
    const events = await new SqliteEventLog(openDatabase(source)).readSession('ses_doc');
    const refs = events.flatMap((e) => blobRefsOf(e));
    assert.equal(refs.map((r) => r.mediaType).sort(), ['application/json', 'image/png'], 'an image part and a tool result stored as blobs');
    assert.ok(refs.some((r) => r.sha256 === sha256Hex(image)));

    const exported = await runCli(['export', '--db', source, '--session', 'ses_doc', '--out', tmp.file('ses_doc.export')]);
    assert.is(exported.code, 0, exported.stderr);
    assert.match(exported.stderr + exported.stdout, 'and the 2 blobs they reference');

    const target = tmp.file('target.db');
    const replayed = await runCli(['replay', tmp.file('ses_doc.export'), '--db', target]);
    assert.is(replayed.code, 0, replayed.stderr);
    assert.match(replayed.stderr + replayed.stdout, 'restored the 2 blobs they reference (each checked against its hash)');
    const db = openDatabase(target);
    try {
      const again = await new SqliteEventLog(db).readSession('ses_doc');
      assert.equal(
        again.map((e) => [e.type, e.payload]),
        events.map((e) => [e.type, e.payload]),
        'the same events',
      );
      const store = new SqliteBlobStore(db, systemClock);
      assert.ok(Buffer.from(await store.get(sha256Hex(image))).equals(image), 'the whole image');
      const result = refs.find((r) => r.mediaType === 'application/json')!;
      assert.equal(JSON.parse(Buffer.from(await store.get(result.sha256)).toString()), bigResult, 'the whole tool result');
    } finally {
      db.close();
    }
    const checked = await runCli(['check', '--db', target, '--safety-only', '--blob-grace-ms', '0']);
    assert.is(checked.code, 0, checked.stdout);
    assert.not.match(checked.stdout, 'MISSING');
    assert.not.match(checked.stdout, 'ORPHANED');

    // a byte of the image changed in the file: the replay stops, saying the hash does not match
    const file = readFileSync(tmp.file('ses_doc.export'));
    const at = file.indexOf(image.subarray(1000, 1064));
    assert.ok(at > 0, 'the image bytes are in the file');
    file[at] = file[at]! ^ 0xff;
    writeFileSync(tmp.file('tampered.export'), file);
    const refused = await runCli(['replay', tmp.file('tampered.export'), '--db', tmp.file('tampered.db')]);
    assert.is.not(refused.code, 0);
    assert.match(refused.stderr, `not ${sha256Hex(image)} as given`);
  } finally {
    tmp.remove();
  }
});

test.run();
