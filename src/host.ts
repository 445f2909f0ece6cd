/**
 * The composition root: `startSessiond` builds a complete worker, embedded or on NATS, wiring log,
 * engine, worker, command service, inspector and metrics in order; `close()` stops them in reverse.
 *
 *   const sessiond = await startSessiond({ db: 'worker.db', runner: echoRunner() });
 */
import type { Quotas } from './gateway/quotas.ts';
import { checkKeys, wholeNumber } from './options.ts';
import { DEFAULT_BLOB_SWEEP_INTERVAL_MS, describeBlobSweep } from './blobs/sweep.ts';
import { openEngine, type Engine } from './engine.ts';
import type { Synchronous } from './storage/sqlite/database.ts';
import { startWorker, type Worker } from './execution/worker.ts';
import { DEFAULT_SWEEP_INTERVAL_MS, type RecoveryNotice } from './recovery/sweeper.ts';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, type Notice } from './execution/session-execution.ts';
import type { SessionEvent } from './events/envelope.ts';
import type { EventLog } from './events/event-log.ts';
import type { Runner } from './runner/types.ts';
import type { Sessions } from './sessions/sessions.ts';
import { ErrorCode, isSessiondError, messageOf, oneLine } from './errors.ts';
import { isoTime, systemClock } from './clock.ts';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats, describeNats, type NatsConnectionOptions } from './nats/connection.ts';
import { JetStreamEventLog } from './nats/jetstream-event-log.ts';
import { JetStreamSnapshotStore } from './nats/snapshot-store.ts';
import { NatsLiveBus } from './nats/live-bus.ts';
import { publishCommits } from './events/publishing-log.ts';
import { observeAppends } from './events/observed-log.ts';
import { describeQuarantine, type QuarantinedMessage } from './events/quarantine.ts';
import { recordQuarantine } from './storage/sqlite/quarantine-store.ts';
import { startCommandService } from './nats/command-service.ts';
import { COMMAND_QUEUE, commandVerbs, subjects } from './nats/subjects.ts';
import { keepInspectorIndex } from './inspector/index-keeper.ts';
import { SqliteInspectorIndex } from './inspector/sqlite-index.ts';
import { startInspector } from './inspector/server.ts';
import type { TokenTable } from './gateway/tokens.ts';
import type { JwtVerifier } from './gateway/jwt.ts';
import { createWorkerMetrics } from './observability/metrics.ts';
import type { Prices } from './budget/prices.ts';
import type { SessionLimits } from './input/limits.ts';
import type { UrlOptions } from './input/url-guard.ts';
import { INLINE_PART_BYTES, promptText } from './events/prompt.ts';
import { describeRetry } from './runner/model/retry.ts';
import { serveOps } from './observability/worker-ops.ts';
import { followDeletions, verifyAuditStream, type DeletionFollower } from './nats/deletion-stream.ts';
import { applyDeletion } from './nats/delete-session.ts';
import { Projector } from './projector/projector.ts';
import { randomIds } from './ids.ts';
import { openDatabase } from './storage/sqlite/database.ts';
import { migrate, type MigrateOptions } from './storage/sqlite/migrate.ts';
import { migrationProgress, progressLines } from './cli/progress.ts';
import { SqliteSnapshotStore } from './storage/sqlite/sqlite-snapshot-store.ts';
import { sqliteDeletionFeed } from './storage/sqlite/delete-session.ts';
import { noLimits, type CallLimits } from './capacity/limits-file.ts';
import { openModelCallGate, type ModelCallGate } from './capacity/gate.ts';
import { sqliteCapacityStore } from './capacity/sqlite-capacity-store.ts';
import { jetstreamCapacityStore } from './capacity/kv-capacity-store.ts';
import type { CapacityStore } from './capacity/store.ts';
import { jetstreamTenantBudgetStore } from './budget/kv-tenant-budget-store.ts';
import { BLOB_BUCKET, ObjectBlobStore } from './nats/object-blob-store.ts';
import type { BlobStore } from './blobs/blob-store.ts';
import { TOOL_RESULT_INLINE_BYTES } from './execution/run-context.ts';
import type { TenantBudgetStore } from './budget/tenant-store.ts';
import { waitingFor } from './capacity/waiting.ts';

