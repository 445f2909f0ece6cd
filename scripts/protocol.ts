/**
 * The protocol's definition for other languages, generated from the TypeScript that speaks it:
 *
 *   clients/protocol/schema/events.schema.json    the event catalog (src/events/catalog.ts): frames,
 *                                                 stored batches, live messages, the export header
 *   clients/protocol/schema/commands.schema.json  the command envelopes (src/nats/command-schema.ts)
 *   clients/protocol/vectors/*.json               exact bytes beside their decoded values: stored
 *                                                 batches, live messages, export frames and a file,
 *                                                 frames a reader must refuse, command requests and
 *                                                 the replies a real worker's command answerer gives
 *
 *   npx tsx scripts/protocol.ts            write them
 *   npx tsx scripts/protocol.ts --check    exit 1 when a committed file differs from what this makes
 *
 *   clients/go/payloads_gen.go                    the Go client's payload types and catalog (protocol-go.ts)
 *   clients/go/replies_gen.go                     the Go client's command reply types (protocol-go.ts)
 *   clients/python/src/sessiond_client/generated.py  the Python client's (protocol-python.ts)
 *   clients/python/src/sessiond_client/generated_replies.py  its command reply types (protocol-python-replies.ts)
 *
 * test/protocol/vectors.test.ts checks that the committed files are what this makes (so a change to
 * the catalog, the codec or a reply shows up as a diff to review) and that the TypeScript readers
 * decode every vector. The Go and Python clients (clients/go, clients/python) test against the same
 * files. Everything here is deterministic: fixed ids and times, a manual clock, sequential ids.
 */
import type { EventsOptions } from '../src/sessions/sessions.ts';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Packr } from 'msgpackr';
import { z } from 'zod';
import { ManualClock } from '../src/clock.ts';
import { catalog, eventTypes, type EventType, type Upcaster } from '../src/events/catalog.ts';
import { encodeEvent, pack, unpack } from '../src/events/codec.ts';
import type { SessionEvent } from '../src/events/envelope.ts';
import { CommandRefusedError, ErrorCode, SequenceConflictError, SessiondError, isSessiondError } from '../src/errors.ts';
import { EXPORT_FORMAT, EXPORT_VERSION } from '../src/export/export-file.ts';
import { openEngine } from '../src/engine.ts';
import { sequentialIds } from '../src/ids.ts';
import { commandAnswerer, type CommandServiceStats, type CommandTarget } from '../src/nats/command-service.ts';
import { clientErrorCodes, errorReplySchema, replySchemas, requestSchemas } from '../src/nats/command-schema.ts';
import { encodeJson, encodeRequest } from '../src/nats/command-protocol.ts';
import { decodeLiveEvent, encodeLiveEvent } from '../src/nats/live-bus.ts';
import { decodeBatch, encodeBatch } from '../src/nats/stream.ts';
import { subjects, commandVerbs, type CommandVerb } from '../src/nats/subjects.ts';
import { echoRunner } from '../src/runner/echo.ts';
import { GO_FILE, GO_REPLIES_FILE, renderGo, renderGoReplies } from './protocol-go.ts';
import { PYTHON_FILE, renderPython } from './protocol-python.ts';
import { PYTHON_REPLIES_FILE, pythonReplyRoots, renderPythonReplies } from './protocol-python-replies.ts';
import { readModel, readReplies } from './protocol-types.ts';

const echo = echoRunner();
import { decodeEvent } from '../src/events/codec.ts';

export const PROTOCOL_DIR = fileURLToPath(new URL('../clients/protocol/', import.meta.url));
export const REPO_DIR = fileURLToPath(new URL('../', import.meta.url));

const T0 = 1_796_056_745_917; // a fixed time: beyond 32 bits, so every time is an int64 on the wire
const SES = 'ses_vectors';
const EXE = 'exe_vectors_1';
const MSG = 'msg_vectors_1';
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
/** The JSON form of a decoded msgpack value (maps with string keys, integers as numbers). */
const json = (bytes: Uint8Array): unknown => JSON.parse(JSON.stringify(unpack(bytes)));

// ---------------------------------------------------------------------------------------------- schemas

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>;
  return rest;
}

/** The upcasters of a type, as `x-sessiond-upcasters: { "<from version>": "what it does" }`. */
function upcasts(t: EventType): Record<string, unknown> {
  const entry: { upcasters?: Readonly<Record<number, Upcaster>> } = catalog[t];
  if (!entry.upcasters) return {};
  return { 'x-sessiond-upcasters': Object.fromEntries(Object.entries(entry.upcasters).map(([v, up]) => [v, up.description])) };
}

