/**
 * `sessiond start`: runs a worker until SIGINT, SIGTERM or SIGHUP, on a SQLite log or, with `--nats`,
 * on the JetStream stream (the file holds the projection; live events, and with a commands user the
 * `sessiond.cmd.*` service: docs/nats.md#the-command-service). Stopping closes in order: the command
 * service, the worker (turns handed back), the engine, the log, the connections.
 */
import { stopTracing } from '../../observability/otel-sdk.ts';
import type { Command } from 'commander';
import { startSessiond } from '../../host.ts';
import { DEFAULT_SWEEP_INTERVAL_MS } from '../../recovery/sweeper.ts';
import { loadRunner } from '../../runner/load.ts';
import { DEFAULT_OPENAI_BASE_URL, openaiRunner } from '../../runner/model/openai.ts';
import { DEFAULT_MAX_PARALLEL_TOOLS, DEFAULT_MAX_STEPS } from '../../runner/model/model-runner.ts';
import { SEND_REASONING, type SendReasoning } from '../../runner/model/messages.ts';
import { loadTools } from '../../runner/model/tools.ts';
import { loadMcpConfig } from '../../runner/mcp/config.ts';
import { loadPrices } from '../../budget/prices.ts';
import { mcpServers, type McpServers } from '../../runner/mcp/servers.ts';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS } from '../../execution/session-execution.ts';
import { messageOf, UsageError } from '../../errors.ts';
import { DEFAULT_RECONNECT_WAIT_MS } from '../../nats/connection.ts';
import { LIVE_PREFIX } from '../../nats/subjects.ts';
import type { CliContext } from '../context.ts';
import type { TokenTable } from '../../gateway/tokens.ts';
import type { JwtVerifier } from '../../gateway/jwt.ts';
import { duration, nonNegativeInt, port, positiveInt, synchronousOption } from '../options.ts';
import {
  addNatsCommandOptions,
  addNatsOptions,
  describeNats,
  natsCommandConnection,
  natsConnectionOptions,
  type NatsCommandFlags,
  type NatsFlags,
} from '../nats-options.ts';
import { INSPECT_OPTION, inspectPort } from '../../inspector/cli.ts';
import type { StdoutWatch } from '../stdout-closed.ts';
import { LOG_FORMAT_OPTION, logFormat, parseLogFormat, workerLog, type LogFormat, type WorkerLog } from '../worker-log.ts';
import { DEFAULT_LIMITS } from '../../input/limits.ts';
import { DEFAULT_BLOB_GRACE_MS, DEFAULT_BLOB_SWEEP_INTERVAL_MS } from '../../blobs/sweep.ts';
import { addGatewayOptions, gatewayJwt, gatewayLine, gatewayOptions, gatewayTokens, tenantLimitFlags, type GatewayFlags } from '../gateway-options.ts';
import { startGateway, type Gateway } from '../../gateway/server.ts';
import { engineLive } from '../../gateway/live.ts';
import { describeCallLimits, loadCallLimits, maxModelCalls, mergeCallLimits, type CallLimits } from '../../capacity/limits-file.ts';

/** How long `sessiond start` waits for the worker to close after a stop before it exits 1 anyway. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000;

export interface StartOptions extends NatsFlags, NatsCommandFlags, GatewayFlags {
  db: string;
  runner: string;
  synchronous: 'NORMAL' | 'FULL';
  leaseMs: number;
  heartbeatMs: number;
  turnTimeout?: number;
  maxRunningTurns?: number;
  maxModelCalls?: number;
  limits?: string;
  echoDelayMs: number;
  sweepMs: number;
  blobGraceMs?: number;
  blobSweepMs?: number;
  shutdownTimeoutMs: number;
  inspect?: number;
  /** `--no-inspector-index`: false. */
  inspectorIndex: boolean;
  metrics?: number;
  logFormat?: LogFormat;
  model?: string;
  baseUrl?: string;
  tools?: string;
  mcp?: string;
  prices?: string;
  system?: string;
  maxSteps?: number;
  maxParallelTools?: number;
  sendReasoning?: string;
  contextWindow?: number;
  maxPendingInputs?: number;
  maxPendingBytes?: number;
  maxPromptBytes?: number;
  maxHeldBytes?: number;
  maxBlobBytes?: number;
  maxPendingBlobBytes?: number;
  maxBlobMemoryBytes?: number;
  allowUrlHost?: string[];
}

