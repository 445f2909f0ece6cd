/**
 * The command protocol on `sessiond.cmd.<verb>` (NATS request/reply, UTF-8 JSON bodies), shared by
 * the command service and the client: request and reply types, `CommandError` and its codes, the
 * size and depth limits. Every verb's fields and replies: docs/protocol.md#commands.
 */
import { MAX_ID_LENGTH } from '../ids.ts';
import { ErrorCode, MAX_ECHO_CHARS, SessiondError, boundText, echo } from '../errors.ts';
import type { AdmitReceipt } from '../input/admit.ts';
import type { DropPendingResult } from '../input/drop.ts';
import type { ResolveResult } from '../input/resolve.ts';
import type { Delivery, Prompt } from '../events/catalog.ts';
import type { CancelResult } from '../execution/session-execution.ts';
import type { SessionStatus, WakeResult } from '../sessions/sessions.ts';
import type { CommandVerb } from './subjects.ts';
import type { SessionStateValue } from '../machines/decider.ts';
import type { TagResult } from '../events/tags.ts';
import type { BudgetResult } from '../sessions/budget.ts';
import type { ForkResult } from '../sessions/fork-result.ts';
import type { SessionPage } from '../sessions/list.ts';
import type { SessionEvent } from '../events/envelope.ts';

/** Failure codes of the protocol itself (beyond sessiond's `ErrorCode`). */
export const CommandFailureCode = {
  /** The body is not JSON, not an object, or has unknown or mistyped fields. */
  BadRequest: 'bad_request',
  /** status, wake or cancel on a session that has no events. */
  UnknownSession: 'unknown_session',
  /** A verb no worker serves. */
  UnknownCommand: 'unknown_command',
  /** The worker failed unexpectedly; the message carries its error. */
  Internal: 'internal',
  /** Client side: no worker subscribed to the command subject. */
  NoWorker: 'no_worker',
  /** Client side: no reply within the request timeout (the command may or may not have run). */
  Timeout: 'timeout',
  /** Client side: nats.conf does not let this user send the command. */
  PermissionDenied: 'permission_denied',
} as const;
export type CommandFailure = ErrorCode | (typeof CommandFailureCode)[keyof typeof CommandFailureCode];

export interface AdmitCommand {
  sessionId: string;
  /** A string, or a list of parts (text, images, files, JSON: `PromptPart`). */
  prompt: Prompt;
  id?: string;
  delivery?: Delivery;
  wake?: boolean;
  /** A scheduled prompt: no turn takes it before this time (ms since the epoch). */
  notBefore?: number;
  /** Tags for the session (merged into those it has). */
  tags?: Record<string, string>;
  /** Who admits: the session's owner when this creates it; another owner's session answers not_found (sessions/owner.ts). */
  owner?: string;
  /** The caller's W3C trace context: the turn that runs the prompt is its child (a malformed one is ignored). */
  traceparent?: string;
}
export interface WakeCommand {
  sessionId: string;
}
/** `executionId`: cancel that execution only; the client sends the one it saw in progress, so a resent or late cancel never stops a later turn. */
export interface CancelCommand {
  sessionId: string;
  reason?: string;
  executionId?: string;
  /** Who cancels (recorded in the event). */
  actor?: string;
}
/** `pendingFrom`: the index of the first pending input to list (pages of `PENDING_PAGE`; default 0). */
export interface StatusCommand {
  sessionId: string;
  pendingFrom?: number;
}
/** Drops pending inputs unrun (all the users' inputs still waiting, or those named). */
export interface DropCommand {
  sessionId: string;
  inputIds?: string[];
  reason?: string;
  /** Who drops them (recorded in the event). */
  actor?: string;
}

/**
 * A person's decision on a call the turn waits for (`kind: 'approval'`, `name`: the call id,
 * `outcome`: approved or denied), or a signal's value (`kind: 'signal'`, outcome delivered, `data`).
 */
export interface ResolveCommand {
  sessionId: string;
  kind: 'approval' | 'signal';
  name: string;
  outcome: 'approved' | 'denied' | 'delivered';
  reason?: string;
  data?: unknown;
  /** Who decides or delivers (recorded in the event). */
  actor?: string;
}

/** Changes a session's tags: a value sets a key, null removes it. */
export interface TagCommand {
  sessionId: string;
  tags: Record<string, string | null>;
}
/**
 * Shows a session's budget and spend; with `tokens`, `costUsd` (null removes a limit) or `reset`,
 * changes it first. Taken on the trusted subject only (`sessiond.cmd.budget`): a tenant's answers
 * `permission_denied`.
 */
