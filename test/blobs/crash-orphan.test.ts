/**
 * A real process killed with SIGKILL between storing a prompt's image as a blob and appending the
 * admission's event, on the embedded log: the blob is left behind with no event referencing it;
 * `sessiond check` reports it orphaned, `sessiond blobs sweep` removes it and nothing else (the
 * image another session's prompt references stays), and check then finds nothing left.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { runCli } from '../support/cli.ts';
import { spawnWorker } from '../support/processes.ts';
import { tempDir } from '../support/tmp.ts';
import { pngBytes } from '../support/png.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

test('blob crash - SIGKILL between the blob and its event leaves one orphan; the sweep removes it and nothing else', async () => {
  const tmp = tempDir('sessiond-blob-crash-');
  const db = tmp.file('crash.db');
  try {
    // a session whose prompt references an image (admitted, not run)
    const kept = pngBytes(300_000, 1);
    writeFileSync(tmp.file('kept.png'), kept);
    const admitted = await runCli(['prompt', 'ses_kept', 'keep this', '--image', tmp.file('kept.png'), '--db', db, '--no-wake']);
    assert.is(admitted.code, 0, admitted.stderr);

    // a worker admits an image into ses_lost and is stopped after the blob is stored, before the event
    const w = spawnWorker({ mode: 'work', file: db, sessions: ['ses_lost'], admitImage: { size: 400_000, seed: 2 }, stopBeforeAppend: 'input.admitted' });
    await w.waitForLine((l) => l === 'STOPPING ses_lost input.admitted');
    w.child.kill('SIGKILL');
    await w.exited;
    const lost = sha(pngBytes(400_000, 2));

    // the log has no event of ses_lost; its image is stored and orphaned
    const before = await runCli(['check', '--db', db, '--safety-only', '--blob-grace-ms', '0']);
    assert.is(before.code, 0, `${before.stdout}${before.stderr}`);
    assert.match(before.stdout, `ORPHANED blob ${lost} (image/png, 400000 bytes)`);
    assert.not.match(before.stdout, `ORPHANED blob ${sha(kept)}`);
    assert.not.match(before.stdout, 'MISSING');
    // within the default grace period (an hour) it is not yet an orphan
    const young = await runCli(['check', '--db', db, '--safety-only']);
    assert.not.match(young.stdout, 'ORPHANED');

    const dry = await runCli(['blobs', 'sweep', '--db', db, '--grace-ms', '0', '--dry-run']);
    assert.match(dry.stdout, `would remove blob ${lost}`);
    const swept = await runCli(['blobs', 'sweep', '--db', db, '--grace-ms', '0']);
    assert.is(swept.code, 0, swept.stderr);
    assert.match(swept.stdout, `removed blob ${lost} (image/png, 400000 bytes`);
    assert.match(swept.stdout, 'checked 2 blobs: 1 referenced; removed 1 unreferenced blob (400000 bytes)');
    assert.not.match(swept.stdout, sha(kept));

    const after = await runCli(['check', '--db', db, '--safety-only', '--blob-grace-ms', '0']);
    assert.is(after.code, 0, after.stdout);
    assert.not.match(after.stdout, 'ORPHANED');
    assert.not.match(after.stdout, 'MISSING');
    const again = await runCli(['blobs', 'sweep', '--db', db, '--grace-ms', '0']);
    assert.match(again.stdout, 'checked 1 blob: 1 referenced; removed 0 unreferenced blobs (0 bytes)');
  } finally {
    tmp.remove();
  }
});

test('blob check - a referenced blob the store lost is reported MISSING, naming the session, and check exits 1', async () => {
  const tmp = tempDir('sessiond-blob-missing-');
  const db = tmp.file('missing.db');
  try {
    const image = pngBytes(200_000, 3);
    writeFileSync(tmp.file('image.png'), image);
    assert.is((await runCli(['prompt', 'ses_img', 'look', '--image', tmp.file('image.png'), '--db', db, '--no-wake'])).code, 0);
    const file = openDatabase(db);
    file.prepare('DELETE FROM blob WHERE sha256 = ?').run(sha(image));
    file.close();
    const checked = await runCli(['check', '--db', db, '--safety-only']);
    assert.is(checked.code, 1, checked.stdout);
    assert.match(checked.stdout, `MISSING blob ${sha(image)} referenced by session ses_img at seq 1`);
    assert.match(checked.stdout, '1 referenced blob is missing');
  } finally {
    tmp.remove();
  }
});

test('blob delete - sessiond delete says what became of the session blobs; within the grace period the sweep gets them', async () => {
  const tmp = tempDir('sessiond-blob-delete-');
  const db = tmp.file('delete.db');
  try {
    const image = pngBytes(150_000, 4);
    writeFileSync(tmp.file('image.png'), image);
    assert.is((await runCli(['prompt', 'ses_img', 'look', '--image', tmp.file('image.png'), '--db', db, '--no-wake'])).code, 0);
    const deleted = await runCli(['delete', 'ses_img', '--yes', '--db', db]);
    assert.is(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, '; 0 blobs removed, 1 blob stored within the grace period left to the blob sweep');
    const swept = await runCli(['blobs', 'sweep', '--db', db, '--grace-ms', '0']);
    assert.match(swept.stdout, `removed blob ${sha(image)}`);
  } finally {
    tmp.remove();
  }
});

test.run();