export function eventsSchema(): Record<string, unknown> {
  const payloads = Object.fromEntries(
    eventTypes.map((t) => [
      t,
      {
        ...jsonSchema(catalog[t].schema),
        'x-sessiond-version': catalog[t].version,
        'x-sessiond-durable': catalog[t].durable,
        'x-sessiond-writer': catalog[t].writer,
        ...upcasts(t),
      },
    ]),
  );
  const byType = (types: readonly EventType[]) =>
    types.map((t) => ({
      if: { properties: { type: { const: t } } },
      then:
        catalog[t].version === 1
          ? { properties: { version: { const: 1 }, payload: { $ref: `#/$defs/payloads/${t}` } } }
          : {
              properties: { version: { type: 'integer', minimum: 1, maximum: catalog[t].version } },
              // an older version's payload is what its upcasters take (x-sessiond-upcasters); the current one is the schema
              if: { properties: { version: { const: catalog[t].version } } },
              then: { properties: { payload: { $ref: `#/$defs/payloads/${t}` } } },
            },
    }));
  const envelope = {
    id: { $ref: '#/$defs/id' },
    type: { enum: eventTypes },
    version: { type: 'integer', minimum: 1 },
    sessionId: { $ref: '#/$defs/id' },
    seq: { type: 'integer', minimum: 1 },
    time: { $ref: '#/$defs/millis' },
    payload: { type: 'object' },
  };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'sessiond/protocol/events.schema.json',
    title: 'sessiond events',
    description:
      "Generated by scripts/protocol.ts from src/events/catalog.ts; do not edit. docs/protocol.md is the prose. A reader brings a payload of an older version up with the type's upcasters (x-sessiond-upcasters: what each does to a version-v payload to make it version v+1) and refuses a newer one (unsupported_event_version).",
    $defs: {
      id: { type: 'string', pattern: '^[A-Za-z0-9_\\-:+=@]{1,128}$' },
      millis: { type: 'integer', minimum: 0, description: 'milliseconds since the Unix epoch; int64 on the wire beyond 32 bits' },
      payloads,
      storedFrame: {
        description: 'One event of a stored batch (a stream message on sessiond.events.<session>).',
        type: 'object',
        required: ['id', 'type', 'version', 'sessionId', 'seq', 'time', 'payload'],
        properties: envelope,
        allOf: byType(eventTypes.filter((t) => catalog[t].durable)),
        not: { properties: { type: { enum: eventTypes.filter((t) => !catalog[t].durable) } } },
      },
      storedBatch: {
        description: 'A stream message body: the events of one append, one session, consecutive seqs.',
        type: 'array',
        minItems: 1,
        items: { $ref: '#/$defs/storedFrame' },
      },
      liveMessage: {
        description: 'One message on sessiond.live.<session>.<type>: seq and position on committed events only.',
        type: 'object',
        required: ['id', 'type', 'version', 'sessionId', 'time', 'payload'],
        properties: { ...envelope, position: { type: 'integer', minimum: 1 } },
        allOf: byType(eventTypes),
      },
      exportFrame: {
        description: 'An event frame of an export file.',
        type: 'object',
        required: ['id', 'type', 'version', 'sessionId', 'seq', 'time', 'payload'],
        properties: { ...envelope, position: { type: 'integer', minimum: 1 }, committedAt: { $ref: '#/$defs/millis' } },
        allOf: byType(eventTypes.filter((t) => catalog[t].durable)),
      },
      exportHeader: {
        description: 'The first frame of an export file.',
        type: 'object',
        required: ['format', 'version', 'created', 'source', 'events'],
        properties: {
          format: { const: EXPORT_FORMAT },
          version: { const: EXPORT_VERSION },
          created: { $ref: '#/$defs/millis' },
          source: { type: 'string' },
          events: { type: 'integer', minimum: -1 },
        },
      },
    },
  };
}

export function commandsSchema(): Record<string, unknown> {
  const verbs = Object.fromEntries(
    commandVerbs.map((v) => [
      v,
      { subject: subjects.command(v), request: jsonSchema(requestSchemas[v]), reply: { oneOf: [jsonSchema(replySchemas[v]), { $ref: '#/$defs/errorReply' }] } },
    ]),
  );
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'sessiond/protocol/commands.schema.json',
    title: 'sessiond commands',
    description:
      'Generated by scripts/protocol.ts from src/nats/command-schema.ts; do not edit. Requests and replies are UTF-8 JSON on sessiond.cmd.<verb> (request/reply). `x-sessiond-verbs` maps each verb to its subject, request and reply; docs/protocol.md ("Commands") is the prose.',
    'x-sessiond-verbs': verbs,
    'x-sessiond-client-error-codes': clientErrorCodes,
    $defs: {
      errorReply: jsonSchema(errorReplySchema),
    },
    oneOf: commandVerbs.map((v) => ({ $ref: `#/x-sessiond-verbs/${v}/request` })),
  };
}

// ---------------------------------------------------------------------------------------------- events