/** `--allow-url-host HOST|CIDR`: a host a prompt's image or file URL may name though it is not public https (repeatable). */
export const ALLOW_URL_HOST_OPTION = [
  '--allow-url-host <host|cidr>',
  "a host or CIDR a prompt's image or file URL may name though it is loopback, private or link-local (http or https; repeatable); others must be https to public hosts",
] as const;

export const collectHost = (value: string, previous: string[] = []) => [...previous, value];

export function registerStart(program: Command, ctx: CliContext): void {
  const command = addWorkerOptions(
    program.command('start').description('run a worker until SIGINT/SIGTERM: it claims sessions with pending prompts and runs them'),
    ctx,
  );
  addGatewayOptions(command, false).action((opts: StartOptions) => runWorker(opts, ctx));
}

/** `sessiond start`'s flags (also `sessiond serve`'s, which runs the same worker with a gateway). */
export function addWorkerOptions(command: Command, ctx: CliContext): Command {
  command
    .option('--db <file>', 'SQLite database file (with --nats: only the local projection)', ctx.defaultDb)
    .option('--runner <echo|openai|path>', 'runner: "echo", "openai" (an OpenAI-compatible model server) or a module exporting a runner function', 'echo')
    .option('--model <name>', 'openai runner: the model name the server serves')
    .option(
      '--base-url <url>',
      `openai runner: the server's URL up to /v1 (default: OPENAI_BASE_URL, else ${DEFAULT_OPENAI_BASE_URL}); the key comes from OPENAI_API_KEY`,
    )
    .option('--tools <module>', 'openai runner: a module whose default export is the tools (defineTool with zod schemas)')
    .option('--mcp <file>', 'openai runner: MCP servers whose tools the model may call, as {"mcpServers": {...}} (see docs/model-runner.md)')
    .option('--system <prompt>', 'openai runner: a system prompt sent with every request')
    .option(
      '--prices <file>',
      'model prices in USD per million tokens, as {"model": {"input": 0.15, "cachedInput": 0.075, "output": 0.6}}: each call\'s cost is recorded (see docs/operating.md, Budgets)',
    )
    .option('--max-steps <n>', `openai runner: model calls per turn at most (default ${DEFAULT_MAX_STEPS})`, positiveInt('--max-steps'))
    .option(
      '--max-parallel-tools <n>',
      `openai runner: tool calls of one model response running at once, at most (default ${DEFAULT_MAX_PARALLEL_TOOLS}; 1 runs them one at a time)`,
      positiveInt('--max-parallel-tools'),
    )
    .option(
      '--send-reasoning <when>',
      'openai runner: send recorded reasoning back to the model: never (default), within-turn (thinking modes with tools need it, e.g. DeepSeek, Kimi) or always',
    )
    .option(
      '--context-window <tokens>',
      "openai runner: compact before a request estimated beyond this many tokens (default: on the server's overflow error only)",
      positiveInt('--context-window'),
    )
    .option(
      '--synchronous <NORMAL|FULL>',
      'SQLite durability: NORMAL survives a process crash, FULL a power loss too (slower commits)',
      synchronousOption,
      'NORMAL',
    )
    .option('--lease-ms <n>', 'lease length in ms', positiveInt('--lease-ms'), DEFAULT_LEASE_MS)
    .option('--heartbeat-ms <n>', 'lease renewal interval in ms', positiveInt('--heartbeat-ms'), DEFAULT_HEARTBEAT_MS)
    .option('--echo-delay-ms <n>', 'pause per step of the echo runner, in ms', nonNegativeInt('--echo-delay-ms'), 0)
    .option('--turn-timeout <duration>', 'stop a turn that runs longer (e.g. 10m) and settle it failed; default: no deadline', duration('--turn-timeout'))
    .option(
      '--max-running-turns <n>',
      'turns this worker runs at once, at most; others wait unclaimed (another worker may take them) and start here as turns end (default: no limit)',
      positiveInt('--max-running-turns'),
    )
    .option(
      '--max-model-calls <n>',
      'model calls in flight at once per model, across every worker of the deployment (kept in the SQLite file, or in NATS); calls past it wait, fairly between tenants (default: no limit)',
      positiveInt('--max-model-calls'),
    )
    .option(
      '--limits <file>',
      'a JSON file of limits on model calls by model, provider and tenant, shared by every worker (see docs/operating.md, "Limits on model calls"); give every worker the same file',
    )
    .option('--sweep-ms <n>', 'recovery sweep interval in ms', positiveInt('--sweep-ms'), DEFAULT_SWEEP_INTERVAL_MS)
    .option(
      '--blob-grace-ms <n>',
      `keep a blob no event references for this long after it was last stored, in ms: its deletes and blob sweep leave younger ones, and an admission whose append comes more than half of it after its blobs marks them again (default ${DEFAULT_BLOB_GRACE_MS}, one hour; give every worker the same)`,
      positiveInt('--blob-grace-ms'),
    )
    .option(
      '--blob-sweep-ms <n>',
      `time between this worker's sweeps of unreferenced blobs, in ms; 0 turns its sweep off (default ${DEFAULT_BLOB_SWEEP_INTERVAL_MS}, ten minutes)`,
      nonNegativeInt('--blob-sweep-ms'),
    )
    .option(
      '--shutdown-timeout-ms <n>',
      'after SIGINT/SIGTERM, exit 1 if closing takes longer than this (a runner that ignores its abort signal, a connection that does not drain)',
      positiveInt('--shutdown-timeout-ms'),
      DEFAULT_SHUTDOWN_TIMEOUT_MS,
    )
    .option(
      '--max-pending-inputs <n>',
      `inputs that may wait in one session; admissions past it are refused (default ${DEFAULT_LIMITS.maxPendingInputs})`,
      positiveInt('--max-pending-inputs'),
    )
    .option(
      '--max-pending-bytes <n>',
      `bytes of prompts that may wait in one session (default ${DEFAULT_LIMITS.maxPendingBytes})`,
      positiveInt('--max-pending-bytes'),
    )
    .option('--max-prompt-bytes <n>', `bytes of one prompt (default ${DEFAULT_LIMITS.maxPromptBytes})`, positiveInt('--max-prompt-bytes'))
    .option(
      '--max-held-bytes <n>',
      `bytes of pending prompts this worker keeps in memory for the sessions it has loaded (default ${DEFAULT_LIMITS.maxHeldBytes})`,
      positiveInt('--max-held-bytes'),
    )
    .option(
      '--max-blob-bytes <n>',
      `bytes of one image or file of a prompt, stored beside the log (default ${DEFAULT_LIMITS.maxBlobBytes})`,
      positiveInt('--max-blob-bytes'),
    )
    .option(
      '--max-pending-blob-bytes <n>',
      `bytes of images and files of the prompts that may wait in one session (default ${DEFAULT_LIMITS.maxPendingBlobBytes})`,
      positiveInt('--max-pending-blob-bytes'),
    )
    .option(
      '--max-blob-memory-bytes <n>',
      `bytes of images, files and long tool results this worker holds in memory at once, read for model calls or being stored; more waits (default ${DEFAULT_LIMITS.maxBlobMemoryBytes})`,
      positiveInt('--max-blob-memory-bytes'),
    )
    .option(ALLOW_URL_HOST_OPTION[0], ALLOW_URL_HOST_OPTION[1], collectHost)
    .option(INSPECT_OPTION[0], INSPECT_OPTION[1], inspectPort)
    .option(
      '--no-inspector-index',
      'without --inspect, do not keep the inspector index in the SQLite file (kept by default, in idle time, for sessiond inspect)',
    )
    .option('--metrics <port>', 'serve Prometheus metrics (/metrics) and health (/healthz, /readyz) on http://127.0.0.1:PORT', port('--metrics'))
    .option(LOG_FORMAT_OPTION[0], LOG_FORMAT_OPTION[1], parseLogFormat);
  return addNatsCommandOptions(addNatsOptions(command, ctx, 'worker'));
}

