/**
 * The events stream: one JetStream stream holding every session's durable log, one subject per
 * session (`sessiond.events.<session>`), one message per append (see jetstream-event-log.ts).
 *
 * `ensureEventStream` is idempotent: it creates the stream, or verifies an existing one and updates
 * what may be updated (duplicate window, replicas, discard, deny-delete, a missing subject). Storage
 * cannot be changed in place, so a stream with memory storage is refused with what to do.
 *
 * Settings and why:
 * - file storage, limits retention, discard old, no limits: the log keeps everything; limits are
 *   left to operators, who must then accept losing old sessions.
 * - duplicate window (`DEFAULT_DUPLICATE_WINDOW_MS`, 2 minutes): the server drops a publish whose
 *   `Nats-Msg-Id` it has seen within the window. The log retries a publish that timed out with the
 *   same id for less than this (see `DEFAULT_PUBLISH_RETRY_MS`), so a retried append is never written
 *   twice; after the window the log falls back to comparing the session's last stored batch.
 * - deny delete and deny purge: committed events are immutable; deleting or purging messages would
 *   break sequences. nats.conf also keeps the worker user away from the purge, delete and update
 *   APIs; only an operator (the admin user) may reconfigure the stream (`sessiond setup`).
 * - replicas: 1 on a single server, 3 in a cluster (R3 tolerates one server down).
 *
 * Messages: one per append, a msgpack array of plain-map event frames (`encodeBatch`/`decodeBatch`),
 * so any msgpack reader can decode it; `prepareBatch` (events/) checks an append the way the SQLite log does. JetStream API error codes are matched by number
 * (`JsErrorCode`), never by message text.
 */
import {
  DiscardPolicy, JetStreamApiError, RetentionPolicy, StorageType,
  type JetStreamManager, type StreamConfig, type StreamInfo,
} from '@nats-io/jetstream';
import { millis, nanos } from '@nats-io/transport-node';
import { ConnectionError, ErrorCode, PermissionError, SessiondError, isSessiondError, messageOf } from '../errors.ts';
import { validateId } from '../ids.ts';
import { isDurable, isEventType } from '../events/catalog.ts';
import { eventFromFrame, pack, unpack } from '../events/codec.ts';
import type { DraftEvent, SessionEvent } from '../events/envelope.ts';
import { STREAM_NAME, subjects } from './subjects.ts';
import { isPermissionError, isTransientNatsError, waitAtMost } from './connection.ts';
import { systemClock } from '../clock.ts';

export const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60_000;
export const DEFAULT_REPLICAS = 1;
export const CLUSTER_REPLICAS = 3;

/** JetStream API error codes (`err_code`) sessiond reacts to; see nats-server's errors.json. */
export const JsErrorCode = {
  ConsumerNotFound: 10014,
  NoMessageFound: 10037,
  StreamMessageExceedsMaximum: 10054,
  StreamNameExist: 10058,
  StreamNotFound: 10059,
  StreamSubjectOverlap: 10065,
  StreamWrongLastSequence: 10071,
  /** The same refusal on newer servers when they do not say the real last sequence (nats-server 2.11+ on replicated streams). */
  StreamWrongLastSequenceConstant: 10164,
  /** 503: a new stream leader cannot check an expected last subject sequence yet (it passes once it has caught up). */
  StreamExpectedLastSeqPerSubjectNotReady: 10163,
  /** 429: the stream's queue of pending proposals is full. */
  StreamTooManyRequests: 10167,
  /** 500: the stream is offline on this server (its replicas are recovering or lost quorum). */
  StreamOffline: 10194,
  /** 409: a message with this `Nats-Msg-Id` is being stored right now (a resend racing its original): its outcome is not known yet. */
  StreamDuplicateMessageConflict: 10158,
  StreamReplicasNotSupported: 10074,
  ClusterNotAvailable: 10008,
  ClusterNotLeader: 10009,
  InsufficientResources: 10023,
} as const;
export type JsErrorCode = (typeof JsErrorCode)[keyof typeof JsErrorCode];