export interface BudgetCommand {
  sessionId: string;
  tokens?: number | null;
  costUsd?: number | null;
  reset?: boolean;
  actor?: string;
}
/** Starts `sessionId` as a fork of `source` at the settled sequence `at` (default the source's last). */
export interface ForkCommand {
  sessionId: string;
  source: string;
  at?: number;
  tags?: Record<string, string>;
  /** Who forks: another owner's source answers not_found; the fork gets the source's owner, or this one. */
  owner?: string;
}
/** A page of sessions (the only command without a session id): `ListFilter`'s fields. */
export interface ListCommand {
  state?: SessionStateValue;
  waiting?: boolean;
  tags?: Record<string, string>;
  idPrefix?: string;
  updatedSince?: number;
  /** Only sessions this owner reaches (its own, and those with no owner). */
  reachableBy?: string;
  /** Only the children of this session (those it last called). */
  calledBy?: string;
  limit?: number;
  after?: string;
}

/**
 * A page of a session's committed events after `afterSeq` (default 0), at most `limit` (default and
 * most `EVENTS_PAGE`), fewer when the reply would pass the server's max_payload; `more` says a next
 * page may follow (ask again after the last seq).
 */
export interface EventsCommand {
  sessionId: string;
  afterSeq?: number;
  limit?: number;
}
/** Most events of one `events` reply. */
export const EVENTS_PAGE = 500;

/**
 * One chunk of a blob upload (no session: a blob is referenced by a prompt admitted after it). A
 * blob of at most `MAX_UPLOAD_CHUNK_BYTES` goes in one request; a larger one in chunks of at most
 * that, in order, each at the `offset` where the previous ended, with the same random `uploadId`
 * (8-64 letters, digits, _ or -). The last chunk carries `sha256`: the worker then assembles the
 * chunks it staged, checks their hash, size and media type and answers the reference. `size`, the
 * whole blob's bytes, is required on the last chunk and may be sent on every chunk: one over the
 * worker's limit is refused at once. The uploader may then reference the blob in admissions for an
 * hour: a tenant its own; on the trusted subjects the `owner` given (the one the admission will name).
 */
export interface UploadCommand {
  uploadId: string;
  offset: number;
  /** The chunk's bytes, base64. */
  data: string;
  mediaType: string;
  size?: number;
  /** On the last chunk only: the whole blob's SHA-256, lower-case hex. */
  sha256?: string;
  /** On the last chunk: the owner that may then reference the blob (trusted subjects; a tenant's is itself). */
  owner?: string;
}
/** Most bytes of one upload chunk (before base64): its request stays well under NATS's 1 MB max_payload. */
export const MAX_UPLOAD_CHUNK_BYTES = 512 * 1024;
/** Most bytes of an upload request: a chunk in base64 and the other fields. */
export const MAX_UPLOAD_REQUEST_BYTES = Math.ceil(MAX_UPLOAD_CHUNK_BYTES / 3) * 4 + 4 * 1024;

/**
 * A chunk of a blob a session references, from `offset` (default 0): answered only when the caller
 * may read the session and one of its events references the blob; otherwise `not_found`, the same
 * answer whether the session, the reference or the blob is missing. `seq`: the event that
 * references it, as the first reply says (the worker then reads that event only, not the session's).
 */
export interface BlobCommand {
  sessionId: string;
  sha256: string;
  offset?: number;
  seq?: number;
}
/** Most bytes of one `blob` reply chunk (before base64). */
export const MAX_BLOB_READ_BYTES = 512 * 1024;

/** A blob as an event refers to it (blobs/blob-store.ts). */
export interface BlobReference {
  sha256: string;
  size: number;
  mediaType: string;
}

export type { WakeResult } from '../sessions/sessions.ts';
/** The `status` reply: the session's `SessionStatus`, the same shape every `Sessions` answers with. */
export type StatusReply = SessionStatus;
export { EXECUTION_INPUTS_SHOWN } from '../sessions/sessions.ts';

