/**
 * Prompts of parts from the command line, as real processes: `sessiond prompt --image --file --json`
 * on a SQLite file and over NATS (a `sessiond start --nats` worker admits them and runs the turn);
 * what the log holds is read back with `sessiond export`. Bad parts exit 2 and say what to fix.
 */
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { as, cliSuite, natsWorker } from './cli-suite.ts';
import { CLIENT, OBSERVER } from '../../src/testing/nats-server.ts';
import { runCli } from '../support/cli.ts';
import { readExport } from '../../src/export/export-file.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';

const s = cliSuite('sessiond prompt with parts');

async function ok(args: string[]): Promise<string> {
  const r = await runCli(args);
  assert.is(r.code, 0, `sessiond ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

async function exported(file: string, where: string[], session: string): Promise<SessionEvent[]> {
  await ok(['export', ...where, '--session', session, '--out', file]);
  const events: SessionEvent[] = [];
  await readExport(file, { onEvents: (page) => void events.push(...page) });
  return events;
}

for (const transport of ['db', 'nats'] as const) {
  s(`cli prompt (${transport}) - --image (a file and a URL), --file and --json make a prompt of parts, the text first; the turn runs it`, async (ctx) => {
    const db = ctx.tmp.file(`parts-${transport}.db`);
    const where = transport === 'db' ? ['--db', db] : ['--nats', ctx.server.url, ...as(CLIENT)];
    const reads = transport === 'db' ? where : ['--nats', ctx.server.url, ...as(OBSERVER)];
    if (transport === 'nats') await natsWorker(ctx, 'parts-worker.db', 1);
    const png = ctx.tmp.file('cat.png');
    writeFileSync(png, Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]));
    const pdf = ctx.tmp.file('invoice.pdf');
    writeFileSync(pdf, '%PDF-1.4 invoice');
    const data = ctx.tmp.file('order.json');
    writeFileSync(data, '{"order": 42, "lines": [{"sku": "A-1"}]}');
    const session = `ses_parts_${transport}`;
    const said = await ok([
      'prompt',
      session,
      'what is in these?',
      '--image',
      png,
      '--image',
      'https://203.0.113.10/dog.jpg',
      '--file',
      pdf,
      '--json',
      `@${data}`,
      '--json',
      '[1, 2]',
      ...(transport === 'db' ? ['--no-wake'] : []),
      ...where,
    ]);
    assert.match(said, /admitted inp_\w+ to ses_parts_\w+ at sequence 1 \(queue, 6 parts\)/);
    if (transport === 'nats')
      await waitFor(async () => JSON.parse(await ok(['status', session, ...reads, '--json'])).state === 'settled', { timeoutMs: 15_000, what: 'the turn' });
    const events = await exported(ctx.tmp.file(`parts-${transport}.export`), reads, session);
    const admitted = events[0] as SessionEvent<'input.admitted'>;
    assert.is(admitted.type, 'input.admitted');
    assert.equal(admitted.payload.prompt, [
      { type: 'text', text: 'what is in these?' },
      { type: 'image', data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]).toString('base64'), mediaType: 'image/png' },
      { type: 'image', url: 'https://203.0.113.10/dog.jpg', mediaType: 'image/jpeg' },
      { type: 'file', data: Buffer.from('%PDF-1.4 invoice').toString('base64'), mediaType: 'application/pdf', filename: 'invoice.pdf' },
      { type: 'json', value: { order: 42, lines: [{ sku: 'A-1' }] } },
      { type: 'json', value: [1, 2] },
    ]);
    if (transport === 'nats') {
      // the echo runner read the prompt's text form: the text, then a note per image and file, then the JSON
      const text = events.filter((e) => e.type === 'text.completed').map((e) => (e as SessionEvent<'text.completed'>).payload.text);
      assert.match(text.join(' '), 'what is in these?');
      return;
    }
    for (const [args, why] of [
      [['--image', ctx.tmp.file('cat.bmp')], 'an image must be one of .png'],
      [['--image', ctx.tmp.file('missing.png')], 'cannot read it (ENOENT)'],
      [['--json', '{nope'], 'give JSON text like'],
      [['--file', 'https://example.com/report'], "cannot tell the file's type from its name"],
    ] as const) {
      const bad = await runCli(['prompt', session, 'x', ...args, ...where]);
      assert.is(bad.code, 2, `${args.join(' ')}: ${bad.stdout}${bad.stderr}`);
      assert.match(bad.stderr, why);
    }
    const none = await runCli(['prompt', session, ...where]);
    assert.is(none.code, 2);
    assert.match(none.stderr, 'Give the prompt text, or parts with --image');
  });
}

s.run();
