/**
 * sessiond's public API: what a user calls. Every export is named here by hand and documented in
 * docs/api.md (a test checks both lists agree). The parts a worker is composed of, and seams for
 * tests and tools, live in `sessiond/internal` (src/internal.ts) and may change between versions.
 */
// a complete worker, and the small embedded core
export { startSessiond, type Sessiond, type SessiondOptions, type HostReport } from './host.ts';
export { openEngine, type Engine, type EngineOptions } from './engine.ts';
export type {
  Sessions,
  DecisionOptions,
  SessionStatus,
  StatusOptions,
  WakeResult,
  FollowOptions,
  EventsOptions,
  EventSubscription,
  SessionEventHandler,
} from './sessions/sessions.ts';
export { logSessions, type LogSessionsOptions } from './sessions/log-sessions.ts';
export { statusOf } from './sessions/status.ts';
export { MAX_TAGS, type Tags, type TagChanges, type TagResult } from './events/tags.ts';
export type { BudgetRequest, BudgetResult } from './sessions/budget.ts';
export type { TenantBudgetRequest, TenantBudgetResult, TenantBudgetView } from './sessions/tenant-budget.ts';
export { MAX_PROMPT_PARTS, promptText, type Prompt, type PromptPart } from './events/prompt.ts';
export type { ForkOptions, ForkResult } from './sessions/fork-result.ts';
export type { DeleteOptions, DeletionRecord } from './sessions/delete.ts';
export { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, type ListFilter, type SessionPage, type SessionListItem } from './sessions/list.ts';
export type { SessionView } from './machines/session-view.ts';
export type { Wait } from './machines/session-context.ts';
export { DEFAULT_LEASE_MS, DEFAULT_HEARTBEAT_MS, type Notice } from './execution/session-execution.ts';
export { DEFAULT_SWEEP_INTERVAL_MS, type RecoveryNotice } from './recovery/sweeper.ts';
export type { AdmitRequest, AdmitReceipt } from './input/admit.ts';
export type { DropPendingRequest, DropPendingResult } from './input/drop.ts';
export type { CancelResult, ResumeResult } from './execution/session-execution.ts';
export type { ResolveResult } from './input/resolve.ts';
// runners
export { echoRunner, type EchoOptions } from './runner/echo.ts';
export type {
  Runner,
  RunContext,
  RunInput,
  ToolCall,
  ToolContext,
  ToolProgress,
  ApprovalCall,
  SignalResult,
  SessionCall,
  SessionCallResult,
} from './runner/types.ts';
export { openaiRunner, DEFAULT_OPENAI_BASE_URL, type OpenAIRunnerOptions } from './runner/model/openai.ts';
export { modelRunner, DEFAULT_MAX_STEPS, DEFAULT_MAX_PARALLEL_TOOLS, type ModelRunnerOptions } from './runner/model/model-runner.ts';
export { defineTool, loadTools, jsonInput, type JsonInput, type ModelTool, type ToolRegistry } from './runner/model/tools.ts';
export { defineSessionTool, type SessionToolSpec } from './runner/model/session-tools.ts';
export { loadMcpConfig, DEFAULT_MCP_TIMEOUT_MS, type McpConfig } from './runner/mcp/config.ts';
export { mcpServers, type McpServers, type McpServersOptions } from './runner/mcp/servers.ts';
export { DEFAULT_RETRY, type RetryPolicy } from './runner/model/retry.ts';
export type { TranscriptItem, TranscriptPart } from './events/transcript.ts';
export type { Continuation, Usage } from './events/catalog.ts';
// errors
export {
  SessiondError,
  ErrorCode,
  ErrorKind,
  kindOf,
  isSessiondError,
  ConnectionError,
  PermissionError,
  NotFoundError,
  InvalidInputError,
  CorruptDataError,
  TimeoutError,
} from './errors.ts';
export {
  ClaimLostError,
  CommandRefusedError,
  CancelledError,
  TurnTimeoutError,
  StepLimitError,
  BudgetExceededError,
  WaitingError,
  SequenceConflictError,
  ModelRequestError,
  CorruptExportError,
} from './errors.ts';
export { Refusal } from './machines/commands.ts';
// logs
export type { EventLog, Subscription, SubscribeOptions } from './events/event-log.ts';
export { SqliteEventLog } from './storage/sqlite/sqlite-event-log.ts';
export { openDatabase, type OpenOptions } from './storage/sqlite/database.ts';
export { migrate, schemaVersion } from './storage/sqlite/migrate.ts';
export { JetStreamEventLog, type JetStreamEventLogOptions } from './nats/jetstream-event-log.ts';
export { connectNats, type NatsConnectionOptions } from './nats/connection.ts';
// events
export { catalog, eventTypes, type EventType, type PayloadOf } from './events/catalog.ts';
export type { SessionEvent, DraftEvent } from './events/envelope.ts';
export { encodeEvent, decodeEvent } from './events/codec.ts';
export { LocalLiveBus, type LiveBus, type LiveEvent } from './events/live-bus.ts';
// the client of a NATS deployment
export {
  SessiondClient,
  type SessiondClientOptions,
  type LiveFilter,
  type LiveSubscription,
  type ReplayOptions,
  type InvalidLiveMessage,
} from './client/client.ts';
export type { LiveMessage } from './nats/live-bus.ts';
export { CommandError, isCommandError, CommandFailureCode, type CommandReply, type AdmitCommand, type StatusReply } from './nats/command-protocol.ts';
export { subjects, STREAM_NAME, COMMAND_QUEUE } from './nats/subjects.ts';
// the HTTP and SSE gateway
export { startGateway, type GatewayOptions, type Gateway } from './gateway/server.ts';
export { engineLive, natsLive } from './gateway/live.ts';
export type { LiveSource } from './gateway/event-stream.ts';
export { parseTokens, type TokenTable, type Grant } from './gateway/tokens.ts';
export type { Quotas } from './gateway/quotas.ts';
export type { GatewayLimits } from './gateway/quota-checks.ts';
// the state machine, for charts and tests
export { sessionMachine } from './machines/session-machine.ts';
export { stateOf, type SessionSnapshot, type SessionStateValue } from './machines/decider.ts';
// checks, projection, export
export { auditLog, auditSession, type Violation } from './audit/audit-log.ts';
export { rebuildProjection, projectionHash, sessionRows, listSessions } from './projector/index.ts';
export { ExportWriter, readExport } from './export/export-file.ts';
// clock and ids (inject them for deterministic tests)
export { systemClock, ManualClock, type Clock } from './clock.ts';
export { randomIds, sequentialIds, validateId, type IdSource } from './ids.ts';