/** The blob sweep in the start-up line (a worker with a blob store): its interval and grace, or that it is off. */
function blobSweepLine(opts: StartOptions, graceMs: number): string {
  const every = opts.blobSweepMs ?? DEFAULT_BLOB_SWEEP_INTERVAL_MS;
  return every === 0 ? ', no blob sweep' : `, blob sweep every ${every / 1000} s (grace ${graceMs / 1000} s)`;
}

/** `--max-model-calls N` and `--limits FILE` as one set of limits (the stricter of each entry); undefined when neither is given. */
function callLimitsFromCli(opts: StartOptions): CallLimits | undefined {
  const fromFile = opts.limits === undefined ? undefined : loadCallLimits(opts.limits);
  const fromFlag = opts.maxModelCalls === undefined ? undefined : maxModelCalls(opts.maxModelCalls);
  if (fromFile && fromFlag) return mergeCallLimits(fromFile, fromFlag);
  return fromFile ?? fromFlag;
}

/** Runs the worker (and, with --http, the gateway in its process) until SIGINT/SIGTERM. */
export async function runWorker(opts: StartOptions, ctx: CliContext): Promise<void> {
  const nats = natsConnectionOptions(opts, ctx, 'sessiond-worker');
  if (!nats && (opts.natsCommandsUser !== undefined || opts.natsCommandsPass !== undefined || opts.replyInboxes !== undefined)) {
    throw new UsageError('--nats-commands-user, --nats-commands-pass and --reply-inboxes only apply with --nats <url> (or SESSIOND_NATS).');
  }
  const commands = nats ? natsCommandConnection(opts, nats, ctx) : undefined;
  if (nats && opts.http !== undefined)
    throw new UsageError(
      '--http with --nats: a NATS worker hears only its own deltas. Run the gateway beside the workers as the client user: sessiond serve --http PORT --nats URL --nats-user client.',
    );
  const gateway = opts.http === undefined ? undefined : gatewayOptions(opts, ctx); // tokens read (and checked) before anything starts
  // the worker's inspector takes the gateway's tokens when there are any (its fork then needs manage)
  const inspectAuth = opts.inspect === undefined ? undefined : gateway ? { tokens: gateway.tokens, jwt: gateway.jwt } : inspectorTokens(opts, ctx);
  if (
    opts.runner !== 'openai' &&
    (opts.model ??
      opts.baseUrl ??
      opts.tools ??
      opts.mcp ??
      opts.system ??
      opts.maxSteps ??
      opts.maxParallelTools ??
      opts.sendReasoning ??
      opts.contextWindow) !== undefined
  ) {
    throw new UsageError(
      '--model, --base-url, --tools, --mcp, --system, --max-steps, --max-parallel-tools, --send-reasoning and --context-window apply to --runner openai only.',
    );
  }
  const modelCallLimits = callLimitsFromCli(opts); // refused before anything starts
  const prices = opts.prices === undefined ? undefined : loadPrices(opts.prices); // refused now, naming the entry, not at the first call
  const log = workerLog(ctx, logFormat(opts.logFormat, ctx.env, process.stdout.isTTY));
  // MCP servers start at the first turn; the stop closes them last
  const mcp =
    opts.mcp === undefined
      ? undefined
      : mcpServers(loadMcpConfig(opts.mcp), {
          log: (line, problem) => (problem ? log.err(line) : log.out(line)),
        });
  const runner = opts.runner === 'openai' ? await openaiFromCli(opts, ctx.env, mcp) : await loadRunner(opts.runner, { delayMs: opts.echoDelayMs });
  // signal handlers first: a SIGTERM at any moment of start-up stops the worker cleanly
  const stop = stopper(log, ctx.stdout);
  const startUp = new AbortController();
  void stop.stopped.then(() => startUp.abort(new Error('stopped during start-up')));
  if (nats)
    log.out(`connecting to NATS at ${describeNats(nats)} (retrying every ${(nats.reconnectWaitMs ?? DEFAULT_RECONNECT_WAIT_MS) / 1000} s until it answers)...`);
  const sessiond = await startSessiond({
    signal: startUp.signal,
    db: opts.db,
    runner,
    synchronous: opts.synchronous,
    leaseMs: opts.leaseMs,
    heartbeatMs: opts.heartbeatMs,
    ...(opts.turnTimeout !== undefined ? { turnTimeoutMs: opts.turnTimeout } : {}),
    ...(opts.maxRunningTurns !== undefined ? { maxRunningTurns: opts.maxRunningTurns } : {}),
    ...(modelCallLimits ? { modelCallLimits } : {}),
    sweepMs: opts.sweepMs,
    ...(opts.blobGraceMs !== undefined ? { blobGraceMs: opts.blobGraceMs } : {}),
    ...(opts.blobSweepMs !== undefined ? { blobSweepMs: opts.blobSweepMs } : {}),
    ...(nats ? { nats: { connection: nats, ...(commands ? { commands: { ...commands, tenantLimits: tenantLimitFlags(opts) } } : {}) } } : {}),
    limits: Object.fromEntries(
      (['maxPendingInputs', 'maxPendingBytes', 'maxPromptBytes', 'maxHeldBytes', 'maxBlobBytes', 'maxPendingBlobBytes', 'maxBlobMemoryBytes'] as const).flatMap(
        (k) => (opts[k] === undefined ? [] : [[k, opts[k]]]),
      ),
    ),
    ...(opts.allowUrlHost?.length ? { urls: { allow: opts.allowUrlHost } } : {}),
    ...(prices ? { prices } : {}),
    ...(opts.inspect !== undefined ? { inspectPort: opts.inspect } : {}),
    ...(opts.inspectorIndex ? {} : { keepInspectorIndex: false }),
    ...(inspectAuth && (inspectAuth.tokens || inspectAuth.jwt) ? { inspectAuth: withoutUndefined(inspectAuth) } : {}),
    ...(opts.metrics !== undefined ? { metricsPort: opts.metrics } : {}),
    report: log,
    onFatal: (err) => stop.fail(err),
  }).catch((err: unknown) => {
    if (!startUp.signal.aborted) throw err;
    return undefined; // stopped before it was up: what was opened is closed, nothing ran
  });
  if (!sessiond) {
    await mcp?.close();
    log.out(stoppedLine(0));
    // a connection still trying to reach its server keeps the process alive; nothing else is open
    process.exit(process.exitCode ?? 0);
  }
  log.out(
    `sessiond worker ${sessiond.ownerId} is running on ${sessiond.where} with the ${opts.runner === 'openai' ? `openai runner (model ${opts.model} at ${opts.baseUrl ?? ctx.env['OPENAI_BASE_URL'] ?? DEFAULT_OPENAI_BASE_URL})` : `${opts.runner} runner`}`,
  );
  if (nats) {
    log.out(`  local projection: ${opts.db}`);
    log.out(`  live events on ${LIVE_PREFIX}.<session>.<type> (text deltas, and every event this worker commits)`);
  }
  log.out(
    `  lease ${opts.leaseMs / 1000} s, renewed every ${opts.heartbeatMs / 1000} s, recovery sweep every ${opts.sweepMs / 1000} s${opts.turnTimeout === undefined ? '' : `, turns stopped after ${opts.turnTimeout / 1000} s`}${opts.maxRunningTurns === undefined ? '' : `, at most ${opts.maxRunningTurns} turns at once`}${sessiond.engine.blobs ? blobSweepLine(opts, sessiond.engine.execution.blobGraceMs) : ''}. Stop it with Ctrl-C.`,
  );
  const target = nats
    ? `--nats ${Array.isArray(nats.servers) ? nats.servers.join(',') : nats.servers} --nats-user client --nats-pass <secret>`
    : `--db ${opts.db}`;
  log.out(`  send it a prompt from another terminal:  npx sessiond prompt ses_demo "hello there" ${target}`);
  if (modelCallLimits)
    log.out(`  limits on model calls, shared by every worker: ${describeCallLimits(modelCallLimits)} (sessiond limits shows what runs and waits)`);
  if (sessiond.inspectorUrl) log.out(`  inspector: ${sessiond.inspectorUrl}  (state chart, live sessions, timelines, time travel)`);
  if (sessiond.metricsUrl) log.out(`  metrics: ${sessiond.metricsUrl}/metrics  health: ${sessiond.metricsUrl}/healthz, ${sessiond.metricsUrl}/readyz`);
  let served: Gateway | undefined;
  if (gateway) {
    try {
      served = await startGateway({
        ...gateway,
        sessions: sessiond,
        live: engineLive(sessiond),
        onError: (err) => log.err(`sessiond: gateway: ${messageOf(err)}`),
      });
    } catch (err) {
      await sessiond.close();
      await mcp?.close();
      throw err;
    }
    log.out(gatewayLine(served.url, gateway.tokens, gateway.tokensFrom, gateway.jwt));
  }
  await stop.stopped;
  let closing = () => 'the gateway';
  // a part that never finishes closing must not keep the process from exiting: its turn's lease
  // runs out and another worker recovers it
  const deadline = setTimeout(() => {
    log.err(
      `sessiond: still closing ${closing()} ${opts.shutdownTimeoutMs / 1000} s after the stop (a runner that ignores its abort signal, or a connection that does not drain): exiting now; unfinished turns are recovered when their leases run out`,
    );
    process.exit(1);
  }, opts.shutdownTimeoutMs);
  deadline.unref();
  await served?.close(); // streams end first: their clients reconnect to whoever serves next
  closing = () => sessiond.closing ?? 'the worker';
  const { handedBack } = await sessiond.close();
  closing = () => 'the MCP servers';
  await mcp?.close(); // after the turns: their calls were aborted with them
  clearTimeout(deadline);
  log.out(stoppedLine(handedBack));
  await stopTracing(); // the spans of the last turns go out before the exit
  // closed: nothing left to run (a handle something left open must not keep the worker alive)
  process.exit(process.exitCode ?? 0);
}

