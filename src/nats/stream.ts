/**
 * The events stream `SESSIOND_EVENTS` (one subject per session, one msgpack message per append):
 * its settings, `manageStream` (workers verify a stream, `sessiond setup` creates or updates it),
 * the batch codec (`encodeBatch`/`decodeBatch`) and JetStream error codes matched by number.
 * Why each setting: docs/nats.md#the-events-stream.
 */
import { DiscardPolicy, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig, type StreamInfo } from '@nats-io/jetstream';
import { millis, nanos } from '@nats-io/transport-node';
import { ConnectionError, ErrorCode, NotFoundError, PermissionError, SessiondError, isSessiondError, messageOf } from '../errors.ts';
import { eventFromFrame, pack, unpack } from '../events/codec.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { isDurable } from '../events/catalog.ts';
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
  /** 400: no peers to place the stream's replicas on; transient only while a peer is offline (a cluster forming), see `isJsTransient`. */
  ClusterNoPeers: 10005,
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
/** Server-side conditions that pass on their own (leader election, recovery after a restart, a peer not yet current). */
export const isJsTransient = (err: unknown) =>
  // one code for every placement failure: only "peer offline" passes (unmatched tags, storage do not)
  (isJsError(err, JsErrorCode.ClusterNoPeers) && /peer offline/i.test(messageOf(err))) ||
  (
    [
      JsErrorCode.ClusterNotAvailable,
      JsErrorCode.ClusterNotLeader,
      JsErrorCode.InsufficientResources,
      JsErrorCode.StreamExpectedLastSeqPerSubjectNotReady,
      JsErrorCode.StreamTooManyRequests,
      JsErrorCode.StreamOffline,
      JsErrorCode.StreamDuplicateMessageConflict,
    ] as number[]
  ).includes(jsErrorCode(err));

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
  const parts = (v: string) =>
    v
      .split(/[.-]/)
      .slice(0, 3)
      .map((x) => parseInt(x, 10) || 0);
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
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid duplicate window ${String(windowMs)} ms: use at least 1000 ms (default ${DEFAULT_DUPLICATE_WINDOW_MS}).`,
    );
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
    // the admin purges one session's subject to delete it; nats.conf keeps everyone else from the purge API
    deny_purge: false,
    allow_rollup_hdrs: false,
  } as StreamConfig;
}

/** A setting of an existing stream that differs from what sessiond needs. */
export interface StreamDifference {
  setting: string;
  have: string;
  want: string;
  /** Whether `sessiond setup` can change it on the existing stream (else the stream must be recreated). */
  inPlace: boolean;
}

/** What `manageStream` did: created the stream, or changed these settings on the existing one. */
export interface StreamSetup {
  info: StreamInfo;
  created: boolean;
  changed: StreamDifference[];
}

const NONE = 'none';
const show = (v: unknown): string =>
  v === undefined || v === null || (Array.isArray(v) && v.length === 0) ? NONE : typeof v === 'string' ? v : JSON.stringify(v);
const ms = (ns: unknown) => (typeof ns === 'number' ? millis(ns) : 0);
/** Every setting safety or privacy rests on: how to read it, and whether setup may change it on an existing stream. */
const CHECKED: readonly {
  setting: string;
  read: (c: StreamConfig) => string;
  inPlace: boolean;
  /** A value accepted besides the wanted one (stricter, from an older setup, and one the server will not change on an existing stream). */
  alsoAccepted?: string;
}[] = [
  { setting: 'subjects', read: (c) => show([...(c.subjects ?? [])].sort()), inPlace: true },
  { setting: 'storage', read: (c) => show(c.storage), inPlace: false },
  { setting: 'retention', read: (c) => show(c.retention), inPlace: false },
  { setting: 'max_msgs_per_subject', read: (c) => show(c.max_msgs_per_subject ?? -1), inPlace: true },
  { setting: 'max_msgs', read: (c) => show(c.max_msgs ?? -1), inPlace: true },
  { setting: 'max_bytes', read: (c) => show(c.max_bytes ?? -1), inPlace: true },
  { setting: 'max_age', read: (c) => `${ms(c.max_age)} ms`, inPlace: true },
  { setting: 'max_msg_size', read: (c) => show(c.max_msg_size ?? -1), inPlace: true },
  { setting: 'max_consumers', read: (c) => show(c.max_consumers ?? -1), inPlace: false },
  { setting: 'discard', read: (c) => show(c.discard), inPlace: true },
  { setting: 'deny_delete', read: (c) => show(c.deny_delete === true), inPlace: true },
  { setting: 'deny_purge', read: (c) => show(c.deny_purge === true), inPlace: true, alsoAccepted: 'true' },
  { setting: 'num_replicas', read: (c) => show(c.num_replicas), inPlace: true },
  { setting: 'duplicate_window', read: (c) => `${ms(c.duplicate_window)} ms`, inPlace: true },
  { setting: 'allow_rollup_hdrs', read: (c) => show(c.allow_rollup_hdrs === true), inPlace: true },
  { setting: 'no_ack', read: (c) => show(c.no_ack === true), inPlace: true },
  { setting: 'sealed', read: (c) => show(c.sealed === true), inPlace: false },
  { setting: 'allow_msg_ttl', read: (c) => show((c as { allow_msg_ttl?: boolean }).allow_msg_ttl === true), inPlace: false },
  { setting: 'mirror', read: (c) => show(c.mirror), inPlace: false },
  { setting: 'sources', read: (c) => show(c.sources), inPlace: true },
  { setting: 'republish', read: (c) => show(c.republish), inPlace: true },
  { setting: 'subject_transform', read: (c) => show(c.subject_transform), inPlace: true },
];

/** The settings of `have` that differ from `want` (each named with both values). */
export function streamDifferences(have: StreamConfig, want: StreamConfig): StreamDifference[] {
  return CHECKED.flatMap(({ setting, read, inPlace, alsoAccepted }) => {
    const [h, w] = [read(have), read(want)];
    if (alsoAccepted !== undefined && h === alsoAccepted) return [];
    return h === w ? [] : [{ setting, have: h, want: w, inPlace }];
  });
}

const describeDifferences = (d: readonly StreamDifference[]) => d.map((x) => `${x.setting} ${x.have} (needs ${x.want})`).join(', ');

/** How an operator recreates a stream whose settings cannot be changed in place. */
function recreateHint(name: string, cache: boolean): string {
  return cache
    ? `Stream ${name} is a cache of the log: \`sessiond setup\` as the admin user deletes and recreates it.`
    : `These cannot be changed on an existing stream: back the stream up (\`nats --user admin --inbox-prefix _INBOX_admin stream backup ${name} <dir>\`, or \`sessiond export --nats <url> --out <file>\`), delete it (\`nats --user admin --inbox-prefix _INBOX_admin stream rm ${name}\`), run \`sessiond setup --nats <url> --nats-user admin\` to create it as sessiond needs, and start the workers again.`;
}

