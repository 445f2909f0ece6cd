// Attacks 1 and 2 of the hostile-input round, replayed from outside: natscli (not the Node client)
// as the documented `client` user against a real nats-server and two real `sessiond start` workers.
//
// 1. 4,000 steer inputs with wake: false and 128-character ids into one session: before, every
//    later wake had to promote them all in one 1.2 MB append (over max_payload), so every claim
//    failed forever, a victim's later prompt was accepted and never ran, and the status reply grew
//    past 800 KB. Now admissions past the session's pending limit are refused with what to do, a
//    refusal wakes the session, which runs what was admitted in turns of bounded appends (a full
//    queue drains by itself), the status reply stays small, and the victim's retried prompt gets
//    in and runs without anyone waking or dropping anything.
// 2. Large queued prompts: the bytes waiting in one session are bounded (the rest refused).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LIMITS, MAX_PROMOTIONS_PER_APPEND } from '../../src/input/limits.ts';
import { ADMIN, CLIENT, startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';
import { SessiondClient } from '../../src/client/client.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { killAll, openReader, pollLog, startWorkers, type WorkerProc } from './cluster.ts';

const NATS_CLI = process.env.SESSIOND_NATS_CLI ?? fileURLToPath(new URL('../../.tools/bin/nats', import.meta.url));
if (!existsSync(NATS_CLI)) throw new Error(`natscli not found at ${NATS_CLI}: run node scripts/tools.mjs (npm test builds it)`);

/** `nats request SUBJECT BODY --count N` as the client user; resolves with what it printed on stdout (the replies). */
function natsRequest(server: NatsServer, subject: string, body: string, count = 1): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      NATS_CLI,
      [
        '--server',
        server.url,
        '--user',
        CLIENT.user,
        '--password',
        CLIENT.pass,
        '--inbox-prefix',
        '_INBOX_client',
        '--timeout',
        '10s',
        'request',
        '--raw',
        subject,
        body,
        '--count',
        String(count),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`nats request exited ${code}: ${err.slice(-2000)}`))));
  });
}

const replies = (out: string) =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { ok: boolean; error?: { code: string; message: string } });

interface World {
  server: NatsServer;
  workers: WorkerProc[];
  tmp: ReturnType<typeof tempDir>;
}
const s = suite<World>('hostile sessions: a client bounded by the session limits (natscli, real workers)');
s.before(async (ctx) => {
  ctx.server = await startNatsServer();
  ctx.tmp = tempDir('sessiond-hostile-');
  ctx.workers = [];
  const setup = await runCli(['setup', '--nats', ctx.server.url, '--nats-user', ADMIN.user, '--nats-pass', ADMIN.pass]);
  assert.is(setup.code, 0, setup.stderr);
  await startWorkers(ctx.server, 2, ctx.tmp.file, { leaseMs: 3000, heartbeatMs: 1000, sweepMs: 500 }, ctx.workers);
});
s.after(async (ctx) => {
  await killAll(ctx.workers);
  await ctx.server.dispose();
  ctx.tmp.remove();
});

