/**
 * `sessiond start`: runs a worker until SIGINT/SIGTERM. Embedded (default): the SQLite file holds the
 * log. With `--nats <url>`: the log is the JetStream stream, the SQLite file only holds the local
 * projection, live events go on `sessiond.live.<session>.<type>` (deltas as they stream, committed
 * events as this worker commits them), and, given a commands user, the worker answers `sessiond.cmd.*`
 * in the workers' queue group on a second connection that may publish only into client inboxes.
 * Stopping closes, in order: the command service, the worker (turns in progress are handed back,
 * and those events go out live too), the engine, the log, the connections.
 */
import type { Command } from 'commander';
import { openEngine, type Engine } from '../../engine.ts';
import { JetStreamSnapshotStore } from '../../nats/snapshot-store.ts';
import { startWorker, type Worker, type WorkerOptions } from '../../execution/worker.ts';
import { DEFAULT_SWEEP_INTERVAL_MS, type RecoveryNotice } from '../../recovery/sweeper.ts';
import { loadRunner } from '../../runner/load.ts';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, type Notice } from '../../execution/session-execution.ts';
import type { SessionEvent } from '../../events/envelope.ts';
import type { Runner } from '../../runner/types.ts';
import { isSessiondError, messageOf } from '../../errors.ts';
import { systemClock } from '../../clock.ts';
import { connectNats, DEFAULT_RECONNECT_WAIT_MS, type NatsConnectionOptions } from '../../nats/connection.ts';
import { JetStreamEventLog } from '../../nats/jetstream-event-log.ts';
import { NatsLiveBus } from '../../nats/live-bus.ts';
import { publishCommits } from '../../events/publishing-log.ts';
import { describeQuarantine, type QuarantinedMessage } from '../../events/quarantine.ts';
import { recordQuarantine } from '../../storage/quarantine-store.ts';
import { startCommandService } from '../../nats/command-service.ts';
import { COMMAND_QUEUE, LIVE_PREFIX, commandVerbs, subjects } from '../../nats/subjects.ts';
import type { CliContext } from '../context.ts';
import { nonNegativeInt, port, positiveInt } from '../options.ts';
import { UsageError } from '../exit.ts';
import {
  addNatsCommandOptions, addNatsOptions, describeNats, natsCommandConnection, natsConnectionOptions, type NatsCommandFlags, type NatsFlags,
} from '../nats-options.ts';
import { INSPECT_OPTION, inspectPort, serveInspector } from '../../inspector/cli.ts';
import { METRICS_OPTION, serveOps } from '../ops.ts';
import { LOG_FORMAT_OPTION, logFormat, parseLogFormat, workerLog, type LogFormat, type WorkerLog } from '../worker-log.ts';
import { createWorkerMetrics, type WorkerMetrics } from '../../observability/metrics.ts';
import { observeAppends } from '../../events/observed-log.ts';
import type { EventLog } from '../../events/event-log.ts';

interface StartOptions extends NatsFlags, NatsCommandFlags { db: string; runner: string; leaseMs: number; heartbeatMs: number; echoDelayMs: number; sweepMs: number; inspect?: number; metrics?: number; logFormat?: LogFormat }

