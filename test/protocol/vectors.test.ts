// The protocol's definition for other languages (clients/protocol/: JSON Schema and test vectors,
// made by scripts/protocol.ts): the committed files are exactly what the TypeScript makes today, and
// the TypeScript readers decode every vector as the files say. The Go and Python clients test
// against the same files (clients/go, clients/python).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROTOCOL_DIR, protocolFiles } from '../../scripts/protocol.ts';
import { decodeEvent, unpack } from '../../src/events/codec.ts';
import { isSessiondError } from '../../src/errors.ts';
import { errorReplySchema, replySchemas, requestSchemas } from '../../src/nats/command-schema.ts';
import { decodeJson, encodeRequest } from '../../src/nats/command-protocol.ts';
import { decodeLiveEvent } from '../../src/nats/live-bus.ts';
import { decodeBatch, encodeBatch } from '../../src/nats/stream.ts';
import { catalog, eventTypes } from '../../src/events/catalog.ts';
import { commandVerbs, type CommandVerb } from '../../src/nats/subjects.ts';

const read = (path: string) => JSON.parse(readFileSync(join(PROTOCOL_DIR, path), 'utf8'));
const bytes = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));
const plain = (value: unknown) => JSON.parse(JSON.stringify(value));

test("clients/protocol/ is what scripts/protocol.ts makes from the catalog, the codec and a worker's answers (run it and review the diff when this fails)", async () => {
  for (const [path, content] of await protocolFiles()) {
    const committed = readFileSync(join(PROTOCOL_DIR, path), 'utf8');
    assert.ok(committed === content, `clients/protocol/${path} is stale: run npx tsx scripts/protocol.ts and review the diff`);
  }
});

test('msgpack vectors: the TypeScript readers decode each to its value; every durable and live-only type is covered', () => {
  const { cases } = read('vectors/msgpack.json') as { cases: { name: string; kind: string; subject?: string; hex: string; value: unknown; read?: unknown }[] };
  const types = new Set<string>();
  for (const c of cases) {
    const data = bytes(c.hex);
    assert.equal(plain(unpack(data)), c.value, `${c.name}: the bytes unpack to the value`);
    if (c.kind === 'stored_batch') {
      const events = decodeBatch(data, 9, c.subject!);
      const frames = c.value as { seq: number; time: number; id: string; type: string }[];
      assert.equal(
        events.map((e) => [e.id, e.type, e.seq, e.time, e.position]),
        frames.map((f) => [f.id, f.type, f.seq, Math.trunc(f.time), 9]),
        c.name,
      );
      assert.equal(plain(unpack(encodeBatch(events))), c.read ?? c.value, `${c.name}: read, then written again, as the file says`);
      for (const e of events) types.add(e.type);
    } else if (c.kind === 'live') {
      const e = decodeLiveEvent(data, c.subject!);
      assert.is(e.id, (c.value as { id: string }).id, c.name);
      types.add(e.type);
    } else {
      const e = decodeEvent(data);
      assert.is(e.committedAt, (c.value as { committedAt: number }).committedAt, c.name);
    }
  }
  assert.equal([...types].sort(), [...eventTypes].sort(), 'every type of the catalog has a vector');
  const old = cases.find((c) => c.name.startsWith('stored batch of an older writer'))!;
  assert.ok(old.hex.includes('cb'), "the older writer's frame holds float64s");
  const [claimed] = decodeBatch(bytes(old.hex), 1, old.subject!);
  assert.ok(Number.isInteger(claimed!.time) && Number.isInteger((claimed!.payload as { expiresAt: number }).expiresAt), 'and they read as integers');
  // every type above version 1 has a stored vector of each older version, read at the current one
  for (const t of eventTypes.filter((t) => catalog[t].version > 1)) {
    for (let v = 1; v < catalog[t].version; v++) {
      const upcast = cases.find((c) => c.read && (c.value as { type: string; version: number }[]).some((f) => f.type === t && f.version === v));
      assert.ok(upcast, `a vector of ${t} at version ${v}`);
      assert.ok((upcast!.read as { type: string; version: number }[]).every((f) => f.type !== t || f.version === catalog[t].version));
    }
  }
});