export interface CommandRequests {
  admit: AdmitCommand;
  wake: WakeCommand;
  cancel: CancelCommand;
  status: StatusCommand;
  drop: DropCommand;
  resolve: ResolveCommand;
  tag: TagCommand;
  budget: BudgetCommand;
  list: ListCommand;
  fork: ForkCommand;
  events: EventsCommand;
  upload: UploadCommand;
  blob: BlobCommand;
}
export interface CommandResults {
  admit: { receipt: AdmitReceipt };
  wake: { result: WakeResult };
  cancel: { result: CancelResult };
  status: StatusReply;
  drop: { result: DropPendingResult };
  resolve: { result: ResolveResult };
  tag: { result: TagResult };
  budget: { result: BudgetResult };
  list: SessionPage;
  fork: { result: ForkResult };
  events: { events: SessionEvent[]; more: boolean };
  /** Not the last chunk: `received`, the bytes staged so far. The last: `blob`, the reference to send in a prompt part. */
  upload: { received: number; blob?: BlobReference };
  /** `data`: the chunk in base64, from `offset`; `more` when bytes follow it; `seq`: the event that references it (workers before it sent none). */
  blob: { sha256: string; size: number; mediaType: string; offset: number; data: string; more: boolean; seq?: number };
}

export interface ErrorBody {
  code: CommandFailure;
  message: string;
  details?: Record<string, unknown>;
}
export type CommandReply<V extends CommandVerb> = ({ ok: true } & CommandResults[V]) | { ok: false; error: ErrorBody };

/** The fields each request may carry (anything else is refused as a likely typo). */
export const requestFields: Record<CommandVerb, readonly string[]> = {
  admit: ['sessionId', 'prompt', 'id', 'delivery', 'wake', 'notBefore', 'tags', 'owner'],
  wake: ['sessionId'],
  cancel: ['sessionId', 'reason', 'executionId', 'actor'],
  status: ['sessionId', 'pendingFrom'],
  drop: ['sessionId', 'inputIds', 'reason', 'actor'],
  resolve: ['sessionId', 'kind', 'name', 'outcome', 'reason', 'data', 'actor'],
  tag: ['sessionId', 'tags'],
  budget: ['sessionId', 'tokens', 'costUsd', 'reset', 'actor'],
  list: ['state', 'waiting', 'tags', 'idPrefix', 'updatedSince', 'reachableBy', 'calledBy', 'limit', 'after'],
  fork: ['sessionId', 'source', 'at', 'tags', 'owner'],
  events: ['sessionId', 'afterSeq', 'limit'],
  upload: ['uploadId', 'offset', 'data', 'mediaType', 'size', 'sha256', 'owner'],
  blob: ['sessionId', 'sha256', 'offset', 'seq'],
};

/**
 * The exact bytes of a request: its fields in the order of `requestFields`, absent ones left out
 * (the canonical text of clients/protocol/vectors/commands.json, which the Go and Python clients
 * send too). Workers accept the fields in any order.
 */
export function encodeRequest<V extends CommandVerb>(verb: V, body: CommandRequests[V]): Uint8Array {
  const given = body as unknown as Record<string, unknown>;
  const ordered: Record<string, unknown> = {};
  for (const field of requestFields[verb]) if (given[field] !== undefined) ordered[field] = given[field];
  for (const field of Object.keys(given)) if (!(field in ordered) && given[field] !== undefined) ordered[field] = given[field]; // refused by the worker, by name
  return encodeJson(ordered);
}

/** Most input ids one drop request may name. */
export const MAX_DROP_IDS = 1000;

/** Longest cancel reason (the `execution.cancelled` schema's limit). */
export const MAX_CANCEL_REASON = 1000;

const knownCodes = new Set<string>(Object.values(ErrorCode));

/** The `ErrorCode` a failure is reported under where only sessiond's codes fit (e.g. the CLI's exit code). */
export function baseErrorCode(code: CommandFailure): ErrorCode {
  if (knownCodes.has(code)) return code as ErrorCode;
  switch (code) {
    case CommandFailureCode.BadRequest:
    case CommandFailureCode.UnknownCommand:
      return ErrorCode.InvalidOption;
    case CommandFailureCode.UnknownSession:
      return ErrorCode.NotFound;
    case CommandFailureCode.NoWorker:
      return ErrorCode.Unavailable;
    default:
      return ErrorCode.Internal;
  }
}

/**
 * A command that failed: an error reply from a worker, or no reply at all. `failure` is the precise
 * code (e.g. unknown_session, no_worker); `code` is the nearest sessiond `ErrorCode`.
 */