/** The JetStream API error code of `err` (0 when it is not a JetStream API error). */
export function jsErrorCode(err: unknown): number {
  return err instanceof JetStreamApiError ? err.code : 0;
}
export function isJsError(err: unknown, code: JsErrorCode): boolean {
  return jsErrorCode(err) === code;
}
/** The append lost a race: the subject's last sequence is not the one it expected (10071, or 10164 without the number). */
export const isWrongLastSequence = (err: unknown) =>
  isJsError(err, JsErrorCode.StreamWrongLastSequence) || isJsError(err, JsErrorCode.StreamWrongLastSequenceConstant);
export const isStreamNotFound = (err: unknown) => isJsError(err, JsErrorCode.StreamNotFound);
/** Server-side conditions that pass on their own (leader election, recovery after a restart). */
export const isJsTransient = (err: unknown) =>
  ([JsErrorCode.ClusterNotAvailable, JsErrorCode.ClusterNotLeader, JsErrorCode.InsufficientResources,
    JsErrorCode.StreamExpectedLastSeqPerSubjectNotReady, JsErrorCode.StreamTooManyRequests, JsErrorCode.StreamOffline,
    JsErrorCode.StreamDuplicateMessageConflict] as number[]).includes(jsErrorCode(err));

export interface EventStreamOptions {
  /** Stream name (default `STREAM_NAME`); its subjects are always `sessiond.events.>`. */
  name?: string;
  /**
   * Replicas: 1 for a single server, 3 in a cluster. A new stream is created with them (default 1);
   * an existing stream is changed only when they are given (replicas are the operator's: a worker that
   * opens the log leaves them as `sessiond setup` set them).
   */
  replicas?: number;
  duplicateWindowMs?: number;
  /** The server's version (`nc.info.version`): replicas above 1 need one that fences appends on replicated streams. */
  serverVersion?: string;
  /** How long to keep asking while JetStream does not answer (a meta leader election, a restart), default 60 s. */
  waitMs?: number;
}

/** nats-server fences appends (expected last subject sequence) on replicated streams from this release on (nats-server#4320, #5644). */
export const REPLICATED_FENCING_SINCE = '2.10.19';

