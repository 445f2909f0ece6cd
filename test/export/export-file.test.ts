import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { ExportWriter, readExport } from '../../src/export/export-file.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { tempDir } from '../support/tmp.ts';
import { committed, ev } from '../../src/testing/fixtures.ts';
import { CorruptExportError } from '../../src/errors.ts';

const events: SessionEvent[] = Array.from({ length: 5 }, (_, i) =>
  committed(ev('input.admitted', { inputId: `inp_${i}`, prompt: `prompt ${i}`, delivery: 'queue', wake: true, source: 'user' }), {
    id: `evt_${i}`,
    sessionId: 'ses_x',
    seq: i + 1,
    time: 1000 + i,
  }),
);

async function writeFile(file: string) {
  const w = await ExportWriter.create(file, { created: 1, source: 'test', events: events.length });
  await w.write(events.slice(0, 2));
  await w.write(events.slice(2));
  await w.close();
}

async function readAll(file: string) {
  const got: SessionEvent[] = [];
  let error: unknown;
  try {
    await readExport(file, {
      onEvents: (b) => {
        got.push(...b);
      },
      batchSize: 2,
    });
  } catch (err) {
    error = err;
  }
  return { got, error: error as CorruptExportError | undefined };
}

test('export - round-trips events with a versioned header', async () => {
  const tmp = tempDir();
  const file = tmp.file('a.sdx');
  await writeFile(file);
  let header: unknown;
  const got: SessionEvent[] = [];
  const r = await readExport(file, {
    onHeader: (h) => {
      header = h;
    },
    onEvents: (b) => {
      got.push(...b);
    },
  });
  assert.equal(header, { format: 'sessiond-export', version: 1, created: 1, source: 'test', events: 5 });
  assert.is(r.events, 5);
  assert.equal(got, events);
  tmp.remove();
});

test("export - keeps each event's commit time when it has one; frames without one (older files) still read", async () => {
  const tmp = tempDir();
  const file = tmp.file('c.sdx');
  const mixed = [{ ...events[0]!, committedAt: 1_796_000_000_123 }, events[1]!];
  const w = await ExportWriter.create(file, { created: 1, source: 'test', events: mixed.length });
  await w.write(mixed);
  await w.close();
  const { got, error } = await readAll(file);
  assert.is(error, undefined);
  assert.equal(got, mixed);
  assert.not.ok('committedAt' in got[1]!, 'no commit time is invented');
  tmp.remove();
});

test('export - a truncated file is reported with byte offset and frame; everything before it is kept', async () => {
  const tmp = tempDir();
  const file = tmp.file('t.sdx');
  await writeFile(file);
  const bytes = readFileSync(file);
  writeFileSync(file, bytes.subarray(0, bytes.length - 7));
  const { got, error } = await readAll(file);
  assert.instance(error, CorruptExportError);
  assert.match(error!.message, /damaged at byte \d+ \(frame 5\): truncated frame/);
  assert.is(error!.frame, 5);
  assert.equal(
    got.map((e) => e.id),
    ['evt_0', 'evt_1', 'evt_2', 'evt_3'],
    'the four whole frames before the damage were delivered',
  );
  tmp.remove();
});

test('export - a corrupt frame in the middle stops the read at that frame', async () => {
  const tmp = tempDir();
  const file = tmp.file('c.sdx');
  await writeFile(file);
  const bytes = Buffer.from(readFileSync(file));
  // find the third event frame and scribble over its body
  let offset = 0;
  for (let frame = 0; frame < 3; frame++) offset += 4 + bytes.readUInt32BE(offset);
  bytes.fill(0xc1, offset + 4, offset + 12);
  writeFileSync(file, bytes);
  const { got, error } = await readAll(file);
  assert.instance(error, CorruptExportError);
  assert.is(error!.offset, offset);
  assert.is(error!.frame, 3);
  assert.equal(
    got.map((e) => e.id),
    ['evt_0', 'evt_1'],
  );
  tmp.remove();
});

test('export - not an export, or empty, is refused clearly', async () => {
  const tmp = tempDir();
  const file = tmp.file('n.sdx');
  writeFileSync(file, '');
  assert.match(String((await readAll(file)).error), 'the file is empty');
  writeFileSync(file, Buffer.from([0, 0, 0, 4, 0x81, 0xa1, 0x61, 0x01])); // a msgpack map {a: 1}
  assert.match(String((await readAll(file)).error), 'not a sessiond export');
  tmp.remove();
});

test.run();
