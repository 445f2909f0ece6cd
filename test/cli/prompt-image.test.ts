/**
 * `sessiond prompt S "describe this" --image photo.png` with an ordinary 6 MB photo, on the embedded
 * default, real processes: the prompt is admitted (the photo stored beside the log, the event holds
 * its reference), a worker with the OpenAI-compatible runner sends the model the whole photo, and
 * `status` and the worker's log show it as a note. A file whose bytes are not its type is refused.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { pngBytes } from '../support/png.ts';
import { startFakeOpenAI } from '../../src/testing/fake-openai.ts';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

test('cli - prompt --image with a 6 MB photo: admitted, and the model receives the whole photo', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI({ apiKey: 'sk-cli' });
  const db = tmp.file('photo.db');
  const photo = pngBytes(6 * 1024 * 1024, 5);
  writeFileSync(tmp.file('photo.png'), photo);
  server.script({ kind: 'text', text: 'A striped pattern.' });
  // admitted without a wake (in a file no worker runs): status shows it pending, the photo counted beside the log
  const waiting = await runCli(['prompt', 'ses_waiting', 'later', '--image', tmp.file('photo.png'), '--db', tmp.file('waiting.db'), '--no-wake']);
  assert.is(waiting.code, 0, waiting.stderr);
  const status = await runCli(['status', 'ses_waiting', '--db', tmp.file('waiting.db')]);
  assert.match(status.stdout, `and ${photo.length} bytes of images and files beside the log`);
  const worker = startCli(['start', '--db', db, '--runner', 'openai', '--model', 'fake-model', '--base-url', server.url], {
    env: { OPENAI_API_KEY: 'sk-cli' },
  });
  try {
    await worker.waitFor('send it a prompt');
    const admitted = await runCli(['prompt', 'ses_photo', 'describe this', '--image', tmp.file('photo.png'), '--db', db]);
    assert.is(admitted.code, 0, admitted.stderr);
    await worker.waitFor('ses_photo  turn succeeded');
    assert.is(server.requests.length, 1);
    assert.match(worker.output(), `[image image/png, ${photo.length} bytes, stored as blob ${sha(photo).slice(0, 12)}]`);
    const user = server.requests[0]!.chat!.messages.find((m) => m.role === 'user')!;
    const content = user.content as { type: string; text?: string; image_url?: { url: string } }[];
    assert.equal(
      content.map((c) => c.type),
      ['text', 'image_url'],
    );
    const url = content[1]!.image_url!.url;
    assert.ok(url.startsWith('data:image/png;base64,'));
    const sent = Buffer.from(url.slice('data:image/png;base64,'.length), 'base64');
    assert.is(sent.length, photo.length, 'the whole photo');
    assert.is(sha(sent), sha(photo), 'byte for byte');
  } finally {
    worker.child.kill('SIGTERM');
    await worker.exited;
    await server.close();
    tmp.remove();
  }
});

test('cli - prompt --image refuses a file whose bytes are not its type, saying what they are', async () => {
  const tmp = tempDir();
  const db = tmp.file('bad.db');
  const jpeg = pngBytes(300_000);
  jpeg.set([0xff, 0xd8, 0xff, 0xe0], 0);
  writeFileSync(tmp.file('photo.png'), jpeg);
  try {
    const r = await runCli(['prompt', 'ses_bad', 'describe this', '--image', tmp.file('photo.png'), '--db', db]);
    assert.is(r.code, 2);
    assert.match(r.stderr, 'prompt part 1 (image)');
    assert.match(r.stderr, 'declared image/png but the content is bytes starting ff d8 ff e0');
    assert.match(r.stderr, 'which is image/jpeg');
    assert.not.match(r.stderr, '    at ', 'no stack trace');
  } finally {
    tmp.remove();
  }
});

test.run();