/** One event of every type, with payloads that exercise the encoding: unicode, nesting, floats, negatives, nulls, big integers. */
function sampleEvents(): Record<EventType, { payload: Record<string, unknown> }> {
  const error = { type: 'tool_error', message: 'the lookup timed out after 30 s', name: 'TimeoutError' };
  return {
    'input.admitted': {
      payload: {
        inputId: 'inp_v1',
        prompt: 'Hello — “quotes”, <tags> & emoji 😀, a line\u2028separator and\ttab',
        delivery: 'queue',
        wake: true,
        source: 'user',
        tags: { customer: 'acme', 'env/region': 'eu-west-1' },
      },
    },
    'execution.claimed': { payload: { executionId: EXE, ownerId: 'own_vectors', expiresAt: T0 + 30_000, leaseMs: 30_000, assistantSeq: -1 } },
    'execution.started': { payload: { executionId: EXE } },
    'input.promoted': { payload: { inputId: 'inp_v1', executionId: EXE } },
    'execution.phase': { payload: { executionId: EXE, phase: 'unknown' } },
    'step.started': { payload: { executionId: EXE, messageId: MSG, step: 0 } },
    'text.delta': { payload: { executionId: EXE, messageId: MSG, partId: 'prt_v1', delta: 'Hel' } },
    'text.streamed': { payload: { executionId: EXE, messageId: MSG, partId: 'prt_v1', text: 'Hello back, in 日', restart: true } },
    'reasoning.delta': { payload: { executionId: EXE, messageId: MSG, partId: 'prt_v0', delta: 'think' } },
    'reasoning.completed': { payload: { executionId: EXE, messageId: MSG, partId: 'prt_v0', text: 'thinking about it' } },
    'model.retry_scheduled': {
      payload: { executionId: EXE, messageId: MSG, attempt: 1, delayMs: 250, error: { type: 'model_request_failed', message: 'HTTP 429' } },
    },
    'tool.progressed': { payload: { executionId: EXE, messageId: MSG, callId: 'call_v1', progress: 2.5, total: 10, message: 'page 2 of 10' } },
    'tool.called': {
      payload: {
        executionId: EXE,
        messageId: MSG,
        callId: 'call_v1',
        name: 'lookup',
        input: { q: 'ünïcode', limit: 3, ratio: 0.25, negative: -129, big: 2 ** 40, nothing: null, tags: ['a', 'b'], nested: { deep: [1, [2, { x: true }]] } },
        durable: true,
        idempotencyKey: `${EXE}:call_v1`,
        started: false, // its tool.started follows
      },
    },
    'tool.started': { payload: { executionId: EXE, messageId: MSG, callId: 'call_v1' } },
    'tool.succeeded': {
      payload: { executionId: EXE, messageId: MSG, callId: 'call_v1', output: { rows: [{ id: 1, name: 'Zoë' }], total: 4_294_967_296, score: -1.5 } },
    },
    'tool.failed': { payload: { executionId: EXE, messageId: MSG, callId: 'call_v2', error } },
    'text.completed': { payload: { executionId: EXE, messageId: MSG, partId: 'prt_v1', text: 'Hello back, in 日本語 too.' } },
    'step.ended': {
      payload: { executionId: EXE, messageId: MSG, finish: 'stop', usage: { inputTokens: 1200, outputTokens: 85, cachedInputTokens: 1024, costUsd: 0.00182 } },
    },
    'step.failed': { payload: { executionId: EXE, messageId: MSG, error } },
    'step.recovered': { payload: { executionId: EXE, messageId: MSG, reason: 'the owner lost its lease' } },
    'turn.interrupted': {
      payload: {
        executionId: EXE,
        ownerId: 'own_vectors',
        reason: 'lease_expired',
        messageId: MSG,
        recorded: [{ partId: 'prt_v1', length: 16 }],
        continuationInputId: `inp_cont_${EXE}`,
      },
    },
    'wait.started': {
      payload: { executionId: EXE, kind: 'approval', name: 'call_v3', messageId: MSG, callId: 'call_v3', tool: 'send_mail', input: { to: 'zoë@example.com' } },
    },
    'wait.resolved': {
      payload: { executionId: EXE, kind: 'approval', name: 'call_v3', outcome: 'denied', messageId: MSG, callId: 'call_v3', reason: 'not to that address' },
    },
    'compaction.started': { payload: { executionId: EXE, messageId: MSG, reason: 'context over 80 %' } },
    'compaction.completed': {
      payload: { executionId: EXE, messageId: MSG, summary: 'The user asked for a lookup.', usage: { inputTokens: 900, outputTokens: 40 } },
    },
    'execution.renewed': { payload: { executionId: EXE, expiresAt: T0 + 40_000 } },
    'execution.cancelled': { payload: { executionId: EXE, reason: 'the user pressed stop' } },
    'execution.settled': { payload: { executionId: EXE, outcome: 'failed', error } },
    'input.dropped': { payload: { inputIds: ['inp_v2', 'inp_v3'], reason: 'operator cleanup' } },
    'session.tagged': { payload: { tags: { customer: 'acme — ünïcode', tier: null } } },
    'budget.set': { payload: { tokens: 200_000, costUsd: null, reset: true, actor: 'admin' } },
    'session.forked': {
      payload: {
        from: { sessionId: 'ses_source', seq: 12 },
        transcript: [
          { type: 'summary', messageId: 'msg_sum', executionId: 'exe_source_1', summary: 'They talked about invoices.' },
          { type: 'user', inputId: 'inp_s1', executionId: 'exe_source_2', text: 'send it to bob', delivery: 'queue' },
          {
            type: 'assistant',
            messageId: 'msg_s2',
            executionId: 'exe_source_2',
            status: 'completed',
            parts: [
              { type: 'text', partId: 'prt_s1', text: 'Sending — ünïcode.' },
              {
                type: 'tool',
                callId: 'call_s1',
                name: 'send_invoice',
                input: { to: 'bob' },
                durable: true,
                idempotencyKey: 'exe_source_2:call_s1',
                state: 'succeeded',
                output: { ok: true },
              },
            ],
            finish: 'stop',
            usage: { inputTokens: 100, outputTokens: 20 },
          },
        ],
        tags: { customer: 'acme' },
      },
    },
    'recovery.started': { payload: { executionId: EXE } },
    'recovery.completed': { payload: { executionId: EXE, assistantMessageId: MSG, continuationInputId: `inp_cont_${EXE}`, phase: 'unknown' } },
    'recovery.wake_requested': { payload: { executionId: EXE, attempt: 1 } },
    'recovery.wake_delivered': { payload: { executionId: EXE, byExecutionId: 'exe_vectors_2' } },
    'recovery.wake_failed': { payload: { executionId: EXE, attempt: 5, error: { type: 'wake_exhausted', message: 'gave up' }, parked: true } },
  };
}

function eventOf(type: EventType, seq: number, payload: Record<string, unknown>, sessionId = SES): SessionEvent {
  const parsed = catalog[type].schema.parse(payload); // every sample must be valid
  return {
    id: `evt_v${String(seq).padStart(3, '0')}_${type.replace('.', '_')}`,
    type,
    version: catalog[type].version,
    sessionId,
    seq,
    time: T0 + seq,
    payload: parsed,
  } as SessionEvent;
}

/** The durable samples as a session's log: every durable type once, in batches of a few. */
function sampleLog(): SessionEvent[][] {
  const samples = sampleEvents();
  const durable = eventTypes.filter((t) => catalog[t].durable);
  const batches: SessionEvent[][] = [];
  let seq = 0;
  for (let i = 0; i < durable.length; i += 4) batches.push(durable.slice(i, i + 4).map((t) => eventOf(t, ++seq, samples[t].payload)));
  return batches;
}

