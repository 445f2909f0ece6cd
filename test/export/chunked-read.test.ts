/**
 * readExport reads EXPORT_READ_CHUNK_BYTES at a time and slices frames out of the chunks. Files are
 * laid out so that frames land exactly across chunk boundaries (a length prefix split 2 + 2 bytes, a
 * body split in two, a frame larger than a chunk); the events, the progress and the offset and frame
 * number of every kind of damage must be what a frame-by-frame reader reports.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { EXPORT_READ_CHUNK_BYTES as CHUNK, ExportWriter, readExport } from '../../src/export/export-file.ts';
import { encodeEvent } from '../../src/events/codec.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { tempDir } from '../support/tmp.ts';
import { committed, ev } from '../../src/testing/fixtures.ts';
import { CorruptExportError } from '../../src/errors.ts';

const admitted = (i: number, prompt: string): SessionEvent =>
  committed(ev('input.admitted', { inputId: `inp_${i}`, prompt, delivery: 'queue', wake: true, source: 'user' }), {
    id: `evt_${i}`,
    sessionId: 'ses_x',
    seq: i + 1,
    time: 1000 + i,
  });
const frameBytes = (e: SessionEvent) => 4 + encodeEvent(e).byteLength;

/** The file offsets of the event frames (frame 1 first), read from the length prefixes. */
function frameStarts(file: string): number[] {
  const bytes = readFileSync(file);
  const starts: number[] = [];
  for (let at = 4 + bytes.readUInt32BE(0); at < bytes.length; at += 4 + bytes.readUInt32BE(at)) starts.push(at);
  return starts;
}

/**
 * Writes an export whose event frames start exactly at each of `targets` (in order), filling the
 * space before each with ~100 KB prompts and one prompt sized to land on the target, then `after`.
 */
async function layout(file: string, targets: number[], after: SessionEvent[] = []): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  const probe = await ExportWriter.create(file, { created: 1, source: 'test', events: 100 });
  await probe.close();
  let at = statSync(file).size; // the header frame (its `events` count is one byte for any count < 128)
  const add = (e: SessionEvent) => {
    events.push(e);
    at += frameBytes(e);
  };
  for (const target of targets) {
    while (target - at > 300_000) add(admitted(events.length, 'f'.repeat(100_000)));
    let length = target - at - 200;
    for (let tries = 0; frameBytes(admitted(events.length, 'p'.repeat(length))) !== target - at; tries++) {
      if (tries > 5) throw new Error(`cannot land a frame on ${target}`);
      length += target - at - frameBytes(admitted(events.length, 'p'.repeat(length)));
    }
    add(admitted(events.length, 'p'.repeat(length)));
  }
  for (const e of after) add({ ...e, id: `evt_${events.length}`, seq: events.length + 1 });
  const w = await ExportWriter.create(file, { created: 1, source: 'test', events: events.length });
  await w.write(events);
  await w.close();
  assert.is(statSync(file).size, at, 'the layout adds up');
  return events;
}

async function read(file: string, batchSize = 3) {
  const got: SessionEvent[] = [];
  const progress: number[] = [];
  let error: CorruptExportError | undefined;
  try {
    await readExport(file, {
      onEvents: (b) => {
        got.push(...b);
      },
      onProgress: (bytes) => progress.push(bytes),
      batchSize,
    });
  } catch (err) {
    if (!(err instanceof CorruptExportError)) throw err;
    error = err;
  }
  return { got, progress, error };
}