export function registerStart(program: Command, ctx: CliContext): void {
  const command = program
    .command('start')
    .description('run a worker until SIGINT/SIGTERM: it claims sessions with pending prompts and runs them')
    .option('--db <file>', 'SQLite database file (with --nats: only the local projection)', ctx.defaultDb)
    .option('--runner <echo|path>', 'runner: "echo" or a module exporting a runner function', 'echo')
    .option('--lease-ms <n>', 'lease length in ms', positiveInt('--lease-ms'), DEFAULT_LEASE_MS)
    .option('--heartbeat-ms <n>', 'lease renewal interval in ms', positiveInt('--heartbeat-ms'), DEFAULT_HEARTBEAT_MS)
    .option('--echo-delay-ms <n>', 'pause per step of the echo runner, in ms', nonNegativeInt('--echo-delay-ms'), 0)
    .option('--sweep-ms <n>', 'recovery sweep interval in ms', positiveInt('--sweep-ms'), DEFAULT_SWEEP_INTERVAL_MS)
    .option(INSPECT_OPTION[0], INSPECT_OPTION[1], inspectPort)
    .option(METRICS_OPTION[0], METRICS_OPTION[1], port('--metrics'))
    .option(LOG_FORMAT_OPTION[0], LOG_FORMAT_OPTION[1], parseLogFormat);
  addNatsCommandOptions(addNatsOptions(command, ctx, 'worker')).action(async (opts: StartOptions) => {
    const nats = natsConnectionOptions(opts, ctx, 'sessiond-worker');
    if (!nats && (opts.natsCommandsUser !== undefined || opts.natsCommandsPass !== undefined || opts.replyInboxes !== undefined)) {
      throw new UsageError('--nats-commands-user, --nats-commands-pass and --reply-inboxes only apply with --nats <url> (or SESSIOND_NATS).');
    }
    const runner = await loadRunner(opts.runner, { delayMs: opts.echoDelayMs });
    const metrics = opts.metrics === undefined ? undefined : createWorkerMetrics({ log: nats ? 'nats' : 'sqlite' });
    const log = workerLog(ctx, logFormat(opts.logFormat, ctx.env, process.stdout.isTTY));
    if (nats) await startOnNats(opts, runner, nats, ctx, log, metrics);
    else await startEmbedded(opts, runner, log, metrics);
  });
}

async function startEmbedded(opts: StartOptions, runner: Runner, log: WorkerLog, metrics: WorkerMetrics | undefined): Promise<void> {
  const stop = stopper(log);
  const engine = await openEngine({
    file: opts.db, runner, leaseMs: opts.leaseMs, heartbeatMs: opts.heartbeatMs, onNotice: noticeHandler(log, metrics),
    ...(metrics ? { decorateLog: (inner: EventLog) => observeAppends(inner, metrics.appends) } : {}),
  });
  log.bind({ worker: engine.ownerId });
  const worker = startWorker(engine.execution, workerOptions(engine, opts, log, stop, metrics));
  log.out(`sessiond worker ${engine.ownerId} is running on ${opts.db} with the ${opts.runner} runner`);
  log.out(`  lease ${opts.leaseMs / 1000} s, renewed every ${opts.heartbeatMs / 1000} s, recovery sweep every ${opts.sweepMs / 1000} s. Stop it with Ctrl-C.`);
  log.out(`  send it a prompt from another terminal:  npx sessiond prompt ses_demo "hello there" --db ${opts.db}`);
  const inspector = await serveInspector(engine.log, opts.inspect, log).catch(async (err) => { await worker.stop(); await engine.close(); throw err; });
  const ops = metrics && opts.metrics !== undefined
    ? await serveOps(opts.metrics, { engine, worker, metrics }, log).catch(async (err) => { await inspector?.close(); await worker.stop(); await engine.close(); throw err; })
    : undefined;
  await stop.stopped;
  const running = engine.activeTurns();
  await ops?.close();
  await inspector?.close();
  await worker.stop();
  await engine.close();
  log.out(stoppedLine(running));
}