interface MsgpackCase {
  name: string;
  kind: 'stored_batch' | 'live' | 'export_frame';
  subject?: string;
  hex: string;
  value: unknown;
  /** The frames as a reader returns them, where that differs from `value` (an older version, upcast). */
  read?: unknown;
  roundtrip: boolean;
}

function msgpackVectors(): MsgpackCase[] {
  const cases: MsgpackCase[] = [];
  const log = sampleLog();
  log.forEach((batch, i) => {
    const bytes = encodeBatch(batch);
    cases.push({
      name: `stored batch ${i + 1} (${batch.map((e) => e.type).join(', ')})`,
      kind: 'stored_batch',
      subject: subjects.events(SES),
      hex: hex(bytes),
      value: json(bytes),
      roundtrip: true,
    });
  });
  const samples = sampleEvents();
  let position = 0;
  for (const e of log.flat()) {
    position++;
    const bytes = encodeLiveEvent({ ...e, position });
    cases.push({ name: `live committed ${e.type}`, kind: 'live', subject: subjects.live(SES, e.type), hex: hex(bytes), value: json(bytes), roundtrip: true });
  }
  for (const t of eventTypes.filter((t) => !catalog[t].durable)) {
    const { seq: _none, ...live } = eventOf(t, 1, samples[t].payload);
    const bytes = encodeLiveEvent(live);
    cases.push({
      name: `live only ${t} (no seq, no position)`,
      kind: 'live',
      subject: subjects.live(SES, t),
      hex: hex(bytes),
      value: json(bytes),
      roundtrip: true,
    });
  }
  const first = log[0]![0]!;
  const frame = encodeEvent({ ...first, position: 1, committedAt: T0 + 5 });
  cases.push({
    name: 'export frame with committedAt (encodeEvent writes no position)',
    kind: 'export_frame',
    hex: hex(frame),
    value: json(frame),
    roundtrip: true,
  });
  // what msgpackr wrote before integers beyond 32 bits were int64: float64 times (readers still meet them)
  const old = new Packr({ useRecords: false, variableMapSize: true });
  const oldBatch = old.pack([
    { id: 'evt_old_1', type: 'execution.claimed', version: 1, sessionId: SES, seq: 1, time: T0, payload: samples['execution.claimed'].payload },
  ]);
  cases.push({
    name: 'stored batch of an older writer: time and expiresAt as integral float64 (read them as integers; never written so now)',
    kind: 'stored_batch',
    subject: subjects.events(SES),
    hex: hex(oldBatch),
    value: json(oldBatch),
    roundtrip: false,
  });
  // an older version of a type: a reader upcasts it, and writes it again at the current version
  const { started: _new, ...calledV1 } = samples['tool.called'].payload;
  const v1 = { id: 'evt_old_2', type: 'tool.called', version: 1, sessionId: SES, seq: 2, time: T0 + 2, payload: calledV1 };
  const v1Batch = pack([v1]);
  const read = decodeBatch(v1Batch, 1, subjects.events(SES));
  cases.push({
    name: 'stored batch of tool.called at version 1 (no `started`): read at version 2 with started false',
    kind: 'stored_batch',
    subject: subjects.events(SES),
    hex: hex(v1Batch),
    value: json(v1Batch),
    read: json(encodeBatch(read)),
    roundtrip: false,
  });
  // a prompt of parts (input.admitted version 2), and a version-1 admission (a string prompt) read at version 2 unchanged
  const parts = eventOf('input.admitted', 3, { ...samples['input.admitted'].payload, inputId: 'inp_parts', prompt: SAMPLE_PARTS });
  const partsBatch = encodeBatch([parts]);
  cases.push({
    name: 'stored batch of input.admitted with a prompt of parts (text, image by URL and by bytes, file, JSON)',
    kind: 'stored_batch',
    subject: subjects.events(SES),
    hex: hex(partsBatch),
    value: json(partsBatch),
    roundtrip: true,
  });
  const admittedV1 = pack([{ ...eventOf('input.admitted', 4, samples['input.admitted'].payload), id: 'evt_old_3', version: 1 }]);
  cases.push({
    name: 'stored batch of input.admitted at version 1 (a string prompt): read at version 2 unchanged',
    kind: 'stored_batch',
    subject: subjects.events(SES),
    hex: hex(admittedV1),
    value: json(admittedV1),
    read: json(encodeBatch(decodeBatch(admittedV1, 4, subjects.events(SES)))),
    roundtrip: false,
  });
  return cases;
}

/** A prompt of every kind of part. */
const SAMPLE_PARTS = [
  { type: 'text', text: 'What is in these? — ünïcode' },
  { type: 'image', url: 'https://example.com/cat.png', mediaType: 'image/png' },
  { type: 'image', data: Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString('base64'), mediaType: 'image/png' },
  { type: 'file', data: Buffer.from('%PDF-1.4').toString('base64'), mediaType: 'application/pdf', filename: 'invoice.pdf' },
  { type: 'file', url: 'https://example.com/report.csv', mediaType: 'text/csv' },
  { type: 'json', value: { order: 42, lines: [{ sku: 'A-1', qty: 2, price: 9.5 }], note: null } },
];

interface InvalidCase {
  name: string;
  kind: 'stored_batch' | 'live' | 'export_frame';
  subject?: string;
  hex: string;
  code: string;
  why: string;
}