/** Whether `version` is at least `since` (both `x.y.z`; a suffix such as `-beta` is ignored). */
export function versionAtLeast(version: string, since: string): boolean {
  const parts = (v: string) => v.split(/[.-]/).slice(0, 3).map((x) => parseInt(x, 10) || 0);
  const a = parts(version);
  const b = parts(since);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** Does this nats-server version fence appends on replicated streams? (Unknown: no.) */
export function fencesReplicated(version: string | undefined): boolean {
  return version !== undefined && version !== '' && versionAtLeast(version, REPLICATED_FENCING_SINCE);
}

export const DEFAULT_STREAM_WAIT_MS = 60_000;

export function eventStreamConfig(options: EventStreamOptions = {}): StreamConfig {
  const name = options.name ?? STREAM_NAME;
  const replicas = options.replicas ?? DEFAULT_REPLICAS;
  const windowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid stream name ${JSON.stringify(name)}: use 1-64 characters from A-Z a-z 0-9 _ -.`);
  }
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5) {
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid stream replicas ${String(replicas)}: use 1 on a single server, 3 in a cluster (at most 5).`);
  }
  if (!Number.isInteger(windowMs) || windowMs < 1000) {
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid duplicate window ${String(windowMs)} ms: use at least 1000 ms (default ${DEFAULT_DUPLICATE_WINDOW_MS}).`);
  }
  return {
    name,
    subjects: [subjects.allEvents],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_msgs: -1,
    max_bytes: -1,
    max_age: 0,
    max_msgs_per_subject: -1,
    max_msg_size: -1,
    max_consumers: -1,
    duplicate_window: nanos(windowMs),
    num_replicas: replicas,
    deny_delete: true,
    deny_purge: true,
    allow_rollup_hdrs: false,
  } as StreamConfig;
}

/** Creates the events stream, or verifies (and if needed updates) an existing one. Returns its info. */
export async function ensureEventStream(jsm: JetStreamManager, options: EventStreamOptions = {}): Promise<StreamInfo> {
  const want = eventStreamConfig(options);
  const patient = <T>(action: string, request: () => Promise<T>) => untilJetStreamAnswers(want.name, action, request, options.waitMs ?? DEFAULT_STREAM_WAIT_MS);
  let info: StreamInfo | undefined;
  try {
    info = await patient('read', () => jsm.streams.info(want.name));
  } catch (err) {
    if (isSessiondError(err)) throw err;
    if (!isStreamNotFound(err)) throw streamError(want.name, 'read', err);
  }
  if (!info) {
    refuseUnfenced(want.name, want.num_replicas, options.serverVersion);
    try {
      return await patient('create', () => jsm.streams.add(want));
    } catch (err) {
      if (isSessiondError(err)) throw err;
      // another process created it first: verify theirs
      if (!isJsError(err, JsErrorCode.StreamNameExist)) throw streamError(want.name, 'create', err);
      info = await patient('read', () => jsm.streams.info(want.name));
    }
  }
  const have = info.config;
  // replicas are the operator's: left as they are unless asked for
  if (options.replicas === undefined) want.num_replicas = have.num_replicas;
  if (have.storage !== StorageType.File) {
    throw new SessiondError(ErrorCode.InvalidOption,
      `Stream ${want.name} exists with ${have.storage} storage; the event log needs file storage. Back it up and delete it (or choose another stream name) and start again.`,
      { details: { stream: want.name, storage: have.storage } });
  }
  if (want.num_replicas > 1 && !info.cluster) {
    // nats-server 2.9 accepts this update outside a cluster (and reports it) but cannot replicate
    throw streamError(want.name, 'update', new Error(`stream ${want.name} is on a server without JetStream clustering`), true);
  }
  refuseUnfenced(want.name, want.num_replicas, options.serverVersion);
  const missingSubject = !have.subjects.includes(subjects.allEvents);
  const differs = missingSubject
    || millis(have.duplicate_window) !== millis(want.duplicate_window)
    || have.num_replicas !== want.num_replicas
    || have.discard !== want.discard
    || have.deny_delete !== want.deny_delete
    || have.deny_purge !== want.deny_purge;
  if (!differs) return info;
  const update = {
    ...have,
    subjects: missingSubject ? [...have.subjects, subjects.allEvents] : have.subjects,
    duplicate_window: want.duplicate_window,
    num_replicas: want.num_replicas,
    discard: want.discard,
    deny_delete: want.deny_delete,
    deny_purge: want.deny_purge,
  };
  try {
    return await patient('update', () => jsm.streams.update(want.name, update));
  } catch (err) {
    if (isSessiondError(err)) throw err;
    if (isPermissionError(err)) {
      const changes = describeChanges(have, want, missingSubject);
      throw new PermissionError(
        `Stream ${want.name} needs an update (${changes}) that this NATS user may not make: workers may not reconfigure the stream. Run \`sessiond setup --nats <url> --nats-user admin\` once as a user allowed to manage streams (the admin user in nats.conf), then start the worker again.`,
        { cause: err, details: { stream: want.name, changes } });
    }
    throw streamError(want.name, 'update', err);
  }
}

function describeChanges(have: StreamConfig, want: StreamConfig, missingSubject: boolean): string {
  const changes: string[] = [];
  if (missingSubject) changes.push(`add subject ${subjects.allEvents}`);
  if (millis(have.duplicate_window) !== millis(want.duplicate_window)) changes.push(`duplicate window ${millis(have.duplicate_window)} -> ${millis(want.duplicate_window)} ms`);
  if (have.num_replicas !== want.num_replicas) changes.push(`replicas ${have.num_replicas} -> ${want.num_replicas}`);
  if (have.discard !== want.discard) changes.push(`discard ${have.discard} -> ${want.discard}`);
  if (have.deny_delete !== want.deny_delete) changes.push(`deny_delete ${have.deny_delete} -> ${want.deny_delete}`);
  if (have.deny_purge !== want.deny_purge) changes.push(`deny_purge ${have.deny_purge} -> ${want.deny_purge}`);
  return changes.join(', ');
}

function streamError(name: string, action: string, err: unknown, replicas = isJsError(err, JsErrorCode.StreamReplicasNotSupported)): SessiondError {
  const hint = isJsError(err, JsErrorCode.StreamSubjectOverlap)
    ? `another stream already captures ${subjects.allEvents}; delete it or use that stream's name`
    : replicas ? 'more than 1 replica needs a JetStream cluster: use replicas 1 on a single server, 3 in a cluster'
      : 'check that JetStream is enabled for this account and the user may manage streams (see nats.conf)';
  return new SessiondError(ErrorCode.InvalidOption, `Could not ${action} JetStream stream ${name}: ${messageOf(err)}. ${hint[0]!.toUpperCase()}${hint.slice(1)}.`,
    { cause: err, details: { stream: name, jsErrorCode: jsErrorCode(err) } });
}

