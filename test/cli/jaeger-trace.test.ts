/**
 * A real collector: Jaeger (the pinned build in .tools/bin, scripts/tools.mjs) receives OTLP from
 * real workers, on one SQLite file and on NATS. A prompt comes through the gateway with a caller's `traceparent`;
 * the worker running it is SIGKILLed mid-turn; another worker recovers it and runs the
 * continuation. Jaeger's query API then holds one trace: the caller's, with the crashed worker's
 * claim under the interrupted turn, and the continuation's turn a child of the caller linked
 * (FOLLOWS_FROM) to the interrupted one.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { ROOT, startCli, type LongRunning } from '../support/cli.ts';
import { SessiondClient } from '../../src/client/client.ts';
import { CLIENT, COMMANDS, WORKER, startNatsServer } from '../../src/testing/nats-server.ts';
import { tempDir } from '../support/tmp.ts';
import { freePort } from '../support/mcp.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { join } from 'node:path';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TOKEN = 'token-traces-0123456789abcdef';

interface JaegerSpan {
  spanID: string;
  operationName: string;
  references: { refType: 'CHILD_OF' | 'FOLLOWS_FROM'; traceID: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
}

const tag = (s: JaegerSpan, key: string) => s.tags.find((t) => t.key === key)?.value;

async function startJaeger(dir: ReturnType<typeof tempDir>): Promise<{ child: ChildProcess; otlp: string; query: string }> {
  const bin = process.env.SESSIOND_JAEGER ?? join(ROOT, '.tools', 'bin', 'jaeger'); // built by scripts/tools.mjs
  assert.ok(existsSync(bin), `Jaeger is not built at ${bin}: run node scripts/tools.mjs (it builds the pinned version with Go)`);
  const [otlp, query, grpc] = [await freePort(), await freePort(), await freePort()];
  const config = dir.file('jaeger.yaml');
  writeFileSync(
    config,
    `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${query}
    grpc:
      endpoint: 127.0.0.1:${grpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlp}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`,
  );
  const child = spawn(bin, ['--config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const url = `http://127.0.0.1:${query}`;
  await waitFor(async () => (await fetch(`${url}/api/services`).catch(() => undefined))?.ok === true, {
    what: `Jaeger's query API (${err.slice(-500)})`,
    timeoutMs: 20_000,
  });
  return { child, otlp: `http://127.0.0.1:${otlp}`, query: url };
}

/** What runs where: the first worker (it serves the gateway, or beside it), the second, the gateway's URL. */
interface Deployment {
  first(env: Record<string, string>, runner: string, tokens: string): LongRunning[];
  second(env: Record<string, string>, runner: string): LongRunning;
  gateway(started: LongRunning[]): Promise<string>;
  /** The interrupted execution's start, as its log holds it. */
  started(): Promise<{ executionId: string; traceparent?: string; parentTraceparent?: string } | undefined>;
  close(): Promise<void>;
}

const LEASE = ['--lease-ms', '1500', '--heartbeat-ms', '400', '--sweep-ms', '200'];