/**
 * When to stop: the first SIGINT, SIGTERM or SIGHUP, stdout's reader gone (`sessiond start | head`: quietly,
 * as on SIGTERM), or a part of the worker that stopped for good (then the worker stops too, loudly,
 * and `sessiond start` exits 1 so a supervisor restarts it).
 */
interface Stopper {
  readonly stopped: Promise<void>;
  fail(err: unknown): void;
}

function stopper(log: WorkerLog, stdout: StdoutWatch): Stopper {
  let resolve!: () => void;
  const stopped = new Promise<void>((r) => {
    resolve = r;
  });
  let done = false;
  let offClosed = () => {};
  const stop = (line: string) => {
    if (done) return;
    done = true;
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    process.off('SIGHUP', onHup);
    offClosed();
    log.out(line);
    resolve();
  };
  const onInt = () => stop('SIGINT: stopping; turns in progress are handed back');
  const onTerm = () => stop('SIGTERM: stopping; turns in progress are handed back');
  // a closed terminal or ssh session: without a handler node would exit at once, leaving each turn to wait out its lease
  const onHup = () => stop('SIGHUP: stopping; turns in progress are handed back');
  process.once('SIGINT', onInt);
  process.once('SIGTERM', onTerm);
  process.once('SIGHUP', onHup);
  offClosed = stdout.onClosed(() => stop('stdout closed: stopping; turns in progress are handed back'));
  return {
    stopped,
    fail(err) {
      log.err(`sessiond: ${messageOf(err)}`);
      process.exitCode = 1;
      stop('stopping: a part of this worker failed for good (see above); turns in progress are handed back. Restart the worker.');
    },
  };
}