export interface ManageStreamOptions {
  /** Replicas asked for (undefined: kept as the operator set them; a new stream gets `newReplicas`). */
  replicas?: number | undefined;
  /** Replicas of a stream created without `replicas` (default 1). */
  newReplicas?: number;
  serverVersion?: string | undefined;
  waitMs?: number | undefined;
  /**
   * `sessiond setup` (the admin user): create a missing stream and change what can be changed in
   * place. Without it (a worker): only verify, and refuse a missing or different stream.
   */
  manage?: boolean;
  /** A cache (the snapshots): setup recreates it instead of refusing what cannot change in place, and messages it holds on other subjects are dropped with it. */
  cache?: boolean;
}

/**
 * Verifies a stream against `want` (every setting in `CHECKED`, replicas only when asked for), and
 * with `manage` creates it or changes it in place. Refuses, naming each setting with its value and
 * what to do, a stream that differs where sessiond's safety or privacy rests on it.
 */
export async function manageStream(jsm: JetStreamManager, wanted: StreamConfig, options: ManageStreamOptions = {}): Promise<StreamSetup> {
  const want = { ...wanted };
  const name = want.name;
  const patient = <T>(action: string, request: () => Promise<T>) => untilJetStreamAnswers(name, action, request, options.waitMs ?? DEFAULT_STREAM_WAIT_MS);
  const setupHint =
    'Run `sessiond setup --nats <url> --nats-user admin` once as the operator (the admin user in nats.conf); workers never create or change streams.';
  let info: StreamInfo | undefined;
  try {
    info = await patient('read', () => jsm.streams.info(name));
  } catch (err) {
    if (isSessiondError(err)) throw err;
    if (!isStreamNotFound(err)) throw streamError(name, 'read', err);
  }
  if (!info) {
    if (!options.manage) {
      throw new NotFoundError(`JetStream stream ${name} does not exist. ${setupHint} Then start the worker again.`, { details: { stream: name } });
    }
    want.num_replicas = options.replicas ?? options.newReplicas ?? want.num_replicas;
    refuseUnfenced(name, want.num_replicas, options.serverVersion);
    try {
      return { info: await patient('create', () => jsm.streams.add(want)), created: true, changed: [] };
    } catch (err) {
      if (isSessiondError(err)) throw err;
      // another setup created it first: verify theirs
      if (!isJsError(err, JsErrorCode.StreamNameExist)) throw streamError(name, 'create', err);
      info = await patient('read', () => jsm.streams.info(name));
    }
  }
  const have = info.config;
  // replicas are the operator's: left as they are unless asked for
  if (options.replicas === undefined) want.num_replicas = have.num_replicas;
  if (want.num_replicas > 1 && !info.cluster) {
    // nats-server 2.9 accepts this update outside a cluster (and reports it) but cannot replicate
    throw streamError(name, 'update', new Error(`stream ${name} is on a server without JetStream clustering`), true);
  }
  refuseUnfenced(name, want.num_replicas, options.serverVersion);
  // what is stricter than needed (deny purge from an older setup) is accepted, by workers and setup
  const differences = streamDifferences(have, want);
  if (differences.length === 0) return { info, created: false, changed: [] };
  const details = { stream: name, settings: Object.fromEntries(differences.map((d) => [d.setting, { have: d.have, want: d.want }])) };
  if (!options.manage) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `JetStream stream ${name} is not set up as sessiond needs: ${describeDifferences(differences)}. A stream made by someone else (any holder of a password that may create it) must not be trusted with the sessions. ${setupHint} It says what it changes, and what needs the stream recreated.`,
      { details },
    );
  }
  if (options.cache && differences.some((d) => !d.inPlace || d.setting === 'subjects')) {
    // a cache, possibly holding messages of other subjects (commands, replies): dropped and made again
    await patient('delete', () => jsm.streams.delete(name));
    want.num_replicas = options.replicas ?? have.num_replicas;
    return { info: await patient('create', () => jsm.streams.add(want)), created: true, changed: differences };
  }
  const foreign = await foreignMessages(jsm, name, have.subjects ?? [], want.subjects ?? []);
  const fixed = differences.filter((d) => d.inPlace && !(d.setting === 'subjects' && foreign > 0));
  const left = differences.filter((d) => !fixed.includes(d));
  let updated = info;
  if (fixed.length > 0) {
    const update = { ...have } as Record<string, unknown>;
    for (const d of fixed) update[d.setting] = (want as unknown as Record<string, unknown>)[d.setting];
    try {
      updated = await patient('update', () => jsm.streams.update(name, update as Partial<StreamConfig>));
    } catch (err) {
      if (isSessiondError(err)) throw err;
      if (isPermissionError(err)) {
        throw new PermissionError(`Stream ${name} needs an update (${describeDifferences(fixed)}) that this NATS user may not make. ${setupHint}`, {
          cause: err,
          details,
        });
      }
      // replicas on a server outside a cluster (nats-server 2.10+ reports cluster info there too): not a matter of recreating
      if (isJsError(err, JsErrorCode.StreamReplicasNotSupported)) throw streamError(name, 'update', err);
      throw new SessiondError(
        ErrorCode.InvalidOption,
        `Could not update JetStream stream ${name} (${describeDifferences(fixed)}): ${messageOf(err)}. ${recreateHint(name, false)}`,
        { cause: err, details },
      );
    }
  }
  if (left.length > 0) {
    const subjectsNote = left.some((d) => d.setting === 'subjects')
      ? ` It holds ${foreign} messages on subjects that are not sessiond's (${(have.subjects ?? []).filter((x) => !(want.subjects ?? []).includes(x)).join(', ')}): changing its subjects would keep them.`
      : '';
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `JetStream stream ${name} ${fixed.length > 0 ? `was changed in place (${describeDifferences(fixed)}) but still` : 'still'} differs: ${describeDifferences(left)}.${subjectsNote} ${recreateHint(name, false)}`,
      { details: { ...details, changed: fixed.map((d) => d.setting) } },
    );
  }
  return { info: updated, created: false, changed: fixed };
}