/** Where a host says what it does (the CLI prints it as lines or JSON). */
export interface HostReport {
  out(line: string, fields?: Record<string, string | number | boolean | undefined>): void;
  err(line: string, fields?: Record<string, string | number | boolean | undefined>): void;
  /** Adds fields to every later report (the worker id once it is known). */
  bind?(fields: Record<string, string>): void;
}

export interface SessiondOptions {
  /** SQLite file: the embedded log and the projection (on NATS, the projection only). */
  db: string;
  runner: Runner;
  /** The SQLite file's durability: NORMAL (default: survives a process crash) or FULL (a power loss too), as `openEngine`'s. */
  synchronous?: Synchronous;
  leaseMs?: number;
  heartbeatMs?: number;
  /** A turn's deadline (`openEngine`'s `turnTimeoutMs`): longer turns are stopped and settle failed. */
  turnTimeoutMs?: number;
  /** Turns this worker runs at once, at most (`openEngine`'s `maxRunningTurns`); default no limit. */
  maxRunningTurns?: number;
  /**
   * Limits on model calls shared by every worker of the deployment (src/capacity/): kept in the
   * SQLite file, or on NATS in the `SESSIOND_CAPACITY` bucket `sessiond setup` makes. Default: none.
   */
  modelCallLimits?: CallLimits;
  sweepMs?: number;
  /** First wait before a recovery wake is attempted again (doubled per attempt); default DEFAULT_WAKE_BACKOFF_MS. */
  wakeBackoffMs?: number;
  /**
   * How long an unreferenced blob is kept after its content was last put (ms; default one hour): by
   * this worker's blob sweep, its deletes, and its admissions' check of their blobs (`openEngine`'s `blobGraceMs`).
   */
  blobGraceMs?: number;
  /** Time between passes of the blob sweep (ms; default ten minutes); 0 turns this worker's sweep off. */
  blobSweepMs?: number;
  /** Every notice of the engine (claimed, settled, claim_lost...) and of the recovery sweep, besides the report's lines. */
  onNotice?: (notice: Notice | RecoveryNotice) => void;
  /** The log on NATS: the worker's connection, and, to serve commands, the commands user's. */
  nats?: {
    connection: NatsConnectionOptions;
    /** `tenantLimits`: each NATS tenant user's quotas on this worker (`startCommandService`'s). */
    commands?: { connection: NatsConnectionOptions; replyPrefixes: string[]; tenantLimits?: Partial<Quotas> };
  };
  /** What a session may hold waiting and what this worker holds in memory (src/input/limits.ts). */
  limits?: Partial<SessionLimits>;
  /** Which URLs a prompt may name (src/input/url-guard.ts): default https to public hosts only. */
  urls?: UrlOptions;
  /** Model prices (`openEngine`'s `prices`; `sessiond start --prices`): each model call's cost is recorded with its usage. */
  prices?: Prices;
  /** Serve the inspector on 127.0.0.1:PORT. */
  inspectPort?: number;
  /**
   * Without `inspectPort`, on a SQLite file: keep the inspector's index in the file as the log grows,
   * in idle time (src/inspector/index-keeper.ts), so `sessiond inspect` starts from it. Default true.
   */
  keepInspectorIndex?: boolean;
  /** The inspector's tokens (the gateway's): its API then needs a token reaching every session, fork `manage` (src/inspector/auth.ts). */
  inspectAuth?: { tokens?: TokenTable; jwt?: JwtVerifier };
  /** Serve Prometheus metrics, /healthz and /readyz on 127.0.0.1:PORT. */
  metricsPort?: number;
  report?: HostReport;
  /** Wraps the log the engine writes through (as `openEngine`'s option); metrics, when asked, observe the wrapped log. */
  decorateLog?: (log: EventLog) => EventLog;
  /** A part of the worker stopped for good (the host should be closed and restarted). Default: reported. */
  onFatal?: (err: unknown) => void;
  /** Aborts the start-up (e.g. SIGTERM while waiting for the NATS server): what was opened is closed and `startSessiond` rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** A whole worker: `Sessions` (its engine's), and the parts around it. */
export interface Sessiond extends Omit<Sessions, 'close'>, Pick<Engine, 'awaitIdle' | 'activeTurns' | 'subscribe'> {
  readonly ownerId: string;
  readonly engine: Engine;
  readonly worker: Worker;
  /** Where the log lives, in words (the file, or the NATS servers and stream). */
  readonly where: string;
  /** On NATS: the worker's own connection (to flush it, or watch its status) and the JetStream log under the engine. */
  readonly nats: { readonly connection: NatsConnection; readonly log: JetStreamEventLog } | undefined;
  readonly inspectorUrl: string | undefined;
  readonly metricsUrl: string | undefined;
  /** Stops every part in reverse order; returns how many running turns were handed back. */
  close(): Promise<{ handedBack: number }>;
  /** While `close` runs: the part it is closing, in words (said when a stop takes too long). */
  readonly closing: string | undefined;
}

const nameOf = (part: { what: string | (() => string) }) => (typeof part.what === 'string' ? part.what : part.what());

const silent: HostReport = { out: () => {}, err: () => {} };

export async function startSessiond(options: SessiondOptions): Promise<Sessiond> {
  checkKeys('startSessiond', options, [
    'db',
    'runner',
    'synchronous',
    'leaseMs',
    'heartbeatMs',
    'turnTimeoutMs',
    'maxRunningTurns',
    'modelCallLimits',
    'sweepMs',
    'wakeBackoffMs',
    'blobGraceMs',
    'blobSweepMs',
    'onNotice',
    'nats',
    'limits',
    'urls',
    'prices',
    'inspectPort',
    'keepInspectorIndex',
    'inspectAuth',
    'metricsPort',
    'report',
    'decorateLog',
    'onFatal',
    'signal',
  ]);
  const report = options.report ?? silent;
  const blobSweepMs = wholeNumber('startSessiond', 'blobSweepMs', options.blobSweepMs, DEFAULT_BLOB_SWEEP_INTERVAL_MS, 0, 'milliseconds (0: no blob sweep)');
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const metrics = options.metricsPort === undefined ? undefined : createWorkerMetrics({ log: options.nats ? 'nats' : 'sqlite' });
  // everything opened so far, closed in reverse order on the way out (also if start-up fails)
  const opened: { what: string | (() => string); close: () => Promise<unknown> }[] = [];
  let closing: (typeof opened)[number] | undefined;
  const closeAll = async () => {
    for (const step of opened.reverse()) {
      closing = step;
      try {
        await step.close();
      } catch (err) {
        report.err(`sessiond: closing ${nameOf(step)} failed: ${messageOf(err)}`);
      }
    }
    closing = undefined;
    opened.length = 0;
  };
  const signal = options.signal;
  /**
   * Starts `open` unless the start-up was aborted, and waits for it unless it is aborted meanwhile;
   * what `open` opens after an abort is handed to `dispose`.
   */
  const step = <T>(open: () => Promise<T>, dispose: (value: T) => unknown): Promise<T> => {
    if (!signal) return open();
    signal.throwIfAborted();
    const p = open();
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        void p.then(dispose, () => undefined);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      p.then(
        (v) => {
          signal.removeEventListener('abort', onAbort);
          if (signal.aborted) {
            void dispose(v);
            return;
          }
          resolve(v);
        },
        (e: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  };
  const notify = (n: Notice) => {
    options.onNotice?.(n);
    // a model call's end is measured (metrics), not said: one line a step would drown the log
    if (n.type !== 'model_call')
      report.out(describeNotice(n), { notice: n.type, session: n.sessionId, ...('executionId' in n ? { execution: n.executionId } : {}) });
    metrics?.notice(n);
  };
  try {
    let log: EventLog | undefined;
    let where = options.db;
    let snapshots: JetStreamSnapshotStore | undefined;
    let record: (q: QuarantinedMessage) => void = () => undefined;
    let bus: NatsLiveBus | undefined;
    let nats: Sessiond['nats'];
    if (options.nats) {
      const connection = options.nats.connection;
      const nc = await step(
        () => connectNats({ ...connection, waitForServer: true }),
        (late) => late.close(),
      );
      opened.push({ what: 'the NATS connection', close: () => nc.drain().catch(() => nc.close()) });
      // a stored message that is not a valid batch is skipped, said once, and recorded in the database
      const eventLog = await step(
        () =>
          JetStreamEventLog.open({
            connection: nc,
            onQuarantine: (q) => {
              report.err(`sessiond: ${describeQuarantine(q)}`);
              record(q);
            },
          }),
        (late) => late.close(),
      );
      opened.push({ what: 'the event log', close: () => eventLog.close() });
      where = `NATS ${describeNats(connection)} (stream ${eventLog.stream})`;
      nats = { connection: nc, log: eventLog };
      // each event of a tenant's session goes out on the tenant's live subjects too (nats.md, "Tenants")
      bus = new NatsLiveBus(nc, { ownerOf: async (id) => (await engine.execution.status(id)).context.ownedBy });
      // snapshots shared beside the stream (docs/nats.md#snapshots); a stream that differs is refused,
      // and without one (not set up, or not allowed by nats.conf) this worker's own file keeps them
      snapshots = await JetStreamSnapshotStore.open(nc, {
        onDiscarded: (sessionId, reason) =>
          notify({ type: 'error', sessionId, message: `discarded the stored snapshot of session ${sessionId}: ${reason}; folding the session from the log` }),
      }).catch((err: unknown) => {
        if (isSessiondError(err, ErrorCode.InvalidOption)) throw err;
        report.err(`sessiond: no shared snapshots (${messageOf(err)}); keeping snapshots in ${options.db} only`);
        return undefined;
      });
      // every batch this worker commits goes out on its live subjects once, as it is acknowledged
      log = publishCommits(eventLog, bus);
    }
    // a long upgrade of the file (a large one) says how far it got, a line at each tenth
    const upgradeLines = migrationProgress((label, total) =>
      progressLines((line) => report.out(line), `upgrading ${options.db} to ${label}`, 'rows', total),
    ).onProgress;
    // the limits on model calls: one gate per worker, over the store every worker of the deployment shares
    const ownerId = randomIds.next('own');
    let modelCalls: ModelCallGate | undefined;
    if (options.modelCallLimits && !noLimits(options.modelCallLimits)) {
      const limits = options.modelCallLimits;
      const store = await step(
        () => capacityStore(options.db, nats?.connection, upgradeLines),
        (late) => late.close(),
      );
      opened.push({ what: 'the capacity store', close: () => store.close() });
      const gate = await step(
        () =>
          openModelCallGate(store, {
            ownerId,
            limits,
            leaseMs,
            onStricter: (message) => report.err(`sessiond: ${message}`),
            onBackoff: (provider, untilMs, level) => {
              metrics?.modelBackoff(provider);
              report.err(`sessiond: ${provider} answered 429: every worker holds its model calls to it until ${isoTime(untilMs)} (back-off level ${level})`, {
                provider,
                until: isoTime(untilMs),
                level,
              });
            },
          }),
        (late) => late.close(),
      );
      opened.push({ what: 'the limits on model calls', close: () => gate.close() });
      modelCalls = gate;
    }
    // tenants' budgets: on NATS the bucket every worker shares (the SQLite file's own table otherwise)
    const tenantBudgets = nats ? await openTenantBudgets(nats.connection, report) : undefined;
    // large prompt parts and tool results: on NATS the Object Store bucket every worker shares (the SQLite file's own table otherwise)
    const blobs = nats
      ? await step(
          () => openBlobBucket(nats.connection, report),
          () => undefined,
        )
      : undefined;
    const engine = await step(
      () =>
        openEngine({
          file: options.db,
          onMigrationProgress: upgradeLines,
          ownerId,
          ...(tenantBudgets ? { tenantBudgets } : {}),
          ...(blobs ? { blobs } : {}),
          ...(modelCalls ? { modelCalls } : {}),
          runner: options.runner,
          ...(options.blobGraceMs !== undefined ? { blobGraceMs: options.blobGraceMs } : {}),
          ...(options.synchronous ? { synchronous: options.synchronous } : {}),
          leaseMs,
          heartbeatMs,
          ...(options.turnTimeoutMs !== undefined ? { turnTimeoutMs: options.turnTimeoutMs } : {}),
          ...(options.maxRunningTurns !== undefined ? { maxRunningTurns: options.maxRunningTurns } : {}),
          ...(options.limits ? { limits: options.limits } : {}),
          ...(options.urls ? { urls: options.urls } : {}),
          ...(options.prices ? { prices: options.prices } : {}),
          ...(log ? { log } : {}),
          // metrics count what the engine appends, on either log
          ...(metrics || options.decorateLog
            ? {
                decorateLog: (inner: EventLog) => {
                  const decorated = options.decorateLog ? options.decorateLog(inner) : inner;
                  return metrics ? observeAppends(decorated, metrics.appends) : decorated;
                },
              }
            : {}),
          ...(bus ? { bus } : {}),
          ...(snapshots ? { snapshots } : {}),
          onNotice: notify,
        }),
      (late) => late.close(),
    );
    opened.push({ what: 'the engine', close: () => engine.close() });
    report.bind?.({ worker: engine.ownerId });
    record = (q) => recordQuarantine(engine.db, q, systemClock.now());
    if (nats) {
      // deletions by the admin (sessiond delete --nats): caught up before the projector starts, then followed
      const follower = await step(
        () => followAuditStream(nats.connection, nats.log, engine, report),
        (late) => late?.close(),
      );
      if (follower) opened.push({ what: 'the deletions follower', close: () => follower.close() });
    }
    const worker = startWorker(engine.execution, {
      projection: engine.db,
      blobSweep:
        blobSweepMs === 0
          ? false
          : { graceMs: engine.execution.blobGraceMs, intervalMs: blobSweepMs, onSwept: (r) => report.out(`blob sweep: ${describeBlobSweep(r)}`) },
      onEvent: (e) => {
        const line = describeEvent(e);
        if (line) report.out(line, { session: e.sessionId, seq: e.seq, event: e.type, eventId: e.id });
      },
      onFatal: (err) => {
        metrics?.fatal(String((isSessiondError(err) ? err.details['part'] : undefined) ?? 'worker'));
        (options.onFatal ?? ((e: unknown) => report.err(`sessiond: ${messageOf(e)}`)))(err);
      },
      sweep: {
        intervalMs: options.sweepMs ?? DEFAULT_SWEEP_INTERVAL_MS,
        ...(options.wakeBackoffMs !== undefined ? { wakeBackoffMs: options.wakeBackoffMs } : {}),
        onNotice: (n) => {
          options.onNotice?.(n);
          report.out(describeRecovery(n), {
            notice: n.type,
            ...('sessionId' in n ? { session: n.sessionId } : {}),
            ...('executionId' in n ? { execution: n.executionId } : {}),
          });
          metrics?.recovery(n);
        },
      },
    });
    opened.push({ what: () => `the worker, at ${worker.stopping ?? 'its end'}`, close: () => worker.stop() });
    if (options.nats?.commands) {
      const commands = options.nats.commands;
      const cnc = await step(
        () => connectNats({ ...commands.connection, waitForServer: true }),
        (late) => late.close(),
      );
      opened.push({ what: 'the command connection', close: () => cnc.drain().catch(() => cnc.close()) });
      const service = startCommandService(cnc, engine, {
        replyPrefixes: commands.replyPrefixes,
        ...(commands.tenantLimits ? { tenantLimits: commands.tenantLimits } : {}),
        maxPromptBytes: engine.execution.limits.maxPromptBytes,
        maxBlobBytes: engine.execution.limits.maxBlobBytes,
        onError: (err) => report.err(`sessiond: command service: ${messageOf(err)}`),
        // refused requests: a few lines with counts, never one per request
        onRefusalLine: (line) => report.err(`sessiond: command service: ${line}`),
        ...(metrics ? { onRefused: (kind: string) => metrics.commandRefused(kind) } : {}),
      });
      opened.push({ what: 'the command service', close: () => service.close() });
      report.out(
        `  serving commands ${commandVerbs.map((v) => subjects.command(v)).join(', ')} in queue group ${COMMAND_QUEUE}${commands.connection.user ? ` as user ${commands.connection.user}` : ''}, replying only to ${commands.replyPrefixes.map((p) => `${p}.>`).join(', ')}`,
      );
    } else if (options.nats) {
      report.out('  not serving commands: no commands user (give --nats-commands-user and SESSIOND_NATS_COMMANDS_PASS, the commands user of nats.conf)');
    }
    signal?.throwIfAborted();
    // the sessions deleted, as this file records them (on NATS too: the worker applies each one to it), for the inspector's index
    const deletions = sqliteDeletionFeed(engine.db, systemClock, (err) => report.err(`sessiond: inspector: deletions: ${messageOf(err)}`));
    if (options.inspectPort === undefined && !options.nats && options.keepInspectorIndex !== false && !engine.db.memory) {
      const keeper = await keepInspectorIndex({
        log: engine.log,
        db: engine.db,
        clock: systemClock,
        deletions,
        onError: (err) =>
          report.err(`sessiond: inspector index: ${messageOf(err)} (turns go on; a later sessiond inspect reads the log from where the index got)`),
      });
      opened.push({ what: 'the inspector index', close: () => keeper.close() });
    }
    let inspectorUrl: string | undefined;
    if (options.inspectPort !== undefined) {
      let indexWriteFailed = false; // told once
      const inspector = await startInspector({
        log: engine.log,
        sessions: engine,
        // its index beside the snapshots, so a restart starts every view from it (not the whole log)
        index: new SqliteInspectorIndex(engine.db, undefined, (err) => {
          if (indexWriteFailed) return;
          indexWriteFailed = true;
          report.err(`sessiond: inspector: its index could not be written beside the log (${messageOf(err)}); it keeps it in memory instead`);
        }),
        // views near a session's head start from the workers' latest snapshot while the index catches up
        snapshots: snapshots ?? new SqliteSnapshotStore(engine.db, systemClock),
        deletions,
        // the conversation shows answers as they stream: this worker's live bus (on NATS too: its own turns)
        live: (onEvent) => engine.subscribe({}, onEvent),
        port: options.inspectPort,
        ...options.inspectAuth,
        ...(modelCalls ? { capacity: async (id: string) => waitingFor(await modelCalls.view(), id) } : {}),
        onError: (err) => report.err(`sessiond: inspector: ${messageOf(err)}`),
      });
      opened.push({ what: 'the inspector', close: () => inspector.close() });
      inspectorUrl = inspector.url;
    }
    let metricsUrl: string | undefined;
    if (metrics && options.metricsPort !== undefined) {
      const ops = await serveOps(options.metricsPort, { engine, worker, metrics });
      opened.push({ what: 'the metrics server', close: () => ops.close() });
      metricsUrl = ops.url;
    }
    return {
      ownerId: engine.ownerId,
      engine,
      worker,
      where,
      nats,
      inspectorUrl,
      metricsUrl,
      admit: (id, request) => engine.admit(id, request),
      wake: (id) => engine.wake(id),
      status: (id, statusOptions) => engine.status(id, statusOptions),
      follow: (id, handler, followOptions) => engine.follow(id, handler, followOptions),
      events: (id, eventsOptions) => engine.events(id, eventsOptions),
      cancel: (id, reason, executionId, options) => engine.cancel(id, reason, executionId, options),
      dropPending: (id, request) => engine.dropPending(id, request),
      approve: (id, callId, decision) => engine.approve(id, callId, decision),
      deny: (id, callId, decision) => engine.deny(id, callId, decision),
      resolve: (id, name, signal) => engine.resolve(id, name, signal),
      tag: (id, tags) => engine.tag(id, tags),
      budget: (id, request) => engine.budget(id, request),
      list: (filter) => engine.list(filter),
      fork: (sourceId, id, options) => engine.fork(sourceId, id, options),
      awaitIdle: (id) => engine.awaitIdle(id),
      activeTurns: () => engine.activeTurns(),
      subscribe: (filter, handler, subscribeOptions) => engine.subscribe(filter, handler, subscribeOptions),
      get closing() {
        return closing && nameOf(closing);
      },
      async close() {
        const handedBack = engine.activeTurns();
        await closeAll();
        return { handedBack };
      },
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/**
 * Follows the audit stream on NATS: each session the admin deleted loses its rows in this worker's
 * projection (recorded with the stream sequence at the delete, which its projector skips up to) and
 * what this worker caches of it. Read from the start each time (a deletion already recorded in the
 * file is skipped); resolves once caught up. Without an audit stream (set up by an older sessiond)
 * or the right to read it (an older nats.conf) the worker runs without, saying so; a stream that
 * differs from what sessiond needs is refused.
 */
async function followAuditStream(nc: NatsConnection, log: EventLog, engine: Engine, report: HostReport): Promise<DeletionFollower | undefined> {
  try {
    await verifyAuditStream(await jetstreamManager(nc), nc.info?.version);
  } catch (err) {
    if (isSessiondError(err, ErrorCode.InvalidOption)) throw err;
    report.err(`sessiond: not following deletions (${messageOf(err)}); run sessiond setup --nats <url> --nats-user admin to create the audit stream`);
    return undefined;
  }
  const projector = new Projector(engine.db);
  const follower = followDeletions(nc, {
    onDeletion: async (d) => {
      if (
        await applyDeletion(
          engine.db,
          log,
          projector,
          d,
          engine.blobs ? { store: engine.blobs, clock: systemClock, graceMs: engine.execution.blobGraceMs } : undefined,
        )
      ) {
        engine.execution.forget(d.sessionId);
        report.out(`${d.sessionId}  deleted by ${d.deletedBy} (stream sequence ${d.headPosition}): its rows are gone from this worker's projection`, {
          session: d.sessionId,
          notice: 'deleted',
        });
      }
    },
    onError: (err) => report.err(`sessiond: deletions: ${messageOf(err)}`),
  });
  try {
    await follower.caughtUp;
  } catch (err) {
    await follower.close();
    report.err(`sessiond: not following deletions (${messageOf(err)}); check nats.conf lets the worker read stream SESSIOND_AUDIT`);
    return undefined;
  }
  return follower;
}

/** The NATS deployment's tenants' budgets; a deployment set up before the bucket existed runs without them, saying so. */
async function openTenantBudgets(nc: NatsConnection, report: HostReport): Promise<TenantBudgetStore | undefined> {
  try {
    return await jetstreamTenantBudgetStore(nc);
  } catch (err) {
    report.err(`sessiond: no tenants' budgets on this worker (${messageOf(err)})`);
    return undefined;
  }
}

/**
 * The NATS deployment's blob bucket, verified (never created: `sessiond setup` makes it). Missing,
 * or not allowed by nats.conf, the worker runs without, saying so in one line: prompts with large
 * images or files, and tool results over the inline limit, are then refused. A bucket set up
 * differently is refused (as the streams are).
 */
async function openBlobBucket(nc: NatsConnection, report: HostReport): Promise<BlobStore | undefined> {
  try {
    return await ObjectBlobStore.open(nc, { waitMs: BLOB_BUCKET_WAIT_MS });
  } catch (err) {
    if (isSessiondError(err, ErrorCode.InvalidOption)) throw err;
    const why = isSessiondError(err, ErrorCode.NotFound) ? `its stream OBJ_${BLOB_BUCKET} does not exist` : oneLine(messageOf(err));
    report.err(
      `sessiond: no blob store (Object Store bucket ${BLOB_BUCKET}: ${why}): images and files over ${INLINE_PART_BYTES} bytes and tool results over ${TOOL_RESULT_INLINE_BYTES} bytes are refused; run sessiond setup --nats <url> --nats-user admin (and let the worker user use the bucket in nats.conf), then restart this worker`,
    );
    return undefined;
  }
}

/** How long a worker waits for JetStream to answer about the blob bucket at start-up. */
const BLOB_BUCKET_WAIT_MS = 10_000;

/** Where the limits on model calls are kept: the NATS deployment's bucket, or the SQLite file that holds the log. */
async function capacityStore(db: string, nc: NatsConnection | undefined, onProgress: MigrateOptions['onProgress']): Promise<CapacityStore> {
  if (nc) return await jetstreamCapacityStore(nc);
  const file = openDatabase(db);
  try {
    migrate(file, onProgress ? { onProgress } : {});
    return sqliteCapacityStore(file);
  } catch (err) {
    file.close();
    throw err;
  }
}

/** A notice in plain words, on one line (a model server's message may hold newlines). */
export function describeNotice(n: Notice): string {
  return oneLine(noticeText(n));
}

function noticeText(n: Notice): string {
  switch (n.type) {
    case 'claimed':
      return `${n.sessionId}  claimed (execution ${n.executionId})`;
    case 'settled':
      return `${n.sessionId}  turn ${n.outcome}${n.error ? `: ${n.error}` : ''}`;
    case 'claim_lost':
      return `${n.sessionId}  lost its claim on execution ${n.executionId}; stopped the runner`;
    case 'cancelled':
      return `${n.sessionId}  cancelled execution ${n.executionId}`;
    case 'refused':
      return `${n.sessionId}  not taken: ${n.message}`;
    case 'deferred':
      return `${n.sessionId}  waits for room: ${n.running} turns running here (--max-running-turns), ${n.waiting} waiting; another worker may take it`;
    case 'model_retry':
      return `${n.sessionId}  ${describeRetry(n)}`;
    case 'capacity_wait':
      return `${n.sessionId}  a model call waits for room: ${n.scopes.join(', ')} at its limit (sessiond limits shows what runs and waits)`;
    case 'model_call':
      return `${n.sessionId}  model call to ${n.model} (${n.provider}) ${n.errorType ? `failed (${n.errorType})` : 'ended'} after ${(n.durationMs / 1000).toFixed(2)} s`;
    case 'error':
      return `${n.sessionId}  error: ${n.message}`;
  }
}

export function describeEvent(e: SessionEvent): string | undefined {
  switch (e.type) {
    case 'input.admitted':
      return `${e.sessionId}  prompt admitted (${e.payload.delivery}): ${JSON.stringify(promptText(e.payload.prompt).slice(0, 80))}`;
    case 'text.completed':
      return `${e.sessionId}  ${e.payload.text}`;
    case 'execution.cancelled':
      return `${e.sessionId}  execution ${e.payload.executionId} was cancelled`;
    case 'wait.started': {
      const w = e.payload;
      const what =
        w.kind === 'approval'
          ? `approval of call ${w.name} (${w.tool}): sessiond approve|deny ${e.sessionId} ${w.name}`
          : w.kind === 'signal'
            ? `signal ${w.name}${w.until === undefined ? '' : ` until ${isoTime(w.until)}`}: sessiond resolve ${e.sessionId} ${w.name} --data JSON`
            : w.kind === 'session'
              ? `session call ${w.name}: the turn of ${w.child?.sessionId ?? '?'}${w.until === undefined ? '' : ` until ${isoTime(w.until)}`}`
              : `timer ${w.name} until ${isoTime(w.until ?? e.time)}`;
      return `${e.sessionId}  waits for ${what}`;
    }
    case 'wait.resolved':
      return `${e.sessionId}  ${e.payload.kind} ${e.payload.name} ${e.payload.outcome}${e.payload.reason ? `: ${e.payload.reason}` : ''}`;
    default:
      return undefined;
  }
}

export function describeRecovery(n: RecoveryNotice): string {
  switch (n.type) {
    case 'recovered':
      return `${n.sessionId}  recovered expired execution ${n.executionId}; continuation ${n.continuationInputId} admitted${n.partialText > 0 ? `; it goes on from the ${n.partialText} characters of the answer that were recorded` : ''}`;
    case 'wake_attempt':
      return `${n.sessionId}  recovery wake, attempt ${n.attempt}`;
    case 'wait_elapsed':
      return `${n.sessionId}  ${n.kind === 'timer' ? `timer ${n.name} elapsed` : `${n.kind === 'session' ? 'session call' : 'signal'} ${n.name} timed out`}${n.resumed ? '; the turn resumes' : ''}`;
    case 'child_delivered':
      return `${n.sessionId}  session call ${n.name}: ${n.child}'s turn ${n.outcome}, answer delivered${n.resumed ? '; the turn resumes' : ''}`;
    case 'parked':
      return `${n.sessionId}  PARKED: ${n.message}`;
    case 'error':
      return `${n.sessionId}  recovery error: ${n.message}`;
    case 'sweep_failed':
      return `recovery sweep: ${n.message}`;
  }
}