async function startOnNats(opts: StartOptions, runner: Runner, nats: NatsConnectionOptions, ctx: CliContext, log: WorkerLog, metrics: WorkerMetrics | undefined): Promise<void> {
  const commandConnection = natsCommandConnection(opts, nats, ctx);
  const stop = stopper(log);
  const where = describeNats(nats);
  log.out(`connecting to NATS at ${where} (retrying every ${(nats.reconnectWaitMs ?? DEFAULT_RECONNECT_WAIT_MS) / 1000} s until it answers)...`);
  const nc = await connectNats({ ...nats, waitForServer: true });
  // everything opened so far, closed in reverse order on the way out (also if setup fails)
  const opened: { what: string; close: () => Promise<unknown> }[] = [{ what: 'the NATS connection', close: () => nc.drain().catch(() => nc.close()) }];
  let engine: Engine | undefined;
  let worker: Worker | undefined;
  try {
    // a stored message that is not a valid batch is skipped, said once, and recorded in the database
    let record: (q: QuarantinedMessage) => void = () => undefined;
    const eventLog = await JetStreamEventLog.open({
      connection: nc,
      onQuarantine: (q) => { log.err(`sessiond: ${describeQuarantine(q)}`); record(q); },
    });
    opened.push({ what: 'the event log', close: () => eventLog.close() });
    const bus = new NatsLiveBus(nc);
    // snapshots shared by the workers beside the stream; without them (a nats.conf that does not
    // allow the stream), this worker's own file keeps them
    const snapshots = await JetStreamSnapshotStore.open(nc).catch((err: unknown) => {
      log.err(`sessiond: no shared snapshots (${messageOf(err)}); keeping snapshots in ${opts.db} only`);
      return undefined;
    });
    engine = await openEngine({
      // every batch this worker commits goes out on its live subjects once, as it is acknowledged
      file: opts.db, log: publishCommits(metrics ? observeAppends(eventLog, metrics.appends) : eventLog, bus), runner, bus, leaseMs: opts.leaseMs, heartbeatMs: opts.heartbeatMs,
      ...(snapshots ? { snapshots } : {}),
      onNotice: noticeHandler(log, metrics),
    });
    const openedEngine = engine;
    log.bind({ worker: engine.ownerId });
    opened.push({ what: 'the engine', close: () => openedEngine.close() });
    record = (q) => recordQuarantine(openedEngine.db, q, systemClock.now());
    worker = startWorker(engine.execution, workerOptions(engine, opts, log, stop, metrics));
    const openedWorker = worker;
    opened.push({ what: 'the worker', close: () => openedWorker.stop() });
    let serving = `  not serving commands: no commands user (give --nats-commands-user and SESSIOND_NATS_COMMANDS_PASS, the commands user of nats.conf)`;
    if (commandConnection) {
      const cnc = await connectNats({ ...commandConnection.connection, waitForServer: true });
      opened.push({ what: 'the command connection', close: () => cnc.drain().catch(() => cnc.close()) });
      const commands = startCommandService(cnc, engine, {
        replyPrefixes: commandConnection.replyPrefixes,
        onError: (err) => log.err(`sessiond: command service: ${messageOf(err)}`),
      });
      opened.push({ what: 'the command service', close: () => commands.close() });
      serving = `  serving commands ${commandVerbs.map((v) => subjects.command(v)).join(', ')} in queue group ${COMMAND_QUEUE}${commandConnection.connection.user ? ` as user ${commandConnection.connection.user}` : ''}, replying only to ${commandConnection.replyPrefixes.map((p) => `${p}.>`).join(', ')}`;
    }

    log.out(`sessiond worker ${engine.ownerId} is running on NATS ${where} (stream ${eventLog.stream}) with the ${opts.runner} runner`);
    log.out(`  local projection: ${opts.db}`);
    log.out(`  live events on ${LIVE_PREFIX}.<session>.<type> (text deltas, and every event this worker commits)`);
    log.out(serving);
    log.out(`  lease ${opts.leaseMs / 1000} s, renewed every ${opts.heartbeatMs / 1000} s, recovery sweep every ${opts.sweepMs / 1000} s. Stop it with Ctrl-C.`);
    log.out(`  send it a prompt from another terminal:  npx sessiond prompt ses_demo "hello there" --nats ${Array.isArray(nats.servers) ? nats.servers.join(',') : nats.servers} --nats-user client --nats-pass <secret>`);
    const inspector = await serveInspector(eventLog, opts.inspect, log);
    if (inspector) opened.push({ what: 'the inspector', close: () => inspector.close() });
    if (metrics && opts.metrics !== undefined) {
      const ops = await serveOps(opts.metrics, { engine, worker, metrics }, log);
      opened.push({ what: 'the metrics server', close: () => ops.close() });
    }
    await stop.stopped;
  } finally {
    const running = engine ? engine.activeTurns() : 0;
    for (const step of opened.reverse()) {
      try {
        await step.close();
      } catch (err) {
        log.err(`sessiond: closing ${step.what} failed: ${messageOf(err)}`);
      }
    }
    if (worker) log.out(stoppedLine(running));
  }
}