/** How many messages the stream holds on its subjects that are not in `ours`. */
async function foreignMessages(jsm: JetStreamManager, name: string, theirs: readonly string[], ours: readonly string[]): Promise<number> {
  let n = 0;
  for (const subject of theirs.filter((x) => !ours.includes(x))) {
    const info = await jsm.streams.info(name, { subjects_filter: subject });
    for (const count of Object.values(info.state.subjects ?? {})) n += count;
  }
  return n;
}

/**
 * Verifies the events stream (a worker: refused when missing or different, see `manageStream`);
 * with `manage` (`sessiond setup`), creates it or changes what can be changed in place. Returns its info.
 */
export async function ensureEventStream(
  jsm: JetStreamManager,
  options: EventStreamOptions & { manage?: boolean; newReplicas?: number } = {},
): Promise<StreamInfo> {
  return (await setupEventStream(jsm, options)).info;
}

/** `ensureEventStream` saying what it did (for `sessiond setup`). */
export function setupEventStream(jsm: JetStreamManager, options: EventStreamOptions & { manage?: boolean; newReplicas?: number } = {}): Promise<StreamSetup> {
  return manageStream(jsm, eventStreamConfig(options), {
    replicas: options.replicas,
    serverVersion: options.serverVersion,
    waitMs: options.waitMs,
    ...(options.manage !== undefined ? { manage: options.manage } : {}),
    ...(options.newReplicas !== undefined ? { newReplicas: options.newReplicas } : {}),
  });
}

