/**
 * Fuzzing the readers of untrusted bytes (fast-check, fixed seeds, bounded runs): random bytes and
 * mutated valid frames into the event decoder, the JetStream batch reader, the live-message reader
 * and the export file reader. Each input is either read or refused with a SessiondError whose
 * message says what is wrong; nothing else is ever thrown, nothing crashes.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { writeFileSync } from 'node:fs';
import { decodeEvent, encodeEvent } from '../../src/events/codec.ts';
import { decodeBatch, encodeBatch } from '../../src/nats/stream.ts';
import { decodeLiveEvent, encodeLiveEvent } from '../../src/nats/live-bus.ts';
import { ExportWriter, readExport } from '../../src/export/export-file.ts';
import { SessiondError } from '../../src/errors.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { tempDir } from '../support/tmp.ts';
import { committed, ev } from '../../src/testing/fixtures.ts';

const RUNS = 2_000;
const SEED = 20261130;

const at = (seq: number) => ({ id: `evt_${seq}`, sessionId: 'ses_f', seq, time: 1_796_056_745_916 + seq });
const events: SessionEvent[] = [
  committed(ev('input.admitted', { inputId: 'inp_1', prompt: 'hello', delivery: 'queue', wake: true, source: 'user' }), at(1)),
  committed(ev('execution.claimed', { executionId: 'exe_1', ownerId: 'own_1', expiresAt: 1_796_056_775_918, leaseMs: 30_000, assistantSeq: -1 }), at(2)),
  committed(
    ev('tool.called', {
      executionId: 'exe_1',
      messageId: 'msg_1',
      callId: 'call_1',
      name: 'send',
      input: { to: ['bob', 1, null] },
      durable: true,
      idempotencyKey: 'k',
    }),
    at(3),
  ),
];

/** Valid bytes with some bytes changed, some cut off or some added. */
const mutated = (valid: Uint8Array) =>
  fc
    .tuple(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }), fc.nat({ max: valid.length }), fc.uint8Array({ maxLength: 8 }))
    .map(([flips, keep, extra]) => {
      const out = Uint8Array.from(valid);
      for (const [at, value] of flips) out[at % out.length] = value;
      return Uint8Array.from([...out.subarray(0, keep), ...extra]);
    });
const bytes = (valid: Uint8Array) => fc.oneof(fc.uint8Array({ maxLength: 256 }), mutated(valid));

/** Runs `read`: it may return, or throw a SessiondError with a message; anything else fails the property. */
function readOrRefuse(read: () => unknown): void {
  try {
    read();
  } catch (err) {
    if (!(err instanceof SessiondError)) throw new Error(`threw ${String(err)} (${(err as Error)?.constructor?.name}), not a SessiondError`);
    if (err.message.length < 20) throw new Error(`unhelpful message: ${err.message}`);
  }
}

test(`fuzz - the event decoder reads or refuses ${RUNS} random and mutated frames, with a SessiondError`, () => {
  fc.assert(
    fc.property(bytes(encodeEvent(events[2]!)), (b) => readOrRefuse(() => decodeEvent(b))),
    { numRuns: RUNS, seed: SEED },
  );
});

test(`fuzz - the JetStream batch reader reads or refuses ${RUNS} random and mutated messages, with a SessiondError`, () => {
  fc.assert(
    fc.property(bytes(encodeBatch(events)), (b) => readOrRefuse(() => decodeBatch(b, 7, 'sessiond.events.ses_f'))),
    { numRuns: RUNS, seed: SEED },
  );
});

test(`fuzz - the live-message reader reads or refuses ${RUNS} random and mutated messages, with a SessiondError`, () => {
  const valid = encodeLiveEvent({ ...events[1]!, position: 2 });
  fc.assert(
    fc.property(bytes(valid), (b) => readOrRefuse(() => decodeLiveEvent(b, 'sessiond.live.ses_f.execution.claimed'))),
    { numRuns: RUNS, seed: SEED },
  );
});

test('fuzz - the export reader reads or refuses 300 damaged files, keeping every event before the damage', async () => {
  const tmp = tempDir();
  const file = tmp.file('valid.sdx');
  const writer = await ExportWriter.create(file, { created: 1, source: 'fuzz', events: events.length });
  await writer.write(events);
  await writer.close();
  const { readFileSync } = await import('node:fs');
  const valid = readFileSync(file);
  let n = 0;
  await fc.assert(
    fc.asyncProperty(bytes(valid), async (b) => {
      const damaged = tmp.file(`damaged-${++n}.sdx`);
      writeFileSync(damaged, b);
      const seen: SessionEvent[] = [];
      try {
        await readExport(damaged, {
          onEvents: (batch) => {
            seen.push(...batch);
          },
        });
      } catch (err) {
        if (!(err instanceof SessiondError)) throw new Error(`threw ${String(err)}, not a SessiondError`);
      }
      // what was handed out before the damage is a prefix of the valid events, or events the mutation left well-formed
      for (const e of seen) if (typeof e.seq !== 'number' || typeof e.id !== 'string') throw new Error('a malformed event was handed out');
    }),
    { numRuns: 300, seed: SEED },
  );
  assert.ok(n >= 300);
  tmp.remove();
});

test.run();