/** The scenario of both tests: through the gateway with a caller's traceparent, SIGKILL mid-turn, continued on another worker. */
async function crashAndContinue(tmp: ReturnType<typeof tempDir>, jaeger: { otlp: string; query: string }, d: Deployment, session: string): Promise<void> {
  const workers: LongRunning[] = [];
  try {
    const tokens = tmp.file('tokens.json');
    writeFileSync(tokens, JSON.stringify({ tokens: [{ name: 'caller', token: TOKEN, sessions: '*', scopes: ['read', 'prompt'] }] }));
    // a turn that hangs mid-answer, unless it is the continuation of one
    const runner = tmp.file('hang.mjs');
    writeFileSync(
      runner,
      `export default async (ctx) => {
  const { messageId } = await ctx.startStep();
  if (!ctx.inputs[0].continues) { await ctx.phase('unknown'); return new Promise(() => {}); }
  await ctx.text(messageId, 'continued');
  await ctx.endStep(messageId, 'stop', { inputTokens: 3, outputTokens: 1 });
};
`,
    );
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlp,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_SERVICE_NAME: 'sessiond-jaeger-test',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    };
    const first = d.first(env, runner, tokens);
    workers.push(...first);
    const gateway = await d.gateway(first);
    const res = await fetch(`${gateway}v1/sessions/${session}/inputs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', traceparent: `00-${TRACE}-${CALLER_SPAN}-01` },
      body: JSON.stringify({ prompt: 'hello' }),
    });
    assert.is(res.status, 200, await res.text());
    const a = first[0]!;
    await a.waitFor(`${session}  claimed`, 20_000);
    await waitFor(async () => (await d.started()) !== undefined, { what: 'the turn to start' });
    const interrupted = (await d.started())!;
    assert.is(interrupted.parentTraceparent, `00-${TRACE}-${CALLER_SPAN}-01`);
    const interruptedSpan = interrupted.traceparent!.split('-')[2]!;
    // its claim span goes out (50 ms batches) before the kill; the turn's own span never ends
    await waitFor(async () => ((await (await fetch(`${jaeger.query}/api/traces/${TRACE}`)).json()) as { data?: unknown[] }).data?.length === 1, {
      what: 'the crashed worker’s claim at Jaeger',
      timeoutMs: 10_000,
    });
    a.child.kill('SIGKILL');
    await a.exited;

    const b = d.second(env, runner);
    workers.push(b);
    await b.waitFor(`${session}  turn succeeded`, 30_000);
    b.child.kill('SIGTERM');
    assert.is(await b.exited, 0, b.output());

    let spans: JaegerSpan[] = [];
    await waitFor(
      async () => {
        const body = (await (await fetch(`${jaeger.query}/api/traces/${TRACE}`)).json()) as { data?: { spans: JaegerSpan[] }[] };
        spans = body.data?.[0]?.spans ?? [];
        return spans.some((s) => s.operationName === 'invoke_agent sessiond' && tag(s, 'gen_ai.conversation.id') === session);
      },
      { what: 'the continuation in the trace', timeoutMs: 10_000 },
    );
    const turn = spans.find((s) => s.operationName === 'invoke_agent sessiond' && tag(s, 'gen_ai.conversation.id') === session)!;
    assert.is(tag(turn, 'sessiond.continues.execution_id'), interrupted.executionId);
    assert.is(tag(turn, 'sessiond.outcome'), 'succeeded');
    const refs = turn.references.map((r) => [r.refType, r.traceID, r.spanID]);
    assert.ok(
      refs.some(([t, tr, sp]) => t === 'CHILD_OF' && tr === TRACE && sp === CALLER_SPAN),
      `a child of the caller: ${JSON.stringify(refs)}`,
    );
    assert.ok(
      refs.some(([t, , sp]) => t === 'FOLLOWS_FROM' && sp === interruptedSpan),
      `linked to the interrupted turn: ${JSON.stringify(refs)}`,
    );
    // the crashed worker's claim, under the interrupted turn, in the same trace
    const claims = spans.filter((s) => s.operationName === 'sessiond.claim');
    assert.ok(
      claims.some((c) => tag(c, 'sessiond.execution.id') === interrupted.executionId && c.references.some((r) => r.spanID === interruptedSpan)),
      `the interrupted turn's claim: ${JSON.stringify(claims.map((c) => c.tags))}`,
    );
    // the continuation's model call, a child of its turn, with its tokens
    const chat = spans.find((s) => s.operationName.startsWith('chat') && s.references.some((r) => r.spanID === turn.spanID))!;
    assert.ok(chat, 'the continuation’s chat span');
    assert.is(tag(chat, 'gen_ai.usage.input_tokens'), 3);
  } finally {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    await d.close();
  }
}

const gatewayUrl = async (w: LongRunning) => {
  await w.waitFor(/gateway: (http:\/\/\S+?)v1\/sessions/);
  return /gateway: (http:\/\/\S+?)v1\/sessions/.exec(w.output())![1]!;
};

test('SQLite: a turn through the gateway, its worker SIGKILLed mid-turn, continued on another worker: one trace in Jaeger', async () => {
  const tmp = tempDir();
  const jaeger = await startJaeger(tmp);
  const db = tmp.file('w.db');
  let log: SqliteEventLog | undefined; // opened once the worker made the file
  try {
    await crashAndContinue(
      tmp,
      jaeger,
      {
        first: (env, runner, tokens) => [startCli(['serve', '--http', '0', '--db', db, '--tokens', tokens, '--runner', runner, ...LEASE], { env })],
        second: (env, runner) => startCli(['start', '--db', db, '--runner', runner, ...LEASE], { env }),
        gateway: (started) => gatewayUrl(started[0]!),
        started: async () => {
          log ??= new SqliteEventLog(openDatabase(db));
          return (await log.readSession('ses_jaeger')).find((e) => e.type === 'execution.started')?.payload as never;
        },
        close: async () => log?.close(),
      },
      'ses_jaeger',
    );
  } finally {
    jaeger.child.kill('SIGTERM');
    tmp.remove();
  }
});

test('NATS: the same through the gateway in front of NATS workers', async () => {
  const tmp = tempDir();
  const jaeger = await startJaeger(tmp);
  const server = await startNatsServer();
  const nats = (user: { user: string; pass: string }) => ['--nats', server.url, '--nats-user', user.user, '--nats-pass', user.pass];
  const worker = (env: Record<string, string>, runner: string, db: string) =>
    startCli(
      [
        'start',
        ...nats(WORKER),
        '--nats-commands-user',
        COMMANDS.user,
        '--nats-commands-pass',
        COMMANDS.pass,
        '--db',
        tmp.file(db),
        '--runner',
        runner,
        ...LEASE,
      ],
      {
        env,
      },
    );
  const client = await SessiondClient.connect({ connection: { servers: server.url, ...CLIENT } });
  try {
    await crashAndContinue(
      tmp,
      jaeger,
      {
        first: (env, runner, tokens) => [worker(env, runner, 'a.db'), startCli(['serve', '--http', '0', ...nats(CLIENT), '--tokens', tokens], { env })],
        second: (env, runner) => worker(env, runner, 'b.db'),
        gateway: async (started) => {
          await started[0]!.waitFor('send it a prompt');
          return gatewayUrl(started[1]!);
        },
        started: async () => (await client.events('ses_jaeger_nats')).find((e) => e.type === 'execution.started')?.payload as never,
        close: async () => {},
      },
      'ses_jaeger_nats',
    );
  } finally {
    await client.close();
    await server.dispose();
    jaeger.child.kill('SIGTERM');
    tmp.remove();
  }
});

test.run();
