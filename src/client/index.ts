/**
 * `sessiond/client`: the client of a NATS deployment alone, for a process that talks to sessiond
 * workers and runs none. It loads neither better-sqlite3 nor xstate (test/package/pack.test.ts loads
 * it from the packed package with both removed): nothing it imports at run time may reach src/storage,
 * src/machines' machine or the engine. Every name here is also exported by `sessiond` and documented
 * in docs/api.md; the door's list is there too ("Entry points").
 */
// the client
export {
  SessiondClient,
  type SessiondClientOptions,
  type LiveFilter,
  type LiveSubscription,
  type ReplayOptions,
  type InvalidLiveMessage,
} from './client.ts';
export type { LiveMessage } from '../nats/live-bus.ts';
export type { AdmitReceipt, AdmitRequest } from '../input/admit.ts';
export type { DropPendingRequest, DropPendingResult } from '../input/drop.ts';
export type { CancelResult, ResumeResult } from '../execution/session-execution.ts';
// the interface the client implements (as the engine does)
export type {
  Sessions,
  SessionStatus,
  StatusOptions,
  WakeResult,
  FollowOptions,
  EventsOptions,
  EventSubscription,
  SessionEventHandler,
} from '../sessions/sessions.ts';
export { MAX_TAGS, type Tags, type TagChanges, type TagResult } from '../events/tags.ts';
export type { BudgetRequest, BudgetResult } from '../sessions/budget.ts';
export { MAX_PROMPT_PARTS, promptText, type Prompt, type PromptPart } from '../events/prompt.ts';
export type { ForkOptions, ForkResult } from '../sessions/fork-result.ts';
export { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, type ListFilter, type SessionPage, type SessionListItem } from '../sessions/list.ts';
// the command protocol
export {
  CommandError,
  isCommandError,
  CommandFailureCode,
  type CommandReply,
  type AdmitCommand,
  type StatusReply,
} from '../nats/command-protocol.ts';

export { subjects, STREAM_NAME, COMMAND_QUEUE } from '../nats/subjects.ts';
export { connectNats, type NatsConnectionOptions } from '../nats/connection.ts';
// the errors a client meets
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
} from '../errors.ts';
// events, as replay and the live feed hand them over
export type { SessionEvent } from '../events/envelope.ts';
export type { EventType, PayloadOf } from '../events/catalog.ts';
export { decodeEvent } from '../events/codec.ts';