function invalidVectors(): InvalidCase[] {
  const samples = sampleEvents();
  const good = eventOf('execution.started', 1, samples['execution.started'].payload);
  const frame = (over: Record<string, unknown>) => ({
    id: good.id,
    type: good.type,
    version: 1,
    sessionId: SES,
    seq: 1,
    time: T0,
    payload: good.payload,
    ...over,
  });
  const stored: [string, Uint8Array][] = [
    ['not msgpack (a reserved byte)', Uint8Array.of(0xc1)],
    ['a map, not an array of events', pack(frame({}))],
    ['an empty array', pack([])],
    ['an unknown event type', pack([frame({ type: 'session.teleported' })])],
    ['a version newer than this protocol (2 of a version-1 type)', pack([frame({ version: 2 })])],
    ['a payload without a required field', pack([frame({ payload: {} })])],
    ['a payload field of the wrong type', pack([frame({ payload: { executionId: 42 } })])],
    ['an event of another session than the subject', pack([frame({ sessionId: 'ses_other' })])],
    ['seq 0', pack([frame({ seq: 0 })])],
    ['a negative time', pack([frame({ time: -1 })])],
    ['an event id with a dot', pack([frame({ id: 'evt.bad' })])],
    ['a live-only type in the log', pack([frame({ type: 'text.delta', payload: samples['text.delta'].payload })])],
  ];
  const cases: InvalidCase[] = [];
  for (const [why, bytes] of stored) {
    const subject = subjects.events(SES);
    cases.push({ name: `stored: ${why}`, kind: 'stored_batch', subject, hex: hex(bytes), code: refusedCode(why, () => decodeBatch(bytes, 7, subject)), why });
  }
  const liveSubject = subjects.live(SES, 'execution.started');
  const live: [string, string, Uint8Array][] = [
    ['a stored batch (an array) on a live subject', liveSubject, encodeBatch([good])],
    ["an event whose type is not the subject's", subjects.live(SES, 'execution.renewed'), encodeLiveEvent(good)],
    ['an event of another session than the subject', subjects.live('ses_other', 'execution.started'), encodeLiveEvent(good)],
    ['a payload without a required field', liveSubject, pack(frame({ payload: {} }))],
  ];
  for (const [why, subject, bytes] of live)
    cases.push({ name: `live: ${why}`, kind: 'live', subject, hex: hex(bytes), code: refusedCode(why, () => decodeLiveEvent(bytes, subject)), why });
  const exportFrame = pack(frame({ committedAt: 'yesterday' }));
  cases.push({
    name: 'export frame: committedAt not an integer',
    kind: 'export_frame',
    hex: hex(exportFrame),
    code: refusedCode('export committedAt', () => decodeEvent(exportFrame)),
    why: 'committedAt must be whole milliseconds',
  });
  return cases;
}

function refusedCode(why: string, decode: () => unknown): string {
  try {
    decode();
  } catch (err) {
    if (isSessiondError(err)) return err.code;
    throw err;
  }
  throw new Error(`an invalid vector decoded (${why}): scripts/protocol.ts has a wrong case`);
}

function exportVector(): { hex: string; frames: unknown[] } {
  const events = sampleLog()
    .flat()
    .slice(0, 3)
    .map((e, i) => ({ ...e, position: i + 1, committedAt: T0 + 100 + i }));
  const framed = (body: Uint8Array) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.byteLength);
    return Buffer.concat([len, body]);
  };
  const header = pack({ format: EXPORT_FORMAT, version: EXPORT_VERSION, created: T0 + 1000, source: 'nats:SESSIOND_EVENTS', events: events.length });
  const bodies = [header, ...events.map(encodeEvent)];
  return { hex: hex(Buffer.concat(bodies.map(framed))), frames: bodies.map(json) };
}

// ---------------------------------------------------------------------------------------------- commands

interface CommandCase {
  name: string;
  verb: string;
  direction: 'request' | 'reply';
  json: unknown;
  text: string;
}