/**
 * When to stop: the first SIGINT or SIGTERM, or a part of the worker that stopped for good (then
 * the worker stops too, loudly, and `sessiond start` exits 1 so a supervisor restarts it).
 */
interface Stopper {
  readonly stopped: Promise<void>;
  fail(err: unknown): void;
}

function stopper(log: WorkerLog): Stopper {
  let resolve!: () => void;
  const stopped = new Promise<void>((r) => { resolve = r; });
  let done = false;
  const stop = (line: string) => {
    if (done) return;
    done = true;
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    log.out(line);
    resolve();
  };
  const onInt = () => stop('SIGINT: stopping; turns in progress are handed back');
  const onTerm = () => stop('SIGTERM: stopping; turns in progress are handed back');
  process.once('SIGINT', onInt);
  process.once('SIGTERM', onTerm);
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

function printEvent(log: WorkerLog): (e: SessionEvent) => void {
  return (e) => {
    const line = describeEvent(e);
    if (line) log.out(line, { session: e.sessionId, seq: e.seq, event: e.type, eventId: e.id });
  };
}

export function describeNotice(n: Notice): string {
  switch (n.type) {
    case 'claimed': return `${n.sessionId}  claimed (execution ${n.executionId})`;
    case 'settled': return `${n.sessionId}  turn ${n.outcome}${n.error ? `: ${n.error}` : ''}`;
    case 'claim_lost': return `${n.sessionId}  lost its claim on execution ${n.executionId}; stopped the runner`;
    case 'cancelled': return `${n.sessionId}  cancelled execution ${n.executionId}`;
    case 'refused': return `${n.sessionId}  not taken: ${n.message}`;
    case 'error': return `${n.sessionId}  error: ${n.message}`;
  }
}

export function describeEvent(e: SessionEvent): string | undefined {
  switch (e.type) {
    case 'input.admitted': return `${e.sessionId}  prompt admitted (${e.payload.delivery}): ${JSON.stringify(e.payload.prompt.slice(0, 80))}`;
    case 'text.completed': return `${e.sessionId}  ${e.payload.text}`;
    case 'execution.cancelled': return `${e.sessionId}  execution ${e.payload.executionId} was cancelled`;
    default: return undefined;
  }
}

/** The worker projects into the SQLite file and runs the recovery sweep every `--sweep-ms`. */
function workerOptions(engine: Engine, opts: StartOptions, log: WorkerLog, stop: Stopper, metrics: WorkerMetrics | undefined): WorkerOptions {
  return {
    onEvent: printEvent(log),
    onFatal: (err) => {
      metrics?.fatal(String((isSessiondError(err) ? err.details['part'] : undefined) ?? 'worker'));
      stop.fail(err);
    },
    projection: engine.db,
    sweep: {
      intervalMs: opts.sweepMs,
      onNotice: (n) => {
        log.out(describeRecovery(n), { notice: n.type, ...('sessionId' in n ? { session: n.sessionId } : {}), ...('executionId' in n ? { execution: n.executionId } : {}) });
        metrics?.recovery(n);
      },
    },
  };
}

/** Prints the execution service's notices, and counts them when metrics are on. */
function noticeHandler(log: WorkerLog, metrics: WorkerMetrics | undefined): (n: Notice) => void {
  return (n) => {
    log.out(describeNotice(n), { notice: n.type, session: n.sessionId, ...('executionId' in n ? { execution: n.executionId } : {}) });
    metrics?.notice(n);
  };
}

export function describeRecovery(n: RecoveryNotice): string {
  switch (n.type) {
    case 'recovered': return `${n.sessionId}  recovered expired execution ${n.executionId}; continuation ${n.continuationInputId} admitted`;
    case 'wake_attempt': return `${n.sessionId}  recovery wake, attempt ${n.attempt}`;
    case 'parked': return `${n.sessionId}  PARKED: ${n.message}`;
    case 'error': return `${n.sessionId}  recovery error: ${n.message}`;
    case 'sweep_failed': return `recovery sweep: ${n.message}`;
  }
}