s('attack 1: 4,000 steer inputs with wake false and 128-character ids cannot stall a session', async ({ server, workers }) => {
  const session = 'ses_flooded';
  const id = (k: number) => `inp_${'a'.repeat(110)}_k${k}_{{Count}}`; // 128 characters at most
  const body = (k: number) => JSON.stringify({ sessionId: session, id: id(k), prompt: 'x', delivery: 'steer', wake: false });
  // four attackers at once, 1,000 requests each
  const outs = await Promise.all([0, 1, 2, 3].map((k) => natsRequest(server, 'sessiond.cmd.admit', body(k), 1000)));
  const all = outs.flatMap(replies);
  assert.is(all.length, 4000, `every request got a reply (${outs.map((o) => o.length).join(', ')} bytes printed; ${outs[0]!.slice(0, 300)})`);
  const admitted = all.filter((r) => r.ok).length;
  const refused = all.filter((r) => r.error?.code === 'limit_exceeded');
  // a refusal wakes the session (a full queue drains by itself), so some later ones may get in
  assert.ok(admitted >= DEFAULT_LIMITS.maxPendingInputs, `admitted up to the limit at least (${admitted})`);
  assert.is(refused.length, 4000 - admitted, 'the rest refused as limit_exceeded');
  assert.match(refused[0]!.error!.message, `over the limit of ${DEFAULT_LIMITS.maxPendingInputs} pending inputs per session`);
  assert.match(refused[0]!.error!.message, `sessiond cancel ${session} --pending`);
  // the status reply stays small however many wait, and the bound holds
  const status = replies(await natsRequest(server, 'sessiond.cmd.status', JSON.stringify({ sessionId: session })))[0] as unknown as {
    pendingCount: number;
    pending: unknown[];
  };
  assert.ok(status.pendingCount <= DEFAULT_LIMITS.maxPendingInputs, `${status.pendingCount} pending`);
  assert.ok(JSON.stringify(status).length < 64 * 1024, `the status reply is ${JSON.stringify(status).length} bytes`);
  // nobody wakes the session: the victim retries until its prompt gets in, and it runs
  const client = await SessiondClient.connect({ connection: { servers: server.url, ...CLIENT } });
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      try {
        assert.ok((await client.admit(session, { id: 'inp_victim', prompt: 'my turn' })).inputId === 'inp_victim');
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== 'limit_exceeded' || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const log = await openReader(server);
    try {
      const events = await pollLog(
        log,
        (all) =>
          all.filter((e) => e.sessionId === session && e.type === 'input.promoted').length === admitted + 1 &&
          all.filter((e) => e.sessionId === session && e.type === 'execution.settled').length > 0,
        'every admitted input and the victim to run',
        { timeoutMs: 120_000 },
      );
      const mine = events.filter((e) => e.sessionId === session);
      const perAppend = new Map<number, number>();
      for (const e of mine) if (e.type === 'input.promoted') perAppend.set(e.position!, (perAppend.get(e.position!) ?? 0) + 1);
      assert.ok(Math.max(...perAppend.values()) <= MAX_PROMOTIONS_PER_APPEND, 'no append promoted more than the bound');
    } finally {
      await log.close();
    }
  } finally {
    await client.close();
  }
  for (const w of workers) assert.not.match(w.output(), 'payload_too_large', `${w.name} never failed a claim for its size`);
});

s('attack 2: large queued prompts are bounded per session; nothing admitted is lost', async ({ server }) => {
  const client = await SessiondClient.connect({ connection: { servers: server.url, ...CLIENT } });
  try {
    const prompt = 'p'.repeat(DEFAULT_LIMITS.maxPromptBytes);
    const fits = DEFAULT_LIMITS.maxPendingBytes / DEFAULT_LIMITS.maxPromptBytes;
    const results = [];
    for (let i = 0; i < fits + 8; i++)
      results.push(
        await client.admit('ses_heavy', { id: `inp_heavy_${i}`, prompt, wake: false }).then(
          () => 'ok',
          (err: Error & { code?: string }) => err.code ?? err.message,
        ),
      );
    assert.ok(
      results.slice(0, fits).every((r) => r === 'ok'),
      results.join(', '),
    );
    assert.is(results[fits], 'limit_exceeded', 'the first past the bytes limit is refused');
    // that refusal woke the session: later ones may get in as it drains, the bound holds
    assert.ok(
      results.every((r) => r === 'ok' || r === 'limit_exceeded'),
      results.join(', '),
    );
    const status = await client.status('ses_heavy');
    assert.ok(status.pendingBytes <= DEFAULT_LIMITS.maxPendingBytes, `${status.pendingBytes} bytes pending`);
  } finally {
    await client.close();
  }
});

s.run();
