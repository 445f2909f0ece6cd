// Hostile request bodies sent by the documented client user with natscli (a client that is not the
// Node client, so nothing is checked or encoded on the way) to a worker's command service on a real
// nats-server with the repo's nats.conf (max_payload 1 MB). Every one gets a reply, and the reply is
// small: echoed values are cut, bodies too large or too deep are refused before they are parsed,
// and a prompt that cannot be stored as sent (a lone surrogate) is refused, the same way each time.
import { spawn } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/errors.ts';
import { MAX_BODY_DEPTH, MAX_ERROR_REPLY_BYTES, MAX_SMALL_REQUEST_BYTES, CommandFailureCode, admitBodyLimit } from '../../src/nats/command-protocol.ts';
import type { CommandTarget } from '../../src/nats/command-service.ts';
import { subjects } from '../../src/nats/subjects.ts';
import { DEFAULT_MAX_LOG_LINE_CHARS } from '../../src/observability/rate-limited-log.ts';
import { ManualClock } from '../../src/clock.ts';
import { createWorkerMetrics } from '../../src/observability/metrics.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { natsWorld, sessionId, type NatsWorld } from './helpers.ts';

/** A target method a test does not call. */
const unused = async (): Promise<never> => {
  throw new Error('unused');
};

const s = suite<{ world: NatsWorld }>('NATS hostile input, raw from natscli');
s.before(async (ctx) => {
  ctx.world = await natsWorld();
});
s.after.each(async (ctx) => {
  await ctx.world.reset();
});
s.after(async (ctx) => {
  await ctx.world.dispose();
});

const NATS_CLI = process.env.SESSIOND_NATS_CLI ?? new URL('../../.tools/bin/nats', import.meta.url).pathname;

interface RawReply {
  bytes: number;
  text: string;
  body: { ok: boolean; error?: { code: string; message: string; details?: Record<string, unknown> }; receipt?: { created: boolean } };
}

/** One request as the client user, sent by natscli with `body` on stdin (no templates); its raw reply. */
function natsRequest(world: NatsWorld, subject: string, body: string): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      NATS_CLI,
      [
        '--no-context',
        '--server',
        world.server.url,
        '--user',
        CLIENT.user,
        '--password',
        CLIENT.pass,
        '--inbox-prefix',
        '_INBOX_client',
        '--timeout',
        '5s',
        'request',
        subject,
        '--force-stdin',
        '--no-templates',
        '--raw',
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const raw = Buffer.concat(out).toString('utf8').trim();
      if (code !== 0 || raw === '') return reject(new Error(`natscli request on ${subject} got no reply (exit ${code}): ${err.trim().slice(0, 500)}`));
      try {
        resolve({ bytes: Buffer.byteLength(raw), text: raw, body: JSON.parse(raw) as RawReply['body'] });
      } catch {
        reject(new Error(`natscli got a reply that is not JSON: ${raw.slice(0, 300)}`));
      }
    });
    child.stdin.end(body);
  });
}

async function serve(world: NatsWorld, options: { maxPromptBytes?: number } = {}) {
  const { engine } = await world.engine();
  const errors: unknown[] = [];
  const lines: string[] = [];
  await world.serve(engine, { onError: (e) => errors.push(e), onRefusalLine: (line) => lines.push(line), ...options });
  return { engine, errors, lines };
}

const failed = (reply: RawReply, code: string) => {
  assert.is(reply.body.ok, false, reply.text.slice(0, 300));
  assert.is(reply.body.error?.code, code, reply.text.slice(0, 300));
  assert.ok(reply.bytes <= MAX_ERROR_REPLY_BYTES, `the reply is ${reply.bytes} bytes, over ${MAX_ERROR_REPLY_BYTES}`);
  return reply.body.error!;
};

s(
  'hostile input - a 600 KB invalid id gets a short reply (it used to get none: the echo was over max_payload): refused by size for status, cut in the echo for admit',
  async ({ world }) => {
    const { errors, lines } = await serve(world);
    const id = 'x'.repeat(600_000) + '.';
    const status = failed(await natsRequest(world, subjects.command('status'), JSON.stringify({ sessionId: id })), CommandFailureCode.BadRequest);
    assert.match(status.message, `The status request is 600017 bytes, over the limit of ${MAX_SMALL_REQUEST_BYTES} bytes for status requests`);
    const admit = failed(await natsRequest(world, subjects.command('admit'), JSON.stringify({ sessionId: id, prompt: 'p' })), ErrorCode.InvalidId);
    assert.match(admit.message, 'Invalid session id "xxxx');
    assert.match(admit.message, '…(600001 bytes): it is 600001 characters long');
    assert.is(admit.details?.['value'], `${'x'.repeat(200)}…(600001 bytes)`, 'the details carry the id cut too');
    assert.equal(errors, [], 'nothing failed in the worker');
    assert.equal(lines, [], 'requests answered with an error are not logged: the sender has the reply');
  },
);