test('chunked read - frames whose length prefix or body straddles a chunk boundary read back whole', async () => {
  const tmp = tempDir();
  const file = tmp.file('straddle.sdx');
  // frame at CHUNK - 2: its length prefix is split 2 + 2; frame at 2 * CHUNK - 1000: its body is split
  const events = await layout(file, [CHUNK - 2, 2 * CHUNK - 1000], [admitted(0, 'last')]);
  const starts = frameStarts(file);
  assert.ok(starts.includes(CHUNK - 2) && starts.includes(2 * CHUNK - 1000), 'the layout puts frames across both boundaries');
  const { got, progress, error } = await read(file);
  assert.is(error, undefined);
  assert.equal(got, events);
  const size = statSync(file).size;
  const ends = starts.map((_, i) => starts[i + 1] ?? size);
  assert.equal(
    progress,
    [...ends.filter((_, i) => (i + 1) % 3 === 0), size],
    'progress after each batch of 3 is the end of its last frame, then the file size',
  );
  tmp.remove();
});

test('chunked read - a frame larger than a chunk is read whole (and refused by the codec as too large, at its own offset)', async () => {
  const tmp = tempDir();
  const file = tmp.file('big.sdx');
  const events = await layout(file, [CHUNK - 10], [admitted(0, 'x'.repeat(CHUNK + 5000)), admitted(0, 'after')]);
  const big = frameStarts(file).at(-2)!;
  const { got, error } = await read(file);
  assert.instance(error, CorruptExportError);
  assert.equal([error!.offset, error!.frame], [big, events.length - 1]);
  assert.match(error!.message, /over the limit of \d+ bytes/);
  assert.equal(got, events.slice(0, -2), 'every frame before it was handed over');
  tmp.remove();
});

test('chunked read - truncated inside a length prefix that straddles a boundary: offset of the frame, bytes present', async () => {
  const tmp = tempDir();
  const file = tmp.file('cut-length.sdx');
  const events = await layout(file, [CHUNK - 2], [admitted(0, 'lost')]);
  truncateSync(file, CHUNK + 1); // 3 of the 4 length bytes are left
  const { got, error } = await read(file);
  assert.instance(error, CorruptExportError);
  assert.equal([error!.offset, error!.frame], [CHUNK - 2, events.length]);
  assert.match(error!.message, `damaged at byte ${CHUNK - 2} (frame ${events.length}): truncated frame length (3 of 4 bytes)`);
  assert.equal(got, events.slice(0, -1));
  tmp.remove();
});

test('chunked read - truncated in the body of a frame after a boundary: offset past its length prefix, bytes present', async () => {
  const tmp = tempDir();
  const file = tmp.file('cut-body.sdx');
  const events = await layout(file, [CHUNK + 500], [admitted(0, 'a'.repeat(300)), admitted(0, 'b')]);
  const victim = frameStarts(file).at(-2)!;
  const length = readFileSync(file).readUInt32BE(victim);
  truncateSync(file, victim + 4 + 100);
  const { got, progress, error } = await read(file, 1000);
  assert.instance(error, CorruptExportError);
  assert.equal([error!.offset, error!.frame], [victim + 4, events.length - 1]);
  assert.match(error!.message, `truncated frame (100 of ${length} bytes)`);
  assert.equal(got, events.slice(0, -2));
  assert.equal(progress, [victim], 'the batch before the damage is reported up to the damaged frame');
  tmp.remove();
});

test('chunked read - a corrupt frame after a boundary stops the read at that frame, with its offset', async () => {
  const tmp = tempDir();
  const file = tmp.file('corrupt.sdx');
  const events = await layout(file, [CHUNK - 7, 2 * CHUNK + 3], [admitted(0, 'c'), admitted(0, 'd')]);
  const victim = frameStarts(file).at(-2)!;
  assert.ok(victim > 2 * CHUNK);
  const bytes = readFileSync(file);
  bytes.fill(0xc1, victim + 4, victim + 12); // 0xc1 is never valid msgpack
  writeFileSync(file, bytes);
  const { got, error } = await read(file);
  assert.instance(error, CorruptExportError);
  assert.equal([error!.offset, error!.frame], [victim, events.length - 1]);
  assert.match(error!.message, 'invalid msgpack');
  assert.equal(got, events.slice(0, -2));
  tmp.remove();
});

test.run();