/** One append's message body: a msgpack array of plain-map event frames. */
export function encodeBatch(events: SessionEvent[]): Uint8Array {
  return pack(events.map((e) => ({ id: e.id, type: e.type, version: e.version, sessionId: e.sessionId, seq: e.seq, time: e.time, payload: e.payload })));
}

/**
 * Decodes and validates one stored message; every event gets `position` = the message's stream
 * sequence and `committedAt` = the time the server stored it (when given; never from the frames).
 */
export function decodeBatch(data: Uint8Array, position: number, subject: string, committedAt?: number): SessionEvent[] {
  const where = `Message ${position} on ${subject}`;
  const hint = 'Was it published by something other than sessiond? (an unknown type or version: upgrade sessiond to read it)';
  let raw: unknown;
  try {
    raw = unpack(data);
  } catch (err) {
    throw new SessiondError(ErrorCode.DecodeFailed, `${where} cannot be read as a sessiond event batch: invalid msgpack (${messageOf(err)}). ${hint}`, { cause: err, details: { position, subject } });
  }
  if (!Array.isArray(raw) || raw.length === 0) throw new SessiondError(ErrorCode.DecodeFailed, `${where} cannot be read as a sessiond event batch: expected a non-empty array of events. ${hint}`, { details: { position, subject } });
  const sessionId = subjects.sessionOfEventsSubject(subject);
  const events = raw.map((frame: unknown, i) => {
    try {
      return eventFromFrame(frame, { describe: `Frame ${i} of message ${position} on ${subject}`, hint, position, committedAt, ...(sessionId !== undefined ? { sessionId } : {}) });
    } catch (err) {
      if (isSessiondError(err)) err.details['position'] = position;
      throw err;
    }
  });
  for (let i = 1; i < events.length; i++) {
    if (events[i]!.seq !== events[0]!.seq + i) {
      throw new SessiondError(ErrorCode.DecodeFailed, `${where} cannot be read as a sessiond event batch: frame ${i} has seq ${events[i]!.seq}, expected ${events[0]!.seq + i}. ${hint}`, { details: { position, subject } });
    }
  }
  return events;
}

/**
 * Refuses an events stream with more than 1 replica on a server that does not fence appends on
 * replicated streams: there, two appends expecting the same last sequence can both be stored, so two
 * workers could own one session (measured in test/cluster/fencing.test.ts on nats-server 2.9.10).
 */
function refuseUnfenced(name: string, replicas: number, version: string | undefined): void {
  if (replicas <= 1 || fencesReplicated(version)) return;
  throw new SessiondError(ErrorCode.InvalidOption,
    `Stream ${name} has (or would have) ${replicas} replicas on nats-server ${version ?? '(version unknown)'}, which does not fence appends on replicated streams: two workers could own one session (nats-server#4320, #5644). Use nats-server ${REPLICATED_FENCING_SINCE} or newer for replicas, or 1 replica (sessiond setup --replicas 1).`,
    { details: { stream: name, replicas, serverVersion: version } });
}

/** Sends a JetStream API request again while JetStream does not answer (an election, a restart), up to `waitMs`; then the stream is unavailable. */
async function untilJetStreamAnswers<T>(name: string, action: string, request: () => Promise<T>, waitMs: number): Promise<T> {
  const deadline = systemClock.now() + waitMs;
  for (let pause = 100; ; pause = Math.min(pause * 2, 2_000)) {
    try {
      return await request();
    } catch (err) {
      if (!isTransientNatsError(err) && !isJsTransient(err)) throw err;
      if (systemClock.now() + pause > deadline) {
        throw new ConnectionError(`Could not ${action} JetStream stream ${name}: JetStream did not answer for ${waitMs} ms (${messageOf(err)}). The server may be electing a JetStream leader or restarting; retry later.`, { cause: err, details: { stream: name } });
      }
      await waitAtMost(new Promise<never>(() => undefined), pause);
    }
  }
}
