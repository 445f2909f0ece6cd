/**
 * The parts a worker is composed of, and seams for tests, tools and the inspector: not part of the
 * stable API (`sessiond/internal`). `startSessiond` (the public entry) wires them; use them to build
 * something it does not offer, knowing they may change between versions. Its runtime imports stay
 * within the package's dependencies (no uvu): the contract suites, fixtures and NATS harness it once
 * re-exported are `sessiond/testing` (src/testing/index.ts).
 */
export { SessionExecution, type ExecutionOptions, type ResumeResult, type CancelResult } from './execution/session-execution.ts';
export { startWorker, type Worker, type WorkerOptions } from './execution/worker.ts';
export { RecoverySweeper, DEFAULT_MAX_WAKE_ATTEMPTS, DEFAULT_WAKE_BACKOFF_MS, type RecoveryCandidates, type SweeperOptions } from './recovery/sweeper.ts';
export { admitInput } from './input/admit.ts';
export { CommandHandler } from './execution/command-handler.ts';
export { createRunRegistry, localRun, whenIdle } from './execution/registry.ts';
export { hydrate, decide, evolve } from './machines/decider.ts';
export type { Command, Decision } from './machines/commands.ts';
export { foldContext, initialContext, leaseLive, type SessionContext, type ExecutionState } from './machines/session-context.ts';
export { decisionFor } from './machines/session-machine.ts';
export { lateWrites, lateWritesOfSession, type LateWrite } from './audit/late-writes.ts';
export { NatsLiveBus } from './nats/live-bus.ts';
export { publishCommits, PublishingEventLog } from './events/publishing-log.ts';
export { observeAppends, ObservedEventLog, type AppendObserver } from './events/observed-log.ts';
export { createWorkerMetrics, type WorkerMetrics, type MetricSources } from './observability/metrics.ts';
export { startOpsServer, type OpsServer, type OpsServerOptions } from './observability/http.ts';
export { JetStreamSnapshotStore } from './nats/snapshot-store.ts';
export { startCommandService, type CommandService, type CommandTarget } from './nats/command-service.ts';
export { startInspector, type Inspector, type InspectorOptions } from './inspector/server.ts';
export { MemoryInspectorIndex, type InspectorIndexStore } from './inspector/index-store.ts';
export { SqliteInspectorIndex } from './inspector/sqlite-index.ts';
export { machineToDot, machineToMermaid, renderSvg } from './inspector/chart.ts';
export { Projector } from './projector/index.ts';
export { flushAsync } from './clock.ts';
export type { CapacityWait } from './sessions/sessions.ts';
export type { ModelCallSlot, ModelInput } from './runner/types.ts';
export { openModelCallGate, readCapacity } from './capacity/gate.ts';
export type { ModelCallGate, ModelCallGateOptions, CapacityView, CallRequest, CallSlot, WaitingCall } from './capacity/gate.ts';
export { loadCallLimits, parseCallLimits, mergeCallLimits, maxModelCalls } from './capacity/limits-file.ts';
export type { CallLimits } from './capacity/limits-file.ts';
export type { CapacityStore } from './capacity/store.ts';
export { sqliteCapacityStore } from './capacity/sqlite-capacity-store.ts';
export { jetstreamCapacityStore } from './capacity/kv-capacity-store.ts';
export type { TenantBudgetStore } from './budget/tenant-store.ts';
export type { TenantBudget } from './budget/tenant.ts';
export { changeTenantBudget, countCall } from './budget/tenant.ts';
export { sqliteTenantBudgetStore } from './budget/sqlite-tenant-budget-store.ts';
export { jetstreamTenantBudgetStore } from './budget/kv-tenant-budget-store.ts';
export type { BlobStore, BlobRef, StoredBlob, PutBlobOptions, BlobSource } from './blobs/blob-store.ts';
export { DEFAULT_MAX_BLOB_BYTES } from './blobs/blob-store.ts';
export type { BlobGrants } from './blobs/blob-grants.ts';
export { SqliteBlobStore } from './storage/sqlite/sqlite-blob-store.ts';
export { ObjectBlobStore, setupBlobBucket, BLOB_BUCKET } from './nats/object-blob-store.ts';