function stoppedLine(running: number): string {
  return `stopped (${running === 0 ? 'nothing was running' : `handed back ${running} running session${running === 1 ? '' : 's'}`})`;
}

/** The openai runner from the flags and the environment (only the CLI reads OPENAI_API_KEY and OPENAI_BASE_URL). */
async function openaiFromCli(opts: StartOptions, env: NodeJS.ProcessEnv, mcp: McpServers | undefined) {
  if (!opts.model) throw new UsageError('--runner openai needs --model NAME (the model the server serves, e.g. gpt-4o-mini).');
  const baseURL = opts.baseUrl ?? env['OPENAI_BASE_URL'] ?? DEFAULT_OPENAI_BASE_URL;
  const apiKey = env['OPENAI_API_KEY'];
  return openaiRunner({
    model: opts.model,
    baseURL,
    ...(apiKey ? { apiKey } : {}),
    ...(opts.tools ? { tools: await loadTools(opts.tools) } : {}),
    ...(mcp ? { mcp } : {}),
    ...(opts.system ? { system: opts.system } : {}),
    ...(opts.maxSteps !== undefined ? { maxSteps: opts.maxSteps } : {}),
    ...(opts.maxParallelTools !== undefined ? { maxParallelTools: opts.maxParallelTools } : {}),
    ...(opts.sendReasoning !== undefined ? { sendReasoning: sendReasoningOf(opts.sendReasoning) } : {}),
    ...(opts.contextWindow !== undefined ? { contextWindow: opts.contextWindow } : {}),
  });
}

function sendReasoningOf(value: string): SendReasoning {
  if (!(SEND_REASONING as readonly string[]).includes(value))
    throw new UsageError(`--send-reasoning ${value}: use ${SEND_REASONING.join(', ')} (within-turn for thinking models that call tools).`);
  return value as SendReasoning;
}

/** The tokens of `--tokens`/`--jwks` (or SESSIOND_GATEWAY_TOKENS) for a worker's inspector without a gateway. */
function inspectorTokens(opts: GatewayFlags, ctx: CliContext): { tokens?: TokenTable; jwt?: JwtVerifier } {
  const tokens = gatewayTokens(opts, ctx)?.table;
  const jwt = gatewayJwt(opts, ctx);
  return { ...(tokens ? { tokens } : {}), ...(jwt ? { jwt } : {}) };
}

const withoutUndefined = (auth: { tokens?: TokenTable | undefined; jwt?: JwtVerifier | undefined }): { tokens?: TokenTable; jwt?: JwtVerifier } => ({
  ...(auth.tokens ? { tokens: auth.tokens } : {}),
  ...(auth.jwt ? { jwt: auth.jwt } : {}),
});
