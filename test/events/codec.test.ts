import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeEvent, encodeEvent, pack, parseDraft, parsePayload, DEFAULT_MAX_PAYLOAD_BYTES } from '../../src/events/codec.ts';
import { catalog, durableEventTypes, liveOnlyEventTypes } from '../../src/events/catalog.ts';
import { ErrorCode } from '../../src/errors.ts';
import { committed, draft, ev, expectCode } from '../../src/testing/fixtures.ts';
import { spawnSync } from 'node:child_process';
import { Packr } from 'msgpackr';

/** Debian's python3, where python3-msgpack installs (not a pyenv python earlier on the PATH). */
const PYTHON = '/usr/bin/python3';

const claimed = committed(ev('execution.claimed', { executionId: 'exe_1', ownerId: 'own_1', expiresAt: 31_000, leaseMs: 30_000, assistantSeq: -1 }), {
  id: 'evt_1',
  sessionId: 'ses_a',
  seq: 1,
  time: 1000,
});

test('codec - round-trips an event through msgpack as a plain map', () => {
  const bytes = encodeEvent(claimed);
  assert.equal(decodeEvent(bytes), claimed);
  // no msgpackr record extension (0xd4 0x72 ...) or shared structures: a generic decoder sees a map
  assert.is(bytes[0]! & 0xf0, 0x80, 'fixmap header');
});

test('codec - bad bytes are a decode_failed error, never a crash', () => {
  expectCode(() => decodeEvent(new Uint8Array([0x92, 0x01])), ErrorCode.DecodeFailed);
  expectCode(() => decodeEvent(new Uint8Array([0xc1])), ErrorCode.DecodeFailed);
  expectCode(() => decodeEvent(pack([1, 2, 3])), ErrorCode.DecodeFailed);
  expectCode(() => decodeEvent(pack({ id: 'x' })), ErrorCode.DecodeFailed, 'is not a valid sessiond event: it lacks id or sessionId');
});

test('codec - an unknown type says which and what to do', () => {
  const bytes = pack({ ...claimed, type: 'execution.exploded' });
  expectCode(() => decodeEvent(bytes), ErrorCode.UnknownEventType, '"execution.exploded"');
});

test('codec - a version this build cannot read is refused', () => {
  const bytes = pack({ ...claimed, version: 7 });
  expectCode(() => decodeEvent(bytes), ErrorCode.UnsupportedEventVersion, 'version 7');
});

test('codec - a tool.called of version 1 (before `started`) reads as version 2 with started false, and is written again as version 2', () => {
  const v1 = { executionId: 'exe_1', messageId: 'msg_1', callId: 'call_1', name: 'lookup', input: { q: 1 }, durable: true, idempotencyKey: 'k' };
  const stored = { id: 'evt_2', type: 'tool.called', version: 1, sessionId: 'ses_a', seq: 2, time: 1000, payload: v1 };
  const read = decodeEvent(pack(stored));
  assert.equal(read, { ...stored, version: 2, payload: { ...v1, started: false } });
  assert.equal(decodeEvent(encodeEvent(read)), read);
  // version 2 requires it, and a version beyond the current one is refused
  expectCode(() => decodeEvent(pack({ ...stored, version: 2 })), ErrorCode.InvalidPayload, 'started');
  expectCode(() => decodeEvent(pack({ ...stored, version: 3 })), ErrorCode.UnsupportedEventVersion, 'version 3');
});

test('codec - a payload failing its schema names the field', () => {
  const bytes = pack({ ...claimed, payload: { ...claimed.payload, expiresAt: 'soon' } });
  expectCode(() => decodeEvent(bytes), ErrorCode.InvalidPayload, 'expiresAt');
});

test('codec - an invalid session id in a frame is refused', () => {
  const bytes = pack({ ...claimed, sessionId: 'ses.a' });
  expectCode(() => decodeEvent(bytes), ErrorCode.InvalidId);
});

test('codec - payloads over the size limit get a clear error', () => {
  const big = 'x'.repeat(DEFAULT_MAX_PAYLOAD_BYTES + 10);
  const large = draft(ev('text.completed', { executionId: 'e', messageId: 'm', partId: 'p', text: big }), { id: 'evt_2', time: 1 });
  expectCode(() => parseDraft(large), ErrorCode.PayloadTooLarge, `limit of ${DEFAULT_MAX_PAYLOAD_BYTES} bytes`);
  expectCode(() => parseDraft({ ...large, payload: { ...large.payload, text: 'small' } }, 10), ErrorCode.PayloadTooLarge);
});

test('codec - drafts get schema defaults applied and are validated', () => {
  const d = parseDraft(draft(ev('input.admitted', { inputId: 'in_1', prompt: 'hi', delivery: 'queue', wake: true }), { id: 'evt_3', time: 5 }));
  assert.equal(d.payload, { inputId: 'in_1', prompt: 'hi', delivery: 'queue', wake: true, source: 'user' });
  expectCode(
    () => parseDraft(draft(ev('input.admitted', { inputId: 'in_1', prompt: 'hi', delivery: 'later' as never, wake: true }), { id: 'evt_4', time: 5 })),
    ErrorCode.InvalidPayload,
  );
  expectCode(() => parseDraft(draft(ev('execution.started', { executionId: 'e' }), { id: 'evt 5', time: 5 })), ErrorCode.InvalidId);
});