function streamError(name: string, action: string, err: unknown, replicas = isJsError(err, JsErrorCode.StreamReplicasNotSupported)): SessiondError {
  const hint = isJsError(err, JsErrorCode.StreamSubjectOverlap)
    ? `another stream already captures ${subjects.allEvents}; delete it or use that stream's name`
    : replicas
      ? 'more than 1 replica needs a JetStream cluster: use replicas 1 on a single server, 3 in a cluster'
      : 'check that JetStream is enabled for this account and the user may manage streams (see nats.conf)';
  return new SessiondError(
    ErrorCode.InvalidOption,
    `Could not ${action} JetStream stream ${name}: ${messageOf(err)}. ${hint[0]!.toUpperCase()}${hint.slice(1)}.`,
    { cause: err, details: { stream: name, jsErrorCode: jsErrorCode(err) } },
  );
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
    throw new SessiondError(ErrorCode.DecodeFailed, `${where} cannot be read as a sessiond event batch: invalid msgpack (${messageOf(err)}). ${hint}`, {
      cause: err,
      details: { position, subject },
    });
  }
  if (!Array.isArray(raw) || raw.length === 0)
    throw new SessiondError(ErrorCode.DecodeFailed, `${where} cannot be read as a sessiond event batch: expected a non-empty array of events. ${hint}`, {
      details: { position, subject },
    });
  const sessionId = subjects.sessionOfEventsSubject(subject);
  const events = raw.map((frame: unknown, i) => {
    try {
      return eventFromFrame(frame, {
        describe: `Frame ${i} of message ${position} on ${subject}`,
        hint,
        position,
        committedAt,
        ...(sessionId !== undefined ? { sessionId } : {}),
      });
    } catch (err) {
      if (isSessiondError(err)) err.details['position'] = position;
      throw err;
    }
  });
  const liveOnly = events.find((e) => !isDurable(e.type));
  if (liveOnly) {
    // writers refuse these (prepare-batch.ts); only something other than a worker stores one
    throw new SessiondError(
      ErrorCode.DecodeFailed,
      `${where} cannot be read as a sessiond event batch: it holds a ${liveOnly.type} event, which is live-only and never stored. ${hint}`,
      { details: { position, subject } },
    );
  }
  for (let i = 1; i < events.length; i++) {
    if (events[i]!.seq !== events[0]!.seq + i) {
      throw new SessiondError(
        ErrorCode.DecodeFailed,
        `${where} cannot be read as a sessiond event batch: frame ${i} has seq ${events[i]!.seq}, expected ${events[0]!.seq + i}. ${hint}`,
        { details: { position, subject } },
      );
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
  throw new SessiondError(
    ErrorCode.InvalidOption,
    `Stream ${name} has (or would have) ${replicas} replicas on nats-server ${version ?? '(version unknown)'}, which does not fence appends on replicated streams: two workers could own one session (nats-server#4320, #5644). Use nats-server ${REPLICATED_FENCING_SINCE} or newer for replicas, or 1 replica (sessiond setup --replicas 1).`,
    { details: { stream: name, replicas, serverVersion: version } },
  );
}

/** Sends a JetStream API request again while JetStream does not answer (an election, a restart), up to `waitMs`; then the stream is unavailable. */
/** `request`, asked again while JetStream gives a transient answer (`isJsTransient`, a dropped connection) for up to `waitMs`. */
export async function untilJetStreamAnswers<T>(name: string, action: string, request: () => Promise<T>, waitMs: number): Promise<T> {
  const deadline = systemClock.now() + waitMs;
  for (let pause = 100; ; pause = Math.min(pause * 2, 2_000)) {
    try {
      return await request();
    } catch (err) {
      if (!isTransientNatsError(err) && !isJsTransient(err)) throw err;
      if (systemClock.now() + pause > deadline) {
        throw new ConnectionError(
          `Could not ${action} JetStream stream ${name}: JetStream did not answer for ${waitMs} ms (${messageOf(err)}). The server may be electing a JetStream leader or restarting; retry later.`,
          { cause: err, details: { stream: name } },
        );
      }
      await waitAtMost(new Promise<never>(() => undefined), pause);
    }
  }
}
