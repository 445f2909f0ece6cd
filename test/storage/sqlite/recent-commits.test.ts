/**
 * A subscriber on the handle that committed reads its next batches from the handle's recent commits
 * instead of reading back and decoding them (SqliteEventLog's `recent` run): what it is handed must
 * equal what a read of the file decodes, event for event, and a commit of another handle (another
 * process) in between must be read from the file, with nothing skipped or delivered twice.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import type { SessionEvent } from '../../../src/events/envelope.ts';
import { durableEventTypes } from '../../../src/events/catalog.ts';
import { draft, ev } from '../../../src/testing/fixtures.ts';
import { waitFor } from '../../../src/testing/wait.ts';
import { protoEvent } from '../../support/arbitraries.ts';
import { logFile } from '../../support/log-files.ts';

/** Tool inputs that do not read back as they were handed in (the file's form must be what subscribers get). */
const oddInputs = [
  { missing: undefined, kept: 1 },
  [1, undefined, 3],
  { minusZero: -0 },
  { when: new Date(0) },
  { lone: '\uD800 alone' },
  Object.assign(Object.create(null) as object, { bare: true }),
  new Map([['k', 'v']]),
].map((input, i) => ev('tool.called', { callId: `call_odd${i}`, input }));

test('recent commits - what a subscriber of the committing handle gets equals what the file decodes, for every event type', async () => {
  const file = logFile({ maxPollMs: 10 });
  const a = file.open();
  const got: SessionEvent[] = [];
  const sub = a.log.subscribe({
    after: 0,
    onBatch: (events) => {
      got.push(...events);
    },
  });
  const protos = [...durableEventTypes.map((type) => ev(type)), ...fc.sample(protoEvent, { numRuns: 200, seed: 7 }), ...oddInputs];
  let seq = 0;
  for (let i = 0; i < protos.length; i += 3) {
    const batch = protos.slice(i, i + 3).map((p) => draft(p));
    await a.log.append('ses_r', seq, batch);
    seq += batch.length;
  }
  await waitFor(() => got.length >= seq, { what: `${seq} events delivered` });
  await sub.close();
  const reader = file.open();
  const decoded = await reader.log.readAll();
  assert.is(decoded.length, seq);
  assert.equal(got, decoded, 'handed over from memory = decoded from the file');
  assert.ok(a.log.stats.fromRecent > 0, 'the batches came from the recent commits');
  await file.close();
});

test("recent commits - another handle's commits in between are read from the file: every event once, in position order", async () => {
  const file = logFile({ maxPollMs: 10 });
  const a = file.open();
  const b = file.open();
  const got: SessionEvent[] = [];
  const sub = a.log.subscribe({
    after: 0,
    onBatch: (events) => {
      got.push(...events);
    },
  });
  const seqs = { a: 0, b: 0 };
  for (let round = 0; round < 30; round++) {
    const writer = round % 3 === 2 ? 'b' : 'a';
    const log = writer === 'a' ? a.log : b.log;
    const batch = [draft(ev('input.admitted', { inputId: `inp_${writer}${round}` })), draft(ev('execution.renewed'))];
    await log.append(`ses_${writer}`, seqs[writer], batch);
    seqs[writer] += batch.length;
    if (round % 4 === 0) await waitFor(() => got.length >= seqs.a + seqs.b, { what: 'the subscriber to catch up' });
  }
  const total = seqs.a + seqs.b;
  await waitFor(() => got.length >= total, { what: `${total} events delivered` });
  await sub.close();
  assert.equal(
    got.map((e) => e.position),
    Array.from({ length: total }, (_, i) => i + 1),
    'positions 1..N, none skipped or twice',
  );
  assert.equal(got, await b.log.readAll(), 'and each as the file holds it');
  assert.ok(a.log.stats.fromRecent > 0);
  await file.close();
});

test.run();