test('catalog - every type has a version and schema; text deltas are live-only', () => {
  for (const [type, entry] of Object.entries(catalog)) {
    assert.is(entry.type, type);
    assert.ok(entry.version >= 1);
    assert.type(entry.schema.safeParse, 'function');
    assert.match(type, /^[a-z]+\.[a-z_]+$/, `${type} is <noun>.<past-tense>`);
  }
  assert.equal(liveOnlyEventTypes, ['text.delta', 'reasoning.delta', 'model.retry_scheduled', 'tool.progressed', 'turn.interrupted']);
  assert.ok(durableEventTypes.includes('execution.claimed'));
  for (const t of [
    'execution.claimed',
    'execution.renewed',
    'execution.phase',
    'execution.cancelled',
    'execution.settled',
    'input.admitted',
    'input.promoted',
    'step.started',
    'step.ended',
    'step.failed',
    'step.recovered',
    'text.delta',
    'tool.called',
    'tool.succeeded',
    'tool.failed',
    'compaction.started',
    'compaction.completed',
    'recovery.wake_requested',
    'recovery.wake_delivered',
    'recovery.wake_failed',
  ]) {
    assert.ok(t in catalog, `${t} is in the catalog`);
  }
});

test('codec - a payload this codec validated is not validated again (same object back); for another type it is checked', () => {
  const v = catalog['step.started'].version;
  const checked = parsePayload('step.started', v, { executionId: 'exe_1', messageId: 'msg_1', step: 0 });
  assert.is(parsePayload('step.started', v, checked), checked, 'a second check returns the payload it already validated');
  assert.is.not(parsePayload('step.started', v, { ...checked }), checked, 'an equal but new object is validated (a new object back)');
  assert.throws(() => parsePayload('tool.succeeded', catalog['tool.succeeded'].version, checked), /invalid payload/, 'valid for one type is not valid for all');
  assert.throws(() => parsePayload('step.started', v + 1, checked), /version/, 'the version is still checked');
});

test("catalog - who writes each type is a flag of the catalog: the machine's runner types and the audit's owner writes derive from it", async () => {
  const { runnerEventTypes, ownerEventTypes } = await import('../../src/events/catalog.ts');
  const { RUNNER_EVENT_TYPES } = await import('../../src/machines/commands.ts');
  const { RUNNER_WRITES } = await import('../../src/audit/audit-log.ts');
  assert.is(RUNNER_EVENT_TYPES, runnerEventTypes);
  assert.is(RUNNER_WRITES, ownerEventTypes);
  for (const t of runnerEventTypes) assert.ok(ownerEventTypes.has(t), `${t}: a runner writes under its owner's claim`);
  for (const t of ['step.recovered', 'recovery.completed', 'execution.claimed', 'execution.cancelled', 'input.admitted', 'text.delta'] as const) {
    assert.not.ok(ownerEventTypes.has(t), `${t} is not the owner's to write`);
  }
  assert.equal([...ownerEventTypes].filter((t) => !runnerEventTypes.has(t)).sort(), ['execution.renewed', 'execution.settled', 'execution.started']);
});

test('codec - integers beyond 32 bits (times, expiries) are msgpack int64, never float64; old float64 times still read', () => {
  const event = { ...claimed, time: 1_796_056_745_917, payload: { ...claimed.payload, expiresAt: 1_796_056_775_917 } };
  const bytes = encodeEvent(event);
  assert.not.ok(Buffer.from(bytes).includes(0xcb), 'no float64 marker (0xcb) anywhere');
  assert.ok(Buffer.from(bytes).includes(Buffer.from([0xd3, 0x00, 0x00, 0x01, 0xa2])), 'time as int64 (0xd3 ...)');
  assert.equal(decodeEvent(bytes), event, 'read back as plain numbers');
  // what earlier versions wrote: the same frame with float64 times
  const old = new (Packr as unknown as new (o: object) => { pack(v: unknown): Buffer })({ useRecords: false, variableMapSize: true }).pack({
    id: event.id,
    type: event.type,
    version: event.version,
    sessionId: event.sessionId,
    seq: event.seq,
    time: event.time,
    payload: event.payload,
  });
  assert.ok(old.includes(0xcb), 'the legacy encoding used float64');
  assert.equal(decodeEvent(old), event, 'a legacy frame decodes to the same event');
});

test('codec - another language reads the wire format with stock msgpack: Python sees integers, not floats', () => {
  const event = { ...claimed, time: 1_796_056_745_917, payload: { ...claimed.payload, expiresAt: 2 ** 40 } };
  const script = [
    'import sys, json, msgpack',
    'frame = msgpack.unpackb(sys.stdin.buffer.read(), raw=False)',
    'print(json.dumps({"time": [type(frame["time"]).__name__, frame["time"]], "expiresAt": [type(frame["payload"]["expiresAt"]).__name__, frame["payload"]["expiresAt"]], "seq": type(frame["seq"]).__name__}))',
  ].join('\n');
  const python = spawnSync(PYTHON, ['-c', script], { input: Buffer.from(encodeEvent(event)) });
  assert.is(python.status, 0, `${PYTHON} with python3-msgpack (apt-get install -y python3-msgpack; .ci/run installs it): ${String(python.stderr)}`);
  assert.equal(JSON.parse(String(python.stdout)), { time: ['int', 1_796_056_745_917], expiresAt: ['int', 2 ** 40], seq: 'int' });
});

test.run();