s('hostile input - a 400 KB invalid id, a 400 KB unknown field name and a 400 KB delivery are echoed cut, in replies of a few KB', async ({ world }) => {
  await serve(world);
  const big = 'y'.repeat(400_000);
  const id = failed(
    await natsRequest(world, subjects.command('admit'), JSON.stringify({ sessionId: sessionId('big'), prompt: 'p', id: `${big}!` })),
    ErrorCode.InvalidId,
  );
  assert.match(id.message, 'Invalid input id "yyyy');
  assert.match(id.message, '…(400001 bytes)');
  const field = failed(
    await natsRequest(world, subjects.command('admit'), JSON.stringify({ sessionId: sessionId('big'), prompt: 'p', [big]: 1, [`${big}2`]: 2 })),
    CommandFailureCode.BadRequest,
  );
  assert.match(field.message, `unknown fields "yyyy`);
  const delivery = failed(
    await natsRequest(world, subjects.command('admit'), JSON.stringify({ sessionId: sessionId('big'), prompt: 'p', delivery: big })),
    ErrorCode.InvalidOption,
  );
  assert.match(delivery.message, 'delivery must be "steer" or "queue"');
});

s(
  `hostile input - an id nested 100,000 objects deep is refused by its depth before parsing (limit ${MAX_BODY_DEPTH}), not answered internal`,
  async ({ world }) => {
    const { errors } = await serve(world);
    const depth = 100_000;
    const nested = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const error = failed(await natsRequest(world, subjects.command('admit'), `{"prompt":"p","sessionId":${nested}}`), CommandFailureCode.BadRequest);
    assert.match(error.message, `The admit request is nested more than ${MAX_BODY_DEPTH} levels deep (at byte ${26 + 5 * (MAX_BODY_DEPTH - 1)})`);
    const small = failed(
      await natsRequest(world, subjects.command('status'), `{"sessionId":${'{"a":'.repeat(1000)}1${'}'.repeat(1000)}}`),
      CommandFailureCode.BadRequest,
    );
    assert.match(small.message, `The status request is nested more than ${MAX_BODY_DEPTH} levels deep`);
    const arrays = failed(
      await natsRequest(world, subjects.command('admit'), `{"sessionId":"ses_deep","prompt":${'['.repeat(depth)}${']'.repeat(depth)}}`),
      CommandFailureCode.BadRequest,
    );
    assert.match(arrays.message, `nested more than ${MAX_BODY_DEPTH} levels deep`);
    // brackets inside strings are text, not depth
    const ok = await natsRequest(
      world,
      subjects.command('admit'),
      JSON.stringify({ sessionId: sessionId('brackets'), prompt: '{['.repeat(1000), wake: false }),
    );
    assert.is(ok.body.ok, true, ok.text);
    assert.equal(errors, [], 'nothing failed in the worker');
  },
);

s("hostile input - a body over its command's size limit is refused before parsing, naming the limit", async ({ world }) => {
  await serve(world, { maxPromptBytes: 1000 });
  const status = failed(
    await natsRequest(world, subjects.command('status'), JSON.stringify({ sessionId: 'ses_pad', pad: 'z'.repeat(MAX_SMALL_REQUEST_BYTES) })),
    CommandFailureCode.BadRequest,
  );
  assert.match(status.message, `over the limit of ${MAX_SMALL_REQUEST_BYTES} bytes for status`);
  const limit = admitBodyLimit(1000);
  const admit = failed(
    await natsRequest(world, subjects.command('admit'), JSON.stringify({ sessionId: 'ses_pad', prompt: 'z'.repeat(limit) })),
    CommandFailureCode.BadRequest,
  );
  assert.match(admit.message, `over the limit of ${limit} bytes for admit`);
});