/** Replies a worker's command answerer gives, on an embedded engine with a manual clock and sequential ids. */
async function commandVectors(): Promise<CommandCase[]> {
  const cases: CommandCase[] = [];
  const request = (name: string, verb: CommandVerb, body: unknown) => {
    const text = new TextDecoder().decode(encodeRequest(verb, body as never)); // what the Node client sends
    cases.push({ name, verb, direction: 'request', json: body, text });
    return text;
  };
  const requests: [string, CommandVerb, unknown][] = [
    [
      'admit with every field',
      'admit',
      {
        sessionId: 'ses_cmd',
        prompt: 'Look up <b>“Zoë”</b> & co\u2028\u2029 — 😀 "quoted" \\ back\nslash\u0001',
        id: 'inp_cmd_1',
        delivery: 'queue',
        wake: false,
      },
    ],
    ['admit with only the required fields and an id', 'admit', { sessionId: 'ses_cmd', prompt: 'hi', id: 'inp_cmd_2' }],
    ['admit with tags', 'admit', { sessionId: 'ses_cmd', prompt: 'hi', id: 'inp_cmd_5', tags: { customer: 'acme', 'env/region': 'eu-west-1' } }],
    ['admit a prompt of parts', 'admit', { sessionId: 'ses_cmd', prompt: SAMPLE_PARTS, id: 'inp_cmd_6' }],
    ['fork at a sequence, with tags', 'fork', { sessionId: 'ses_cmd_fork', source: 'ses_cmd', at: 9, tags: { branch: 'alt' } }],
    ['tag: set one, remove another', 'tag', { sessionId: 'ses_cmd', tags: { tier: 'gold', env: null } }],
    ['budget: set tokens, remove the cost limit, reset', 'budget', { sessionId: 'ses_cmd', tokens: 200_000, costUsd: null, reset: true, actor: 'ops' }],
    [
      'list with every filter',
      'list',
      { state: 'settled', waiting: false, tags: { customer: 'acme' }, idPrefix: 'ses_', updatedSince: T0, limit: 20, after: 'MTc2NDU5MDQwMDAwMC5zZXNfMQ' },
    ],
    ['list everything (an empty body)', 'list', {}],
    ['wake', 'wake', { sessionId: 'ses_cmd' }],
    ['cancel with a reason and an execution id', 'cancel', { sessionId: 'ses_cmd', reason: 'stop, please', executionId: 'exe_x' }],
    ['status with pendingFrom', 'status', { sessionId: 'ses_cmd', pendingFrom: 100 }],
    ['events after a seq, a page of at most 50', 'events', { sessionId: 'ses_cmd', afterSeq: 3, limit: 50 }],
    ['events from the first', 'events', { sessionId: 'ses_cmd' }],
    ['drop named inputs with a reason', 'drop', { sessionId: 'ses_cmd', inputIds: ['inp_a', 'inp_b'], reason: 'cleanup' }],
    [
      'resolve: approve a call, with a reason',
      'resolve',
      { sessionId: 'ses_cmd', kind: 'approval', name: 'call_x', outcome: 'approved', reason: 'looks right' },
    ],
    ['resolve: deny a call', 'resolve', { sessionId: 'ses_cmd', kind: 'approval', name: 'call_y', outcome: 'denied' }],
    [
      'resolve: deliver a signal with data',
      'resolve',
      { sessionId: 'ses_cmd', kind: 'signal', name: 'payment', outcome: 'delivered', data: { amount: 12.5, ok: true } },
    ],
    [
      'upload a small blob in one request (the last chunk: with sha256 and size)',
      'upload',
      {
        uploadId: 'upl_vectors_1',
        offset: 0,
        data: 'iVBORw0KGgpzZXNzaW9uZA==',
        mediaType: 'image/png',
        size: 16,
        sha256: 'e8776011f8b0afc2dfe763d990d55473e8b5ba0a5c9078c582ba174dc81d713f',
      },
    ],
    [
      'upload a chunk that is not the last (no sha256)',
      'upload',
      { uploadId: 'upl_vectors_2', offset: 524288, data: 'AAAA', mediaType: 'image/png', size: 2000000 },
    ],
    ['blob: a chunk from an offset', 'blob', { sessionId: 'ses_cmd', sha256: 'e8776011f8b0afc2dfe763d990d55473e8b5ba0a5c9078c582ba174dc81d713f', offset: 8 }],
  ];
  for (const [name, verb, body] of requests) request(name, verb, body);

  const clock = new ManualClock(T0);
  const engine = await openEngine({
    file: ':memory:',
    // an echo, except that a prompt `wait for NAME` first waits for that signal (the resolve replies)
    runner: async (ctx) => {
      const name = /^wait for (\S+)$/.exec(ctx.inputs[0]?.prompt ?? '')?.[1];
      if (name) await ctx.waitFor(name);
      await echo(ctx);
    },
    clock,
    ids: sequentialIds(),
    ownerId: 'own_vectors',
    limits: { maxPendingInputs: 2 },
    // the vectors' prompts name example.com: allowed, so that writing them needs no DNS
    urls: { allow: ['example.com'] },
  });
  // the engine, except that these sessions fail as a log or a worker can (the error replies for them)
  const failures: Record<string, Error> = {
    ses_conflict: new SequenceConflictError('ses_conflict', 3, 5),
    ses_closed: new SessiondError(ErrorCode.LogClosed, 'Event log nats:SESSIOND_EVENTS is closed.'),
    ses_refused: new CommandRefusedError('ses_refused', 'claim', 'lease_live', 'session ses_refused is owned by own_other until 2026-12-01T12:00:30.000Z'),
    ses_bug: new Error('something below broke'),
  };
  const target: CommandTarget = new Proxy(engine, {
    get(inner, prop, receiver) {
      const value = Reflect.get(inner, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      // an event's committedAt is the log's wall clock: left out, so the vectors stay the same run to run
      if (prop === 'events')
        return (sessionId: string, options: EventsOptions) =>
          engine.events(sessionId, options).then((events) => events.map(({ committedAt: _, ...event }) => event));
      return (sessionId: string, ...rest: unknown[]) =>
        failures[sessionId] ? Promise.reject(failures[sessionId]) : (value as (...a: unknown[]) => unknown).call(inner, sessionId, ...rest);
    },
  });
  const stats: CommandServiceStats = { requests: 0, refusedReplies: 0, failures: {} };
  const answerer = commandAnswerer(target, { maxPromptBytes: 256 * 1024, onError: () => undefined, stats, blobs: engine.blobs });
  const answer = async (name: string, verb: string, body: unknown | Uint8Array) => {
    const data = body instanceof Uint8Array ? body : encodeJson(body);
    const text = new TextDecoder().decode(await answerer(`sessiond.cmd.${verb}`, data));
    cases.push({ name, verb, direction: 'reply', json: JSON.parse(text), text });
    return JSON.parse(text) as Record<string, unknown>;
  };
  try {
    await answer('admit: a new input', 'admit', { sessionId: 'ses_cmd', prompt: 'hello', id: 'inp_cmd_1', wake: false });
    await answer('admit: the same input again (created false)', 'admit', { sessionId: 'ses_cmd', prompt: 'hello', id: 'inp_cmd_1', wake: false });
    await answer('status: idle with one input pending', 'status', { sessionId: 'ses_cmd' });
    const started = await answer('wake: started', 'wake', { sessionId: 'ses_cmd' });
    if ((started.result as { status?: string })?.status !== 'started') throw new Error(`wake did not start: ${JSON.stringify(started)}`);
    await engine.awaitIdle('ses_cmd');
    await answer('status: settled after one turn', 'status', { sessionId: 'ses_cmd' });
    await answer('wake: nothing pending', 'wake', { sessionId: 'ses_cmd' });
    await answer('cancel: nothing to cancel', 'cancel', { sessionId: 'ses_cmd', reason: 'late' });
    await answer('admit: a second input without waking', 'admit', { sessionId: 'ses_cmd', prompt: 'later', id: 'inp_cmd_3', wake: false });
    await answer('drop: every pending input', 'drop', { sessionId: 'ses_cmd', reason: 'cleanup' });
    await answer('drop: nothing pending', 'drop', { sessionId: 'ses_cmd' });
    await answer('admit: a turn that waits for a signal', 'admit', { sessionId: 'ses_wait', prompt: 'wait for payment', id: 'inp_wait_1' });
    await engine.awaitIdle('ses_wait');
    await answer('status: waiting for a signal', 'status', { sessionId: 'ses_wait' });
    await answer('error command_refused: no such wait', 'resolve', { sessionId: 'ses_wait', kind: 'approval', name: 'call_none', outcome: 'approved' });
    await answer('resolve: the signal delivered, the turn resumes', 'resolve', {
      sessionId: 'ses_wait',
      kind: 'signal',
      name: 'payment',
      outcome: 'delivered',
      data: { amount: 12.5 },
    });
    await engine.awaitIdle('ses_wait');
    await answer('resolve: the same signal again (resolved false)', 'resolve', {
      sessionId: 'ses_wait',
      kind: 'signal',
      name: 'payment',
      outcome: 'delivered',
    });
    await answer("error bad_request: a timer is the sweep's to resolve", 'resolve', {
      sessionId: 'ses_wait',
      kind: 'timer',
      name: 'sleep-1',
      outcome: 'elapsed',
    });
    await answer('admit: with tags', 'admit', { sessionId: 'ses_tagged', prompt: 'hi', id: 'inp_tag_1', wake: false, tags: { customer: 'acme' } });
    await answer('admit: another session with the tag', 'admit', {
      sessionId: 'ses_tagged_2',
      prompt: 'hi',
      id: 'inp_tag_2',
      wake: false,
      tags: { customer: 'acme' },
    });
    await answer('tag: set one, remove another', 'tag', { sessionId: 'ses_tagged', tags: { tier: 'gold', customer: null } });
    await answer('tag: the same again (changed false)', 'tag', { sessionId: 'ses_tagged', tags: { tier: 'gold' } });
    await answer('error unknown_session: tag of a session with no events', 'tag', { sessionId: 'ses_nobody', tags: { a: 'b' } });
    await answer('budget: set a token budget', 'budget', { sessionId: 'ses_tagged', tokens: 100_000, actor: 'ops' });
    await answer('budget: show it (nothing to change)', 'budget', { sessionId: 'ses_tagged' });
    await answer('error invalid_option: a negative budget', 'budget', { sessionId: 'ses_tagged', tokens: -1 });
    await answer('events: a page of one, more follow', 'events', { sessionId: 'ses_tagged', limit: 1 });
    await answer('events: after the last (an empty page)', 'events', { sessionId: 'ses_tagged', afterSeq: 100 });
    await answer('error unknown_session: events of a session with no events', 'events', { sessionId: 'ses_nobody' });
    const upload = {
      uploadId: 'upl_vectors_1',
      offset: 0,
      data: 'iVBORw0KGgpzZXNzaW9uZA==',
      mediaType: 'image/png',
      size: 16,
      sha256: 'e8776011f8b0afc2dfe763d990d55473e8b5ba0a5c9078c582ba174dc81d713f',
    };
    const uploaded = await answer('upload: a small blob in one request, its reference', 'upload', upload);
    await answer('admit: a prompt with an image by reference', 'admit', {
      sessionId: 'ses_blob',
      prompt: [
        { type: 'text', text: 'what is this?' },
        { type: 'image', blob: uploaded.blob },
      ],
      id: 'inp_blob_1',
      wake: false,
    });
    await answer('blob: the bytes of a blob the session references', 'blob', {
      sessionId: 'ses_blob',
      sha256: 'e8776011f8b0afc2dfe763d990d55473e8b5ba0a5c9078c582ba174dc81d713f',
    });
    await answer('blob: from an offset', 'blob', {
      sessionId: 'ses_blob',
      sha256: 'e8776011f8b0afc2dfe763d990d55473e8b5ba0a5c9078c582ba174dc81d713f',
      offset: 8,
    });
    await answer('error not_found: a session that does not reference the blob', 'blob', {
      sessionId: 'ses_tagged',
      sha256: 'e8776011f8b0afc2dfe763d990d55473e8b5ba0a5c9078c582ba174dc81d713f',
    });
    await answer('error invalid_payload: bytes that do not hash to the sha256 given', 'upload', {
      ...upload,
      uploadId: 'upl_vectors_3',
      sha256: '0000000000000000000000000000000000000000000000000000000000000000',
    });
    await answer('error payload_too_large: a declared size over the limit', 'upload', {
      uploadId: 'upl_vectors_4',
      offset: 0,
      data: 'AAAA',
      mediaType: 'image/png',
      size: 1024 * 1024 * 1024,
    });
    const page = await answer('list: a page of one, with a cursor', 'list', { limit: 1 });
    await answer('list: the next page', 'list', { limit: 1, after: page.next });
    await answer('list: by tag', 'list', { tags: { customer: 'acme' } });
    await answer('list: by id prefix', 'list', { idPrefix: 'ses_tagged_' });
    await answer('error invalid_option: an id prefix with a space', 'list', { idPrefix: 'ses tagged' });
    await answer('error invalid_option: not a cursor', 'list', { after: 'nope' });
    await answer('error bad_request: not JSON', 'status', new TextEncoder().encode('{"sessionId": ses_cmd'));
    await answer('error bad_request: an unknown field', 'wake', { sessionId: 'ses_cmd', force: true });
    await answer('error invalid_id: a session id with a dot', 'status', { sessionId: 'ses.cmd' });
    await answer('fork: the last settled point', 'fork', { sessionId: 'ses_cmd_fork', source: 'ses_cmd', tags: { branch: 'alt' } });
    await answer('fork: the same again (created false)', 'fork', { sessionId: 'ses_cmd_fork', source: 'ses_cmd' });
    await answer('error not_settled: a point inside a turn', 'fork', { sessionId: 'ses_cmd_mid', source: 'ses_cmd', at: 3 });
    await answer('error session_exists: into a session that has events', 'fork', { sessionId: 'ses_cmd', source: 'ses_cmd_fork' });
    await answer('admit: a prompt of parts', 'admit', { sessionId: 'ses_parts', prompt: SAMPLE_PARTS, id: 'inp_parts_1', wake: false });
    await answer('error invalid_option: an image part without url or data', 'admit', { sessionId: 'ses_parts', prompt: [{ type: 'image' }] });
    await answer('error invalid_option: an unknown delivery', 'admit', { sessionId: 'ses_cmd', prompt: 'x', id: 'inp_cmd_4', delivery: 'now' });
    await answer('error unknown_session: status of a session with no events', 'status', { sessionId: 'ses_nobody' });
    await answer('error unknown_command: a verb no worker serves', 'teleport', { sessionId: 'ses_cmd' });
    await answer('error input_conflict: an input id reused with another prompt', 'admit', {
      sessionId: 'ses_cmd',
      prompt: 'bye',
      id: 'inp_cmd_1',
      wake: false,
    });
    await answer('admit: to fill the limit', 'admit', { sessionId: 'ses_full', prompt: 'one', id: 'inp_full_1', wake: false });
    await answer('admit: to fill the limit, again', 'admit', { sessionId: 'ses_full', prompt: 'two', id: 'inp_full_2', wake: false });
    await answer('error limit_exceeded: a third pending input where 2 are allowed', 'admit', {
      sessionId: 'ses_full',
      prompt: 'three',
      id: 'inp_full_3',
      wake: false,
    });
    await answer('error command_refused: the machine refused', 'wake', { sessionId: 'ses_refused' });
    await answer('error sequence_conflict: the log moved', 'status', { sessionId: 'ses_conflict' });
    await answer('error log_closed: the log is unreachable', 'status', { sessionId: 'ses_closed' });
    await answer('error internal: the worker failed unexpectedly', 'status', { sessionId: 'ses_bug' });
  } finally {
    await engine.close();
  }
  const seen = new Set(cases.filter((c) => c.direction === 'reply').map((c) => (c.json as { error?: { code: string } }).error?.code));
  const expected = [
    'bad_request',
    'invalid_id',
    'invalid_option',
    'unknown_session',
    'unknown_command',
    'input_conflict',
    'limit_exceeded',
    'command_refused',
    'sequence_conflict',
    'log_closed',
    'internal',
  ];
  const missing = expected.filter((c) => !seen.has(c));
  if (missing.length > 0) throw new Error(`the command vectors miss error replies ${missing.join(', ')}`);
  return cases;
}

// ---------------------------------------------------------------------------------------------- files

const about = (what: string) =>
  `${what} Generated by scripts/protocol.ts (npx tsx scripts/protocol.ts); do not edit. The format is in clients/protocol/README.md.`;

/** Every file of clients/protocol/ this script makes, by path relative to it. */
export async function protocolFiles(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const put = (path: string, value: unknown) => out.set(path, `${JSON.stringify(value, null, 2)}\n`);
  put('schema/events.schema.json', eventsSchema());
  put('schema/commands.schema.json', commandsSchema());
  put('vectors/msgpack.json', {
    about: about('Exact msgpack bytes beside their decoded values: stored batches, live messages, export frames.'),
    cases: msgpackVectors(),
  });
  put('vectors/invalid.json', { about: about('Frames a reader must refuse, with the code it refuses them with.'), cases: invalidVectors() });
  put('vectors/export.json', { about: about('A whole export file: 4-byte big-endian length, then a msgpack frame; the header first.'), ...exportVector() });
  put('vectors/commands.json', {
    about: about('Command requests (encode json to exactly text) and the replies a worker sends (decode text to json).'),
    cases: await commandVectors(),
  });
  return out;
}

/** The clients' generated type files (scripts/protocol-go.ts, scripts/protocol-python.ts), by path relative to the repository. */
export function clientFiles(): Map<string, string> {
  const model = readModel(eventsSchema());
  return new Map([
    [GO_FILE, renderGo(model)],
    [GO_REPLIES_FILE, renderGoReplies(readReplies(commandsSchema()))],
    [PYTHON_FILE, renderPython(model)],
    [PYTHON_REPLIES_FILE, renderPythonReplies(readReplies(commandsSchema(), pythonReplyRoots))],
  ]);
}

/** Every file this script makes, by path relative to the repository. */
export async function generatedFiles(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const [path, content] of await protocolFiles()) out.set(`clients/protocol/${path}`, content);
  for (const [path, content] of clientFiles()) out.set(path, content);
  return out;
}

export const STALE_HINT = 'Run npx tsx scripts/protocol.ts and review the diff.';

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check');
  const stale: string[] = [];
  for (const [path, content] of await generatedFiles()) {
    const file = join(REPO_DIR, path);
    let have: string | undefined;
    try {
      have = readFileSync(file, 'utf8');
    } catch {
      have = undefined;
    }
    if (have === content) continue;
    if (check) stale.push(path);
    else {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
      process.stdout.write(`wrote ${path}\n`);
    }
  }
  if (check && stale.length > 0) {
    process.stderr.write(`Generated protocol files are stale: ${stale.join(', ')}. ${STALE_HINT}\n`);
    process.exit(1);
  }
  if (!check) process.stdout.write('clients/protocol/ and the generated client types are up to date\n');
}