test('invalid vectors: each is refused by the TypeScript reader of its kind with the code the file names', () => {
  const { cases } = read('vectors/invalid.json') as { cases: { name: string; kind: string; subject?: string; hex: string; code: string }[] };
  assert.ok(cases.length >= 15);
  for (const c of cases) {
    const data = bytes(c.hex);
    const decode =
      c.kind === 'stored_batch'
        ? () => decodeBatch(data, 1, c.subject!)
        : c.kind === 'live'
          ? () => decodeLiveEvent(data, c.subject!)
          : () => decodeEvent(data);
    let code: string | undefined;
    try {
      decode();
    } catch (err) {
      code = isSessiondError(err) ? err.code : `not a SessiondError: ${String(err)}`;
    }
    assert.is(code, c.code, c.name);
  }
});

test('export vector: length-prefixed frames, the header first, then events the export reader accepts', () => {
  const { hex, frames } = read('vectors/export.json') as { hex: string; frames: unknown[] };
  const data = Buffer.from(hex, 'hex');
  const bodies: Uint8Array[] = [];
  for (let at = 0; at < data.length; ) {
    const len = data.readUInt32BE(at);
    bodies.push(new Uint8Array(data.subarray(at + 4, at + 4 + len)));
    at += 4 + len;
  }
  assert.equal(
    bodies.map((b) => plain(unpack(b))),
    frames,
  );
  assert.is((frames[0] as { format: string }).format, 'sessiond-export');
  assert.is((frames[0] as { events: number }).events, bodies.length - 1);
  for (const b of bodies.slice(1)) assert.ok(decodeEvent(b).committedAt! > 0);
});

test('command vectors: requests are JSON.stringify of their json and valid requests; replies are valid against the reply schemas; every code a worker answers is there', () => {
  const { cases } = read('vectors/commands.json') as { cases: { name: string; verb: string; direction: string; json: unknown; text: string }[] };
  const codes = new Set<string>();
  for (const c of cases) {
    assert.equal(decodeJson(new TextEncoder().encode(c.text)), c.json, `${c.name}: text decodes to json`);
    if (c.direction === 'request') {
      assert.is(JSON.stringify(c.json), c.text, `${c.name}: the exact text a client sends`);
      // the Node client sends the same bytes whatever order it built the body in
      const reversed = Object.fromEntries(Object.entries(c.json as Record<string, unknown>).reverse());
      assert.is(new TextDecoder().decode(encodeRequest(c.verb as CommandVerb, reversed as never)), c.text, `${c.name}: encodeRequest`);
      assert.ok(requestSchemas[c.verb as CommandVerb].safeParse(c.json).success, `${c.name}: a valid ${c.verb} request`);
      continue;
    }
    const reply = c.json as { ok: boolean; error?: { code: string } };
    if (reply.ok) {
      const parsed = replySchemas[c.verb as CommandVerb].safeParse(reply);
      assert.ok(parsed.success, `${c.name}: ${parsed.success ? '' : parsed.error.message}`);
    } else {
      assert.ok(errorReplySchema.safeParse(reply).success, `${c.name}: an error reply`);
      codes.add(reply.error!.code);
    }
  }
  for (const v of commandVerbs)
    assert.ok(
      cases.some((c) => c.direction === 'request' && c.verb === v),
      `a request of ${v}`,
    );
  assert.equal([...codes].sort(), [
    'bad_request',
    'command_refused',
    'input_conflict',
    'internal',
    'invalid_id',
    'invalid_option',
    'invalid_payload',
    'limit_exceeded',
    'log_closed',
    'not_found',
    'not_settled',
    'payload_too_large',
    'sequence_conflict',
    'session_exists',
    'unknown_command',
    'unknown_session',
  ]);
});

test('events schema: one payload schema per catalog type, with its version and durability', () => {
  const schema = read('schema/events.schema.json') as { $defs: { payloads: Record<string, Record<string, unknown>> } };
  assert.equal(Object.keys(schema.$defs.payloads).sort(), [...eventTypes].sort());
  for (const t of eventTypes) {
    assert.is(schema.$defs.payloads[t]!['x-sessiond-version'], catalog[t].version, t);
    assert.is(schema.$defs.payloads[t]!['x-sessiond-durable'], catalog[t].durable, t);
  }
});

test.run();
