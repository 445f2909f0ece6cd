/**
 * A worker's Prometheus metrics (prom-client), counted from what the worker itself sees: the events it
 * commits (`observeAppends` on its log), the execution service's and the sweep's notices, and gauges
 * read on each scrape (docs/operating.md#metrics-and-health).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ErrorCode, isSequenceConflict } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { Usage } from '../events/catalog.ts';
import type { AppendObserver } from '../events/observed-log.ts';
import type { Notice } from '../execution/session-execution.ts';
import type { RecoveryNotice } from '../recovery/sweeper.ts';
import { traceCounts } from './trace-counts.ts';

/** What the gauges read when scraped. */
export interface MetricSources {
  /** Sessions with a turn running in this worker. */
  liveSessions(): number;
  /** Inputs admitted and not yet promoted (from the projection). */
  pendingInputs(): number | Promise<number>;
  /** Log positions the projector is behind the log's head (0 without a projector). */
  projectorLag(): number | Promise<number>;
  /** Stored messages skipped as unreadable so far. */
  quarantined(): number | Promise<number>;
}

export interface WorkerMetrics {
  readonly registry: Registry;
  /** Counts appends, conflicts and append latency, and the facts in what was committed. */
  readonly appends: AppendObserver;
  /** The execution service's notices (lease losses, model calls' durations). */
  notice(n: Notice): void;
  /** The recovery sweep's notices (sweep failures). */
  recovery(n: RecoveryNotice): void;
  /** A part of the worker stopped (projector, subscription). */
  fatal(part: string): void;
  /** A provider answered 429 and the fleet backs off from it (the limits on model calls). */
  modelBackoff(provider: string): void;
  /** A command request refused for what its sender did, by kind (`invalid_input`, `permission`): the command service's `onRefused`. */
  commandRefused(kind: string): void;
  watch(sources: MetricSources): void;
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const TURN_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800];
/** Turns in flight remembered for the turn-duration histogram (a worker runs far fewer at once). */
const MAX_OPEN_TURNS = 100_000;

