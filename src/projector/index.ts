/**
 * The projector's public names, listed by hand. Everything else in src/projector is internal.
 */
export { Projector, DEFAULT_PROJECTOR_NAME, type ProjectorOptions, type ApplyOptions, type ApplyResult, type FollowOptions } from './projector.ts';
export {
  rebuildProjection,
  resetProjection,
  projectionHash,
  projectionRows,
  DEFAULT_REBUILD_PAGE_SIZE,
  type RebuildOptions,
  type RebuildResult,
  type ProjectionTable,
} from './rebuild.ts';
export { pendingWakes, expiredExecutions, sessionRows, listSessions, type SessionRows, type SessionSummary } from './queries.ts';
export { ProjectionError } from '../errors.ts';
export {
  parseMessage,
  type MessageRow,
  type MessageType,
  type MessageData,
  type UserData,
  type AssistantData,
  type AssistantStatus,
  type TextPart,
  type ToolData,
  type ToolStatus,
  type CompactionData,
} from './message-rows.ts';
export type { ExecutionRow } from './execution-rows.ts';
export type { InputRow } from './input-rows.ts';
export type { RecoveryRow } from './recovery-rows.ts';
