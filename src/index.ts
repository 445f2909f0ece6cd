/**
 * sessiond's public API. Every export is named here by hand; seams for tests and tools live in
 * `sessiond/internal` (src/internal.ts).
 */
export { openEngine, statusOf, type Engine, type EngineOptions, type SessionStatus } from './engine.ts';
export { startSessiond, type Sessiond, type SessiondOptions, type HostReport } from './host.ts';
export { SessionExecution, CancelledError, DEFAULT_LEASE_MS, DEFAULT_HEARTBEAT_MS, type ExecutionOptions, type ResumeResult, type CancelResult, type Notice } from './execution/session-execution.ts';
export { startWorker, type Worker, type WorkerOptions } from './execution/worker.ts';
export { ClaimLostError, CommandRefusedError } from './execution/errors.ts';
export { RecoverySweeper, DEFAULT_SWEEP_INTERVAL_MS, DEFAULT_MAX_WAKE_ATTEMPTS, DEFAULT_WAKE_BACKOFF_MS, type RecoveryCandidates, type SweeperOptions } from './recovery/sweeper.ts';
export { admitInput, type AdmitRequest, type AdmitReceipt } from './input/admit.ts';
export { echoRunner, type EchoOptions } from './runner/echo.ts';
export type { Runner, RunContext, RunInput, ToolCall, ToolContext } from './runner/types.ts';
export { SqliteEventLog } from './storage/sqlite-event-log.ts';
export { openDatabase, type OpenOptions } from './storage/sqlite.ts';
export { migrate, schemaVersion } from './storage/migrate.ts';
export { SequenceConflictError, type EventLog, type Subscription, type SubscribeOptions } from './events/event-log.ts';
export { catalog, eventTypes, type EventType, type PayloadOf } from './events/catalog.ts';
export type { SessionEvent, DraftEvent } from './events/envelope.ts';
export { encodeEvent, decodeEvent } from './events/codec.ts';
export { LocalLiveBus, type LiveBus, type LiveEvent } from './events/live-bus.ts';
export { SessiondError, ErrorCode, isSessiondError } from './errors.ts';
export { systemClock, ManualClock, type Clock } from './clock.ts';
export { randomIds, sequentialIds, validateId, type IdSource } from './ids.ts';
export { sessionMachine } from './machines/session-machine.ts';
export { hydrate, decide, evolve, stateOf, type SessionSnapshot, type SessionStateValue } from './machines/decider.ts';
export { Refusal, type Command, type Decision } from './machines/commands.ts';
export { auditLog, auditSession, type Violation } from './audit/audit-log.ts';
export { lateWrites, lateWritesOfSession, type LateWrite } from './audit/late-writes.ts';
export { JetStreamEventLog, type JetStreamEventLogOptions } from './nats/jetstream-event-log.ts';
export { subjects, STREAM_NAME } from './nats/subjects.ts';
export { SessiondClient, type SessiondClientOptions, type LiveFilter, type LiveSubscription, type ReplayOptions, type InvalidLiveMessage } from './nats/client.ts';
export { NatsLiveBus, type LiveMessage } from './nats/live-bus.ts';
export { publishCommits, PublishingEventLog } from './events/publishing-log.ts';
export { observeAppends, ObservedEventLog, type AppendObserver } from './events/observed-log.ts';
export { createWorkerMetrics, type WorkerMetrics, type MetricSources } from './observability/metrics.ts';
export { startOpsServer, type OpsServer, type OpsServerOptions } from './observability/http.ts';
export { JetStreamSnapshotStore } from './nats/snapshot-store.ts';
export { startCommandService, type CommandService, type CommandTarget } from './nats/command-service.ts';
export { CommandError, isCommandError, CommandFailureCode, type CommandReply, type AdmitCommand, type StatusReply } from './nats/commands.ts';
export { COMMAND_QUEUE } from './nats/subjects.ts';
export { connectNats, type NatsConnectionOptions } from './nats/connection.ts';
export { startInspector, type Inspector, type InspectorOptions } from './inspector/server.ts';
export { machineToDot, machineToMermaid, renderSvg } from './inspector/chart.ts';
export { Projector, rebuildProjection, projectionHash, sessionRows, listSessions } from './projector/index.ts';
export { ExportWriter, readExport, CorruptExportError } from './export/export-file.ts';