s(
  'hostile input - an admit whose prompt has a lone surrogate ("\\ud800" from the wire) gets the same invalid_option reply each time, never input_conflict',
  async ({ world }) => {
    const { engine } = await serve(world);
    const id = sessionId('surrogate');
    const body = `{"sessionId":"${id}","id":"inp_lone","prompt":"ab\\ud800cd","wake":false}`;
    const first = await natsRequest(world, subjects.command('admit'), body);
    const again = await natsRequest(world, subjects.command('admit'), body);
    const error = failed(first, ErrorCode.InvalidOption);
    assert.match(error.message, 'prompt contains an unpaired UTF-16 surrogate at index 2: send valid Unicode');
    assert.equal(again.body, first.body, 'an exact resend gets the same answer');
    assert.is(await engine.log.lastSeq(id), 0, 'nothing was admitted');
    const low = failed(await natsRequest(world, subjects.command('admit'), `{"sessionId":"${id}","prompt":"\\udc00"}`), ErrorCode.InvalidOption);
    assert.match(low.message, 'unpaired UTF-16 surrogate at index 0');
    // a proper pair (an emoji written as escapes) is admitted, and an exact resend is the same input
    const pair = `{"sessionId":"${id}","id":"inp_pair","prompt":"\\ud83d\\ude00","wake":false}`;
    const admitted = await natsRequest(world, subjects.command('admit'), pair);
    const resent = await natsRequest(world, subjects.command('admit'), pair);
    assert.is(admitted.body.receipt?.created, true, admitted.text);
    assert.is(resent.body.receipt?.created, false, resent.text);
    // a surrogate in an id is an invalid id like any character outside the id alphabet
    const idError = failed(await natsRequest(world, subjects.command('status'), '{"sessionId":"ses_\\ud800"}'), ErrorCode.InvalidId);
    assert.match(idError.message, 'it contains "\\ud800"');
  },
);

s(
  'hostile input - requests refused unanswered are logged at most once per kind per 10 s (clock injected), then summed up; every refusal is counted in the metrics',
  async ({ world }) => {
    const { engine } = await world.engine();
    const clock = new ManualClock(1_000_000);
    const lines: string[] = [];
    const errors: unknown[] = [];
    const metrics = createWorkerMetrics({ defaultMetrics: false });
    const service = await world.serve(engine, {
      clock,
      onRefusalLine: (line) => lines.push(line),
      onError: (e) => errors.push(e),
      onRefused: metrics.commandRefused,
    });
    const attacker = await world.connect(CLIENT);
    const body = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
    const huge = `${'q'.repeat(400_000)}.`;
    for (let i = 0; i < 20; i++) {
      const reply = await attacker.request(subjects.command('admit'), body({ sessionId: huge, prompt: 'p' }), { timeout: 5000 });
      assert.ok(reply.data.length <= MAX_ERROR_REPLY_BYTES);
    }
    assert.equal(lines, [], 'answered: not logged');
    // unanswered: publishes without a reply subject, and reply subjects that are not a client inbox,
    // one at a time (a burst could find no place open in the queue group, see attacks.test.ts)
    const taken = service.stats.requests;
    for (let i = 0; i < 25; i++) {
      attacker.publish(
        subjects.command(i < 20 ? 'admit' : 'status'),
        body({ sessionId: huge }),
        i < 20 ? {} : { reply: `anything.else.${'e'.repeat(1000)}.${i}` },
      );
      await attacker.flush();
      await waitFor(() => service.stats.requests === taken + i + 1, { timeoutMs: 5000, what: `request ${i + 1} taken` });
    }
    assert.is(lines.length, 2, lines.join('\n'));
    assert.match(lines[0]!, 'A message on sessiond.cmd.admit has no reply subject');
    assert.match(lines[1]!, 'its reply subject "anything.else.eeee');
    assert.ok(
      lines.every((l) => l.length <= DEFAULT_MAX_LOG_LINE_CHARS + 20),
      'every line is cut',
    );
    await clock.advance(10_000);
    assert.is(lines[2], 'refused 23 more requests (invalid_input 19, permission 4) in the last 10 s');
    const text = await metrics.registry.metrics();
    assert.match(text, 'sessiond_commands_refused_total{kind="invalid_input",log="sessiond"} 40');
    assert.match(text, 'sessiond_commands_refused_total{kind="permission",log="sessiond"} 5');
    assert.equal(errors, [], 'nothing went to onError');
  },
);

s("hostile input - a success reply over the server's max_payload is answered with a short internal error, not silence", async ({ world }) => {
  const huge = 'h'.repeat(1_200_000); // a view a misbehaving engine could return: over nats.conf's 1 MB
  const target: CommandTarget = {
    approve: unused,
    deny: unused,
    resolve: unused,
    tag: unused,
    budget: unused,
    list: unused,
    fork: unused,
    events: unused,
    admit: async () => {
      throw new Error('unused');
    },
    wake: async () => {
      throw new Error('unused');
    },
    cancel: async () => {
      throw new Error('unused');
    },
    dropPending: async () => {
      throw new Error('unused');
    },
    status: async (id) => ({ sessionId: id, state: 'idle', seq: 1, pending: [], execution: null, note: huge }) as never,
  };
  const errors: unknown[] = [];
  await world.serve(target, { onError: (e) => errors.push(e) });
  const error = failed(await natsRequest(world, subjects.command('status'), JSON.stringify({ sessionId: 'ses_big_view' })), CommandFailureCode.Internal);
  assert.match(error.message, /The worker failed to run status: its \d+-byte reply is over the server's max_payload of 1048576 bytes/);
  assert.is(errors.length, 1, 'reported to the operator as internal');
});

s.run();
