/**
 * `sessiond export --nats` as the client user, who may not read the blob bucket: the blobs the
 * events reference are read through the workers' `blob` command, so the file carries them (and
 * `sessiond replay` restores them); with no worker to ask, the export still writes the events and
 * warns that the file holds the blobs' references only. Real processes and a real nats-server.
 */
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { as, cliSuite, natsWorker } from './cli-suite.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { runCli } from '../support/cli.ts';
import { pngBytes } from '../support/png.ts';
import { readExport } from '../../src/export/export-file.ts';
import { sha256Hex } from '../../src/blobs/blob-store.ts';

const s = cliSuite('sessiond export as the client user carries blobs');

/** The blobs a file holds, reassembled: hash -> bytes. */
async function blobsIn(file: string): Promise<Map<string, Buffer>> {
  const parts = new Map<string, Buffer[]>();
  await readExport(file, {
    onEvents: () => {},
    onBlobChunk: (c) => void parts.set(c.sha256, [...(parts.get(c.sha256) ?? []), Buffer.from(c.data)]),
  });
  return new Map([...parts].map(([sha, list]) => [sha, Buffer.concat(list)]));
}

s('export as the client user reads the blobs through the workers; with no worker it warns and keeps the references', async (ctx) => {
  const worker = await natsWorker(ctx, 'export-worker.db', 0);
  const nats = ['--nats', ctx.server.url, ...as(CLIENT)];
  const image = pngBytes(300_000, 11);
  writeFileSync(ctx.tmp.file('big.png'), image);
  const admitted = await runCli(['prompt', 'ses_exp', 'look', '--image', ctx.tmp.file('big.png'), '--no-wake', ...nats]);
  assert.is(admitted.code, 0, admitted.stderr);

  const out = ctx.tmp.file('client.sdx');
  const exported = await runCli(['export', '--session', 'ses_exp', '--out', out, ...nats]);
  assert.is(exported.code, 0, exported.stderr);
  assert.match(exported.stdout + exported.stderr, "and the 1 blob they reference, read through the workers' blob command");
  assert.not.match(exported.stderr, 'warning');
  const blobs = await blobsIn(out);
  assert.equal([...blobs.keys()], [sha256Hex(image)]);
  assert.ok(blobs.get(sha256Hex(image))!.equals(image), 'the bytes as sent');
  const replayed = await runCli(['replay', out, '--db', ctx.tmp.file('replayed.db')]);
  assert.is(replayed.code, 0, replayed.stderr);
  assert.match(replayed.stdout + replayed.stderr, 'restored the 1 blob they reference');

  // no worker serving commands: neither the bucket nor the command can be used
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0);
  const bare = ctx.tmp.file('bare.sdx');
  const without = await runCli(['export', '--session', 'ses_exp', '--out', bare, ...nats], { timeoutMs: 60_000 });
  assert.is(without.code, 0, without.stderr);
  assert.match(without.stderr, 'warning: 1 of the 1 blob the events reference could not be read');
  assert.match(without.stderr, "the workers' blob command failed");
  assert.equal((await blobsIn(bare)).size, 0, 'references only');
});

s.run();