export function createWorkerMetrics(options: { log?: string; defaultMetrics?: boolean } = {}): WorkerMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ log: options.log ?? 'sessiond' });
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'sessiond_' });
  const counter = (name: string, help: string, labelNames: string[] = []) => new Counter({ name, help, labelNames, registers: [registry] });
  const appends = counter('sessiond_log_appends_total', 'Appends this worker made to the event log, by result (committed, conflict, failed).', ['result']);
  const appendSeconds = new Histogram({
    name: 'sessiond_log_append_seconds',
    help: 'Time from an append call to its acknowledgement.',
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const turnsStarted = counter('sessiond_turns_started_total', 'Turns this worker claimed.');
  const turnsSettled = counter('sessiond_turns_settled_total', 'Turns this worker settled, by outcome (succeeded, failed, released).', ['outcome']);
  const turnsCancelled = counter('sessiond_turns_cancelled_total', 'Cancellations this worker wrote.');
  const turnSeconds = new Histogram({
    name: 'sessiond_turn_seconds',
    help: 'Time from a claim to its settlement, for turns claimed and settled by this worker.',
    buckets: TURN_BUCKETS,
    registers: [registry],
  });
  const renewals = counter('sessiond_lease_renewals_total', 'Lease renewals this worker wrote.');
  const leasesLost = counter('sessiond_leases_lost_total', 'Turns this worker stopped because its claim was lost (lease expired, fenced).');
  const recoveries = counter('sessiond_recoveries_total', 'Expired executions this worker recovered.');
  const wakes = counter('sessiond_recovery_wakes_total', 'Recovery wake attempts this worker recorded.');
  const parked = counter('sessiond_recovery_wakes_parked_total', 'Recovery wakes given up (parked) by this worker.');
  const sweepFailures = counter('sessiond_sweep_failures_total', 'Recovery sweep passes that failed as a whole.');
  const stopped = counter('sessiond_worker_parts_stopped_total', 'Parts of the worker that stopped for good (projector, subscription), by part.', ['part']);
  const tokens = counter(
    'sessiond_model_tokens_total',
    'Model tokens recorded by the turns this worker ran, by kind (input, cached_input, output, reasoning; cached input is part of input, reasoning part of output).',
    ['kind'],
  );
  const cost = counter(
    'sessiond_model_cost_usd_total',
    'US dollars the model calls of the turns this worker ran cost, where a price table was configured (--prices).',
  );
  // the GenAI semantic conventions' client metric, per model call (its buckets are the conventions')
  const tokenUsage = new Histogram({
    name: 'gen_ai_client_token_usage',
    help: 'Tokens per model call of the turns this worker ran (OpenTelemetry GenAI gen_ai.client.token.usage), by gen_ai_token_type (input, output).',
    labelNames: ['gen_ai_operation_name', 'gen_ai_token_type'],
    buckets: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
    registers: [registry],
  });
  // and its duration per model call, from the call's first request to its step's end (the conventions' buckets)
  const operationDuration = new Histogram({
    name: 'gen_ai_client_operation_duration_seconds',
    help: 'Seconds per model call of the turns this worker ran, from its first request to its end, retries included (OpenTelemetry GenAI gen_ai.client.operation.duration); error_type set when it failed.',
    labelNames: ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_request_model', 'gen_ai_response_model', 'error_type'],
    buckets: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
    registers: [registry],
  });
  const countUsage = (u: Usage | undefined) => {
    if (!u) return;
    tokenUsage.observe({ gen_ai_operation_name: 'chat', gen_ai_token_type: 'input' }, u.inputTokens);
    tokenUsage.observe({ gen_ai_operation_name: 'chat', gen_ai_token_type: 'output' }, u.outputTokens);
    tokens.inc({ kind: 'input' }, u.inputTokens);
    tokens.inc({ kind: 'output' }, u.outputTokens);
    if (u.cachedInputTokens) tokens.inc({ kind: 'cached_input' }, u.cachedInputTokens);
    if (u.reasoningTokens) tokens.inc({ kind: 'reasoning' }, u.reasoningTokens);
    if (u.costUsd) cost.inc(u.costUsd);
  };
  const budgetStops = counter(
    'sessiond_budget_stops_total',
    "Turns this worker stopped before a model call because a budget was spent, by scope (session, or tenant: all of a tenant's sessions).",
    ['scope'],
  );
  const refused = counter(
    'sessiond_commands_refused_total',
    'Command requests this worker refused for what the sender did (malformed, invalid ids, foreign reply subjects), by kind; logged at a limited rate.',
    ['kind'],
  );

  const callWaits = counter('sessiond_model_call_waits_total', "Model calls of this worker's turns that waited for room under the deployment's limits.");
  const backoffs = counter('sessiond_model_backoffs_total', 'Times a provider answered 429 to this worker and the fleet backed off from it, by provider.', [
    'provider',
  ]);

  // what tracing lost in this process (src/observability/trace-counts.ts), read on each scrape
  const fromCounts = (name: string, help: string, read: () => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  fromCounts(
    'sessiond_trace_spans_dropped_total',
    'Spans dropped because the export queue was full (a slow or unreachable collector).',
    () => traceCounts.dropped,
  );
  fromCounts('sessiond_trace_spans_export_failed_total', 'Spans the OTLP exporter could not deliver to the collector.', () => traceCounts.exportFailed);
  fromCounts(
    'sessiond_traceparent_invalid_total',
    'W3C traceparent values given with an input and ignored as malformed.',
    () => traceCounts.invalidTraceparent,
  );

  const claimedAt = new Map<string, number>();
  const committed = (events: SessionEvent[], ms: number) => {
    appends.inc({ result: 'committed' });
    appendSeconds.observe(ms / 1000);
    for (const e of events) {
      switch (e.type) {
        case 'execution.claimed':
          turnsStarted.inc();
          if (claimedAt.size >= MAX_OPEN_TURNS) claimedAt.delete(claimedAt.keys().next().value!);
          claimedAt.set(e.payload.executionId, performance.now());
          break;
        case 'execution.settled': {
          turnsSettled.inc({ outcome: e.payload.outcome });
          // BudgetExceededError's words name the scope first: "Tenant acme (...) has spent" or "Session ..."
          if (e.payload.error?.type === ErrorCode.BudgetExceeded)
            budgetStops.inc({ scope: e.payload.error.message.startsWith('Tenant ') ? 'tenant' : 'session' });
          const t0 = claimedAt.get(e.payload.executionId);
          if (t0 !== undefined) {
            turnSeconds.observe((performance.now() - t0) / 1000);
            claimedAt.delete(e.payload.executionId);
          }
          break;
        }
        case 'step.ended':
        case 'compaction.completed':
          countUsage(e.payload.usage);
          break;
        case 'execution.cancelled':
          turnsCancelled.inc();
          break;
        case 'execution.renewed':
          renewals.inc();
          break;
        case 'recovery.started':
          recoveries.inc();
          break;
        case 'recovery.wake_requested':
          wakes.inc();
          break;
        case 'recovery.wake_failed':
          if (e.payload.parked) parked.inc();
          break;
        default:
          break;
      }
    }
  };

  return {
    registry,
    appends: {
      committed,
      failed: (err, ms) => {
        appends.inc({ result: isSequenceConflict(err) ? 'conflict' : 'failed' });
        appendSeconds.observe(ms / 1000);
      },
    },
    modelBackoff: (provider) => backoffs.inc({ provider }),
    notice: (n) => {
      if (n.type === 'capacity_wait') callWaits.inc();
      if (n.type === 'model_call')
        operationDuration.observe(
          {
            gen_ai_operation_name: 'chat',
            gen_ai_provider_name: n.provider,
            gen_ai_request_model: n.model,
            ...(n.responseModel ? { gen_ai_response_model: n.responseModel } : {}),
            ...(n.errorType ? { error_type: n.errorType } : {}),
          },
          n.durationMs / 1000,
        );
      if (n.type !== 'claim_lost') return;
      leasesLost.inc();
      claimedAt.delete(n.executionId);
    },
    recovery: (n) => {
      if (n.type === 'sweep_failed') sweepFailures.inc();
    },
    fatal: (part) => stopped.inc({ part }),
    commandRefused: (kind) => refused.inc({ kind }),
    watch(sources) {
      const gauge = (name: string, help: string, read: () => number | Promise<number>) =>
        new Gauge({
          name,
          help,
          registers: [registry],
          async collect() {
            this.set(await read());
          },
        });
      gauge('sessiond_live_sessions', 'Sessions with a turn running in this worker.', sources.liveSessions);
      gauge('sessiond_inputs_pending', "Inputs admitted and not yet promoted, in this worker's projection.", sources.pendingInputs);
      gauge('sessiond_projector_lag_positions', "Log positions the projector is behind the log's head.", sources.projectorLag);
      gauge('sessiond_quarantined_messages', 'Stored messages skipped as unreadable.', sources.quarantined);
    },
  };
}