export class CommandError extends SessiondError {
  readonly failure: CommandFailure;
  readonly verb: string;
  constructor(verb: string, failure: CommandFailure, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(baseErrorCode(failure), message, { ...options, details: { ...options.details, failure, verb } });
    this.name = 'CommandError';
    this.failure = failure;
    this.verb = verb;
  }
}

export function isCommandError(err: unknown, failure?: CommandFailure): err is CommandError {
  return err instanceof CommandError && (failure === undefined || err.failure === failure);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Parses a UTF-8 JSON body; throws a plain Error saying why (the caller turns it into its reply). */
export function decodeJson(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data));
}

/** Deepest nesting of objects and arrays a request body may have (requests are flat: 1). */
export const MAX_BODY_DEPTH = 32;
/** Largest wake, cancel or status body: two ids and a reason of at most 1,000 characters, however escaped. */
export const MAX_SMALL_REQUEST_BYTES = 16 * 1024;
/** Largest error reply a worker sends (`boundErrorBody`): far below any server's max_payload. */
export const MAX_ERROR_REPLY_BYTES = 8 * 1024;
/** Longest `message` of an error reply (the echoed values in it are cut shorter, see `echo`). */
export const MAX_ERROR_MESSAGE_CHARS = 1000;
const MAX_DETAIL_KEYS = 20;

/**
 * Largest admit body for a prompt limit: any prompt within the limit fits however JSON escapes it
 * (`\u0001` is 6 bytes for 1), with room for the other fields and the tags. At the default 256 KiB that is
 * 1,642,496 bytes, above nats.conf's max_payload (1 MB), which then refuses first.
 */
/** Most bytes of a drop request: its input ids (each quoted, with a comma) and the rest. */
export const MAX_DROP_REQUEST_BYTES = MAX_DROP_IDS * (MAX_ID_LENGTH + 3) + 4 * 1024;
/** Most bytes of a resolve request: a signal's value as JSON (a recorded payload is at most 256 KiB) and the rest. */
export const MAX_RESOLVE_REQUEST_BYTES = 256 * 1024 + 4 * 1024;
/** Most bytes of a tag or list request, and what tags add to an admit: `MAX_TAGS` keys and values, however JSON escapes them. */
export const MAX_TAGS_REQUEST_BYTES = 64 * 1024;

export function admitBodyLimit(maxPromptBytes: number): number {
  return 6 * maxPromptBytes + 4096 + MAX_TAGS_REQUEST_BYTES;
}

/** The byte offset where a JSON body nests deeper than `maxDepth`, or -1: one scan, no recursion, strings skipped. */
export function tooDeepAt(data: Uint8Array, maxDepth = MAX_BODY_DEPTH): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < data.length; i++) {
    const b = data[i]!;
    if (inString) {
      if (b === 0x5c)
        i++; // a backslash escapes the next byte
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) {
      inString = true;
    } else if (b === 0x7b || b === 0x5b) {
      // { [
      if (++depth > maxDepth) return i;
    } else if (b === 0x7d || b === 0x5d) {
      // } ]
      depth--;
    }
  }
  return -1;
}

/**
 * An error body that fits in `MAX_ERROR_REPLY_BYTES` as a reply: the message cut to
 * `MAX_ERROR_MESSAGE_CHARS`, each detail cut (long strings, long JSON), and if still too big the
 * details dropped and the message cut to `MAX_ECHO_CHARS`.
 */
export function boundErrorBody(body: ErrorBody): ErrorBody {
  const bounded: ErrorBody = { code: body.code, message: boundText(body.message, MAX_ERROR_MESSAGE_CHARS) };
  if (body.details && Object.keys(body.details).length > 0) {
    bounded.details = Object.fromEntries(
      Object.entries(body.details)
        .slice(0, MAX_DETAIL_KEYS)
        .map(([k, v]) => [boundText(k), boundDetail(v)]),
    );
  }
  if (encodeJson({ ok: false, error: bounded }).length <= MAX_ERROR_REPLY_BYTES) return bounded;
  return { code: body.code, message: boundText(body.message, MAX_ECHO_CHARS) };
}

function boundDetail(value: unknown): unknown {
  if (typeof value === 'string') return boundText(value, MAX_ECHO_CHARS + 30); // room for a value cut already, with its …(N bytes)
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return value;
  if (Array.isArray(value) && value.length <= 10 && value.every((v) => typeof v === 'string' || typeof v === 'number')) return value.map(boundDetail);
  const json = safeJson(value);
  return json !== undefined && json.length <= MAX_ECHO_CHARS ? value : echo(value);
}

function safeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}
