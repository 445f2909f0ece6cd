/**
 * The worker side of the command protocol (shapes in commands.ts): `startCommandService` serves
 * `sessiond.cmd.*` in a queue group, exactly one worker per request, and answers every request,
 * only into the requesters' inboxes. Run it on its own `commands` connection; close it before the
 * engine. Places, reply checks, limits: docs/nats.md#the-command-service.
 */
import { systemClock, type Clock } from '../clock.ts';
import { wholeNumber } from '../options.ts';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { ErrorCode, ErrorKind, SessiondError, boundText, echo, isSessiondError, kindOf, messageOf } from '../errors.ts';
import { DEFAULT_REFUSAL_LOG_INTERVAL_MS, createRefusalLog } from '../observability/rate-limited-log.ts';
import { isValidId, validateId } from '../ids.ts';
import { parseAdmitRequest, DEFAULT_MAX_PROMPT_BYTES, type AdmitRequest } from '../input/admit.ts';
import type { Sessions } from '../sessions/sessions.ts';
import type { ListFilter } from '../sessions/list.ts';
import type { SessionEvent } from '../events/envelope.ts';
import {
  CommandFailureCode,
  EVENTS_PAGE,
  MAX_BODY_DEPTH,
  MAX_CANCEL_REASON,
  MAX_DROP_IDS,
  MAX_SMALL_REQUEST_BYTES,
  MAX_DROP_REQUEST_BYTES,
  MAX_RESOLVE_REQUEST_BYTES,
  MAX_TAGS_REQUEST_BYTES,
  MAX_UPLOAD_REQUEST_BYTES,
  admitBodyLimit,
  baseErrorCode,
  boundErrorBody,
  decodeJson,
  encodeJson,
  requestFields,
  tooDeepAt,
  type CommandFailure,
  type CommandRequests,
  type ErrorBody,
  type StatusReply,
} from './command-protocol.ts';
import { COMMAND_PREFIX, COMMAND_QUEUE, SUBJECT_TOKENS, commandVerbs, isCommandVerb, subjects, type CommandVerb } from './subjects.ts';
import { tenantTarget, type TenantQuotas } from './tenant-target.ts';
import { quotaGuard } from '../gateway/quota-checks.ts';
import { DEFAULT_TENANT_QUOTAS, type Quotas } from '../gateway/quotas.ts';
import { inboxPrefixOf } from './connection.ts';
import { actorOf } from '../sessions/actor.ts';
import { DEFAULT_MAX_BLOB_BYTES, type BlobStore } from '../blobs/blob-store.ts';
import type { BlobGrants } from '../blobs/blob-grants.ts';
import { readBlobChunk, uploadChunk } from './blob-commands.ts';

/** What the service drives: a `Sessions` (the worker's engine). A session with no events is answered `unknown_session`. */
export type CommandTarget = Pick<
  Sessions,
  'admit' | 'wake' | 'cancel' | 'status' | 'dropPending' | 'approve' | 'deny' | 'resolve' | 'tag' | 'list' | 'fork' | 'events' | 'budget'
> & {
  /** The blob store the `upload` and `blob` commands use (an engine's `blobs`), unless the service's `blobs` option names one. */
  readonly blobs?: BlobStore | undefined;
  /** Where uploads grant their owner the use of a blob, as the target's admissions check (an engine's `blobGrants`). */
  readonly blobGrants?: BlobGrants | undefined;
};

export interface CommandServiceOptions {
  /** Queue group (default `COMMAND_QUEUE`); services in one group share the requests. */
  queue?: string;
  /** Prompts over this are refused before reaching the target (default `DEFAULT_MAX_PROMPT_BYTES`, the engine's own limit). */
  maxPromptBytes?: number;
  /** Unexpected failures (also answered as `internal`), and requests without a reply subject. */
  onError?: (err: unknown) => void;
  /**
   * Inbox prefixes replies may go to (default `[DEFAULT_REPLY_PREFIX]`): a reply subject must be
   * `<prefix>.<token>...` with no wildcards. Add one per user you allow to send commands.
   */
  replyPrefixes?: readonly string[];
  /** Each request refused for its reply subject (default: a rate-limited line, see `onRefusalLine`). It was not run and got no reply. */
  onRefusedReply?: (refused: RefusedReply) => void;
  /**
   * The rate-limited lines about requests refused unanswered (default: `onError`): requests without
   * a reply subject (kind invalid_input) and, without `onRefusedReply`, requests refused for their
   * reply subject (kind permission). At most one line per kind every `refusalLogIntervalMs`, then a
   * summary of those held back (observability/rate-limited-log.ts). Requests answered with an error
   * are not logged: their sender has the reply, the operator `stats` and `onRefused`.
   */
  onRefusalLine?: (line: string) => void;
  /**
   * Each request refused for what its sender did, by kind: `invalid_input` (answered with an error
   * of that kind, or without a reply subject) and `permission` (a foreign reply subject); for
   * counters (WorkerMetrics.commandRefused).
   */
  onRefused?: (kind: ErrorKind) => void;
  /** The window of the refusal lines (default `DEFAULT_REFUSAL_LOG_INTERVAL_MS`, 10 s). */
  refusalLogIntervalMs?: number;
  /** The clock the refusal lines are paced on (default the system's). */
  clock?: Clock;
  /**
   * Requests the worker takes ahead of renewing its place in the queue group (default
   * `DEFAULT_QUEUE_PLACES`): a worker that stops running keeps at most this many, unanswered, and
   * the server sends it no more. Keep it below the client's requestTimeoutMs / attemptTimeoutMs.
   */
  places?: number;
  /** Serve tenants' subjects too (`sessiond.t.<tenant>.cmd.<verb>`, tenant-target.ts); default true. */
  tenantCommands?: boolean;
  /**
   * Each tenant's quotas on this worker (admissions per minute, pending bytes, sessions, forks and
   * fork bytes per hour; default `DEFAULT_TENANT_QUOTAS`): a tenant's admission or fork past one is
   * answered `limit_exceeded` naming it. Counted per worker: N workers let a tenant use up to N times.
   */
  tenantLimits?: Partial<Quotas>;
  /**
   * Requests served at once (default `DEFAULT_MAX_IN_FLIGHT`). Past it a request is answered at once
   * `unavailable` (busy, retry) rather than queued past the client's attempt timeout. Places held
   * under load: `placesWanted`.
   */
  maxInFlight?: number;
  /**
   * The blob store of the `upload` and `blob` commands (default the target's `blobs`). Chunked
   * uploads need one that stages chunks (the NATS Object Store's); without any, both answer `unavailable`.
   */
  blobs?: BlobStore;
  /** The largest blob an upload may put (default `DEFAULT_MAX_BLOB_BYTES`; give the engine's `maxBlobBytes`). */
  maxBlobBytes?: number;
}

/** Each place takes one request and is renewed at once by a running worker; a frozen one renews none. */
export const DEFAULT_QUEUE_PLACES = 3;

/** Requests a worker serves at once before it answers `unavailable` (busy). */
export const DEFAULT_MAX_IN_FLIGHT = 256;

/** The inbox prefix of nats.conf's `client` user: where command replies go by default. */
export const DEFAULT_REPLY_PREFIX = inboxPrefixOf('client');

export interface RefusedReply {
  subject: string;
  reply: string;
  message: string;
}

export interface CommandServiceStats {
  requests: number;
  /** Requests refused (not run, not answered) because their reply subject is outside `replyPrefixes`. */
  refusedReplies: number;
  /** Requests answered `{ ok: false }`, by code. */
  failures: Partial<Record<CommandFailure, number>>;
}

export interface CommandService {
  readonly stats: CommandServiceStats;
  /** Stops taking requests, answers those in flight, then resolves. */
  close(): Promise<void>;
}

/** A failure to be answered with its precise command failure code (never thrown past the service). */
class Reject extends SessiondError {
  constructor(
    readonly failure: CommandFailure,
    message: string,
    details?: Record<string, unknown>,
  ) {
    super(baseErrorCode(failure), message, details ? { details } : {});
    this.name = 'Reject';
  }
}

export function startCommandService(nc: NatsConnection, target: CommandTarget, options: CommandServiceOptions = {}): CommandService {
  const onError = options.onError ?? ((err: unknown) => process.stderr.write(`sessiond: command service: ${messageOf(err)}\n`));
  const maxPromptBytes = options.maxPromptBytes ?? DEFAULT_MAX_PROMPT_BYTES;
  const stats: CommandServiceStats = { requests: 0, refusedReplies: 0, failures: {} };
  const replyPrefixes = parseReplyPrefixes(options.replyPrefixes);
  const inFlight = new Map<Promise<void>, number>(); // each request being served, and when it came
  let lastAnswer = 0; // when a request served last got its answer
  const queue = options.queue ?? COMMAND_QUEUE;
  const tenantCommands = options.tenantCommands ?? true;
  const places = wholeNumber('command service', 'places', options.places, DEFAULT_QUEUE_PLACES);
  const maxInFlight = wholeNumber('command service', 'maxInFlight', options.maxInFlight, DEFAULT_MAX_IN_FLIGHT);
  const clock = options.clock ?? systemClock;
  const arrivals: number[] = []; // when requests came in the last PLACE_WINDOW_MS, oldest first (at most QUIET_ARRIVALS + MAX_EXTRA_PLACES)
  let shrink: ReturnType<Clock['setTimeout']> | undefined;
  const refusalLines = options.onRefusalLine ?? ((line: string) => onError(new Error(line)));
  const refusalLog = createRefusalLog({
    write: refusalLines,
    clock,
    intervalMs: wholeNumber('command service', 'refusalLogIntervalMs', options.refusalLogIntervalMs, DEFAULT_REFUSAL_LOG_INTERVAL_MS, 1, 'ms'),
  });
  /** A request refused unanswered for what its sender did: counted, and a line when the log's rate allows. */
  const refused = (kind: ErrorKind, line: string) => {
    options.onRefused?.(kind);
    refusalLog.refused(kind, line);
  };
  let closing = false;

  const answer = commandAnswerer(target, {
    maxPromptBytes,
    onError,
    onRefused: options.onRefused,
    stats,
    tenantLimits: options.tenantLimits,
    clock,
    blobs: options.blobs ?? target.blobs,
    grants: target.blobGrants,
    maxBlobBytes: wholeNumber('command service', 'maxBlobBytes', options.maxBlobBytes, DEFAULT_MAX_BLOB_BYTES, 0, 'bytes'),
  });
  const serve = async (msg: Msg) => {
    // a caller's W3C trace context rides as the message's traceparent header (an admit's)
    const data = await answer(msg.subject, msg.data, nc.info?.max_payload, msg.headers?.get('traceparent') || undefined);
    try {
      msg.respond(data);
    } catch (err) {
      onError(err); // the connection closed under us: the client times out
    }
  };

  const take = (err: Error | null, msg: Msg) => {
    if (err) {
      onError(err); // e.g. a permissions violation: this user may not serve commands
      return;
    }
    stats.requests++;
    if (!msg.reply) {
      refused(ErrorKind.InvalidInput, `A message on ${boundText(msg.subject)} has no reply subject: send commands as requests (nc.request), not publishes.`);
      return;
    }
    const tenant = subjects.tenantOfCommandSubject(msg.subject);
    // a tenant's command is answered in that tenant's inbox only
    if (tenant !== undefined ? !isAllowedReply(msg.reply, [subjects.tenantInbox(tenant)]) : !isAllowedReply(msg.reply, replyPrefixes)) {
      stats.refusedReplies++;
      const refusal: RefusedReply = {
        subject: msg.subject,
        reply: msg.reply,
        message: `Refused a request on ${boundText(msg.subject)}: its reply subject ${echo(msg.reply)} is not an inbox under ${tenant !== undefined ? subjects.tenantInbox(tenant) : replyPrefixes.join(', ')}, so it was neither run nor answered. Commands must be sent with nc.request from a connection whose inbox prefix nats.conf allows (docs/protocol.md).`,
      };
      if (options.onRefusedReply) {
        options.onRefused?.(ErrorKind.Permission);
        options.onRefusedReply(refusal);
      } else {
        refused(ErrorKind.Permission, refusal.message);
      }
      return;
    }
    if (inFlight.size >= maxInFlight) {
      // busy: a refusal at once, never silence (the client may send it again in a moment)
      stats.failures[ErrorCode.Unavailable] = (stats.failures[ErrorCode.Unavailable] ?? 0) + 1;
      const error = {
        code: ErrorCode.Unavailable,
        message: `The worker is busy: ${maxInFlight} commands in flight (its limit). Retry in a moment, or start more workers.`,
        details: { maxInFlight },
      };
      try {
        msg.respond(encodeJson({ ok: false, error }));
      } catch (err) {
        onError(err);
      }
      return;
    }
    // requests delivered while draining are served too: the queue group gave them to us alone
    const p: Promise<void> = serve(msg)
      .catch(onError)
      .finally(() => {
        inFlight.delete(p);
        lastAnswer = clock.now();
        fitPlaces();
      });
    inFlight.set(p, clock.now());
    fitPlaces();
  };

  // Places: queue subscriptions ended by the server after one request (UNSUB <sid> 1), renewed at
  // once; extra places under a burst, drained after it or when stuck (docs/nats.md#the-command-service).
  const open = new Set<Subscription>();
  const openPlace = (subject: string) => {
    const place: Subscription = nc.subscribe(subject, {
      queue,
      max: 1,
      callback: (err, msg) => {
        open.delete(place);
        if (!err) arrivals.push(clock.now());
        take(err, msg);
        if (!err) fitPlaces();
      },
    });
    open.add(place);
  };
  // the trusted subjects, and every tenant's (sessiond.t.<tenant>.cmd.<verb>: tenant-target.ts): places for each
  const served = tenantCommands ? [subjects.allCommands, subjects.allTenantCommands] : [subjects.allCommands];
  const fitPlaces = () => {
    if (closing || nc.isClosed()) return;
    const now = clock.now();
    while (arrivals.length > 0 && arrivals[0]! <= now - PLACE_WINDOW_MS) arrivals.shift();
    if (arrivals.length > QUIET_ARRIVALS + MAX_EXTRA_PLACES) arrivals.splice(0, arrivals.length - QUIET_ARRIVALS - MAX_EXTRA_PLACES);
    // requests in flight in the order they came: the first is the oldest
    const wanted = placesWanted(places, { arrivals: arrivals.length, inFlight: inFlight.size, oldest: inFlight.values().next().value, lastAnswer, now });
    // once the burst is over the extra places are given back (a frozen worker keeps them: see above)
    if (wanted > places && shrink === undefined)
      shrink = clock.setTimeout(() => {
        shrink = undefined;
        fitPlaces();
      }, PLACE_WINDOW_MS);
    for (const subject of served) {
      const mine = [...open].filter((place) => place.getSubject() === subject);
      for (let n = mine.length; n < wanted; n++) openPlace(subject);
      for (const place of mine.slice(wanted)) {
        open.delete(place);
        void place.drain().catch(() => place.unsubscribe()); // a request already on its way is still served
      }
    }
  };
  fitPlaces();
  // nats.js resubscribes after a reconnect without the one-request limit: open the places afresh
  const statuses = nc.status() as AsyncIterable<{ type: string }> & { stop?: () => void };
  void (async () => {
    for await (const status of statuses) {
      if (status.type !== 'reconnect' || closing) continue;
      for (const place of [...open]) {
        open.delete(place);
        place.unsubscribe();
      }
      fitPlaces();
    }
  })().catch(onError);

  return {
    stats,
    async close() {
      if (closing) return;
      closing = true;
      clock.clearTimeout(shrink);
      statuses.stop?.();
      if (!nc.isClosed()) await Promise.all([...open].map((place) => place.drain().catch(() => place.unsubscribe())));
      while (inFlight.size > 0) await Promise.allSettled([...inFlight.keys()]);
      refusalLog.close();
    },
  };
}

/**
 * The places a worker holds: `idle`, plus one per request in flight and per request taken in the
 * last PLACE_WINDOW_MS past the first QUIET_ARRIVALS (at most MAX_EXTRA_PLACES more); only `idle`
 * when stuck (STUCK_MS).
 */
export function placesWanted(idle: number, load: { arrivals: number; inFlight: number; oldest: number | undefined; lastAnswer: number; now: number }): number {
  if (load.oldest !== undefined && load.oldest <= load.now - STUCK_MS && load.lastAnswer <= load.now - STUCK_MS) return idle;
  return idle + Math.min(Math.max(0, load.arrivals - QUIET_ARRIVALS) + load.inFlight, MAX_EXTRA_PLACES);
}

/** The most places a burst adds: what a worker frozen right after one may hold (each sent again by its client after attemptTimeoutMs). */
export const MAX_EXTRA_PLACES = 1_024;

/** How long a request taken keeps its extra place (a burst's places grow as fast as it arrives). */
export const PLACE_WINDOW_MS = 1_000;

/**
 * Requests a worker takes in PLACE_WINDOW_MS without growing its places: at this rate three places
 * renewed on use never empty the group, and a worker frozen after such traffic holds only its idle
 * places (the server picks a member as often as it has places, so a frozen worker with extra ones
 * would take the resends of a quiet client again and again).
 */
export const QUIET_ARRIVALS = 32;

/**
 * A request unanswered this long (the client's attempt timeout: it has been sent again), while no
 * other was answered either, makes the worker give back its extra places: one whose log is out of
 * reach takes requests it cannot answer, and each one in flight would otherwise draw one more of the
 * resends. A busy worker still answering keeps them.
 */
export const STUCK_MS = 10_000;

/**
 * What a worker answers to one command request: the reply's bytes for the request's subject and
 * body (`{ ok: true, ... }` or the bounded error reply; never throws). `maxPayload`: the server's
 * limit, which a success reply over it is replaced by an error for. The command service sends these;
 * the protocol's test vectors (scripts/protocol.ts) are made with it.
 */
export function commandAnswerer(
  target: CommandTarget,
  o: {
    maxPromptBytes: number;
    onError: (err: unknown) => void;
    onRefused?: ((kind: ErrorKind) => void) | undefined;
    stats: CommandServiceStats;
    /** Each tenant's quotas on this worker (default `DEFAULT_TENANT_QUOTAS`). */
    tenantLimits?: Partial<Quotas> | undefined;
    clock?: Pick<Clock, 'now'> | undefined;
    /** The blob store of `upload` and `blob`, and the largest blob an upload may put. */
    blobs?: BlobStore | undefined;
    grants?: BlobGrants | undefined;
    maxBlobBytes?: number | undefined;
    /** The tenant this answerer serves (set on each tenant's own answerer). */
    tenant?: string | undefined;
  },
): (subject: string, data: Uint8Array, maxPayload?: number, traceparent?: string) => Promise<Uint8Array> {
  const { maxPromptBytes, onError, stats } = o;
  /** The error reply for `err`, at most MAX_ERROR_REPLY_BYTES; counted, and passed to onError when internal. */
  const fail = (verb: string, err: unknown): Record<string, unknown> => {
    const error = boundErrorBody(toErrorBody(verb, err));
    if (error.code === CommandFailureCode.Internal) onError(err);
    else if (kindOf(baseErrorCode(error.code)) === ErrorKind.InvalidInput) o.onRefused?.(ErrorKind.InvalidInput);
    stats.failures[error.code] = (stats.failures[error.code] ?? 0) + 1;
    return { ok: false, error };
  };

  const handle = async (
    verb: string,
    subject: string,
    data: Uint8Array,
    maxPayload: number | undefined,
    traceparent?: string,
  ): Promise<Record<string, unknown>> => {
    if (!isCommandVerb(verb)) {
      throw new Reject(
        CommandFailureCode.UnknownCommand,
        `Unknown command ${echo(verb)} (subject ${boundText(subject)}): send one of ${commandVerbs.map((v) => subjects.command(v)).join(', ')}.`,
      );
    }
    const body = parseBody(verb, data, BODY_LIMITS[verb] ?? admitBodyLimit(maxPromptBytes));
    if (verb === 'list') return { ...(await target.list(body as ListFilter)) };
    const blobContext = { store: o.blobs, grants: o.grants, maxBlobBytes: o.maxBlobBytes ?? DEFAULT_MAX_BLOB_BYTES, tenant: o.tenant };
    if (verb === 'upload') return { ...(await uploadChunk(body as unknown as CommandRequests['upload'], blobContext)) };
    const sessionId = validateId(body.sessionId, 'session id');
    switch (verb) {
      case 'admit': {
        const { sessionId: _id, ...request } = body as unknown as CommandRequests['admit'];
        // every check before the engine sees it (the parsed request: the fields given, defaults applied)
        const traced = request.traceparent === undefined && traceparent !== undefined ? { ...request, traceparent } : request;
        const admit: AdmitRequest = parseAdmitRequest(sessionId, traced, maxPromptBytes);
        return { receipt: await target.admit(sessionId, admit) };
      }
      case 'tag':
        return { result: await known(target.tag(sessionId, (body as unknown as CommandRequests['tag']).tags)) };
      case 'budget': {
        const { sessionId: _id, ...request } = body as unknown as CommandRequests['budget'];
        return { result: await known(target.budget(sessionId, request)) };
      }
      case 'fork': {
        const { source, at, tags, owner } = body as unknown as CommandRequests['fork'];
        validateId(source, 'source session id');
        if (at !== undefined && (!Number.isSafeInteger(at) || at < 1))
          throw new Reject(CommandFailureCode.BadRequest, `Invalid fork request: at must be a sequence (a whole number >= 1), got ${echo(at)}.`);
        return {
          result: await known(
            target.fork(source, sessionId, { ...(at === undefined ? {} : { at }), ...(tags ? { tags } : {}), ...(owner === undefined ? {} : { owner }) }),
          ),
        };
      }
      case 'wake':
        return { result: await known(target.wake(sessionId)) };
      case 'cancel': {
        const { reason, executionId, actor } = body as CommandRequests['cancel'];
        if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_CANCEL_REASON)) {
          throw new Reject(CommandFailureCode.BadRequest, `Invalid cancel request: reason must be a string of at most ${MAX_CANCEL_REASON} characters.`);
        }
        if (executionId !== undefined && !isValidId(executionId)) {
          throw new Reject(
            CommandFailureCode.BadRequest,
            `Invalid cancel request: executionId must be an execution id (e.g. "exe_..."), got ${echo(executionId)}.`,
          );
        }
        return { result: await known(target.cancel(sessionId, reason, executionId, actorOf(actor))) };
      }
      case 'drop': {
        const { inputIds, reason, actor } = body as CommandRequests['drop'];
        if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_CANCEL_REASON)) {
          throw new Reject(CommandFailureCode.BadRequest, `Invalid drop request: reason must be a string of at most ${MAX_CANCEL_REASON} characters.`);
        }
        if (inputIds !== undefined && (!Array.isArray(inputIds) || inputIds.length === 0 || inputIds.length > MAX_DROP_IDS || !inputIds.every(isValidId))) {
          throw new Reject(
            CommandFailureCode.BadRequest,
            `Invalid drop request: inputIds must be a list of 1-${MAX_DROP_IDS} input ids (e.g. ["inp_..."]), or absent to drop every pending input.`,
          );
        }
        return { result: await known(target.dropPending(sessionId, { ...(inputIds ? { inputIds } : {}), ...(reason ? { reason } : {}), ...actorOf(actor) })) };
      }
      case 'resolve': {
        const { kind, name, outcome, reason, data, actor } = body as unknown as CommandRequests['resolve'];
        const outcomes = kind === 'approval' ? ['approved', 'denied'] : kind === 'signal' ? ['delivered'] : [];
        if (!outcomes.includes(outcome as string)) {
          throw new Reject(
            CommandFailureCode.BadRequest,
            `Invalid resolve request: kind must be "approval" (outcome "approved" or "denied") or "signal" (outcome "delivered"), got kind ${echo(kind)} with outcome ${echo(outcome)}.`,
          );
        }
        if (typeof name !== 'string' || name.length === 0 || name.length > 200)
          throw new Reject(
            CommandFailureCode.BadRequest,
            `Invalid resolve request: name must be the call id or signal name (1 to 200 characters), got ${echo(name)}.`,
          );
        if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_CANCEL_REASON))
          throw new Reject(CommandFailureCode.BadRequest, `Invalid resolve request: reason must be a string of at most ${MAX_CANCEL_REASON} characters.`);
        const by = actorOf(actor);
        const why = reason === undefined ? by : { reason, ...by };
        const result =
          kind === 'signal'
            ? target.resolve(sessionId, name, data === undefined ? by : { data, ...by })
            : outcome === 'approved'
              ? target.approve(sessionId, name, why)
              : target.deny(sessionId, name, why);
        return { result: await known(result) };
      }
      case 'events': {
        const { afterSeq = 0, limit = EVENTS_PAGE } = body as unknown as CommandRequests['events'];
        if (!Number.isSafeInteger(afterSeq) || afterSeq < 0 || !Number.isSafeInteger(limit) || limit < 1 || limit > EVENTS_PAGE)
          throw new Reject(
            CommandFailureCode.BadRequest,
            `Invalid events request: afterSeq must be a whole number >= 0 and limit one from 1 to ${EVENTS_PAGE}, got afterSeq ${echo(afterSeq)} and limit ${echo(limit)}.`,
          );
        // one more than asked says whether another page follows
        const events = await known(target.events(sessionId, { afterSeq, limit: limit + 1 }));
        return eventsPage(sessionId, events, limit, maxPayload ?? NATS_DEFAULT_MAX_PAYLOAD);
      }
      case 'status': {
        const { pendingFrom } = body as CommandRequests['status'];
        if (pendingFrom !== undefined && (typeof pendingFrom !== 'number' || !Number.isInteger(pendingFrom) || pendingFrom < 0)) {
          throw new Reject(
            CommandFailureCode.BadRequest,
            `Invalid status request: pendingFrom must be a whole number >= 0 (the index of the first pending input to list), got ${JSON.stringify(pendingFrom)}.`,
          );
        }
        const reply: StatusReply = await known(target.status(sessionId, pendingFrom ? { pendingFrom } : {}));
        return reply as unknown as Record<string, unknown>;
      }
      case 'blob': {
        const request = body as unknown as CommandRequests['blob'];
        // through the target, so a tenant reaches only its own sessions' blobs
        return { ...(await readBlobChunk({ ...request, sessionId }, (id, page) => target.events(id, page), blobContext)) };
      }
    }
  };

  /** The target's answer; its `not_found` for a session with no events answered as `unknown_session`. */
  const known = <T>(answer: Promise<T>): Promise<T> =>
    answer.catch((err: unknown) => {
      if (isSessiondError(err) && err.code === ErrorCode.NotFound && typeof err.details.sessionId === 'string') {
        throw new Reject(CommandFailureCode.UnknownSession, err.message, { sessionId: err.details.sessionId });
      }
      throw err;
    });

  const tenants = new Map<string, ReturnType<typeof commandAnswerer>>();
  // made at the first tenant's command, shared by every tenant (a tenant's own answerer makes none)
  let tenantQuotas: TenantQuotas | undefined;
  return async (subject, data, maxPayload, traceparent) => {
    const tenant = subjects.tenantOfCommandSubject(subject);
    if (tenant !== undefined) {
      // the same answers, through a target that keeps the tenant to its own sessions (tenant-target.ts)
      let answer = tenants.get(tenant);
      if (!answer) {
        if (tenants.size >= MAX_TENANTS_KEPT) tenants.clear();
        tenantQuotas ??= { guard: quotaGuard(target, o.clock ?? systemClock), limits: { ...DEFAULT_TENANT_QUOTAS, ...o.tenantLimits } };
        tenants.set(tenant, (answer = commandAnswerer(tenantTarget(target, tenant, tenantQuotas), { ...o, tenant })));
      }
      return answer(`${COMMAND_PREFIX}.${subjects.verbOfCommandSubject(subject)}`, data, maxPayload, traceparent);
    }
    const verb = subjects.verbOfCommandSubject(subject);
    let reply: Record<string, unknown>;
    try {
      reply = { ok: true, ...(await handle(verb, subject, data, maxPayload, traceparent)) };
    } catch (err) {
      reply = fail(verb, err);
    }
    let bytes = encodeJson(reply);
    if (maxPayload !== undefined && bytes.length > maxPayload) {
      // a success reply too large to send: say so rather than leave the client waiting
      bytes = encodeJson(fail(verb, new Error(`its ${bytes.length}-byte reply is over the server's max_payload of ${maxPayload} bytes`)));
    }
    return bytes;
  };
}

/** nats-server's max_payload when the connection does not say (1 MB). */
const NATS_DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** Room an events reply keeps for its envelope (`{"ok":true,"events":[...],"more":false}`). */
const EVENTS_REPLY_OVERHEAD = 64;

/** The first events (at most `limit`) whose reply fits in `maxPayload`; `more` when some were left for the next page. */
function eventsPage(sessionId: string, events: SessionEvent[], limit: number, maxPayload: number): { events: SessionEvent[]; more: boolean } {
  const page: SessionEvent[] = [];
  let bytes = EVENTS_REPLY_OVERHEAD;
  for (const event of events.slice(0, limit)) {
    const size = encodeJson(event).length + 1;
    if (bytes + size > maxPayload) {
      if (page.length > 0) break;
      throw new SessiondError(
        ErrorCode.PayloadTooLarge,
        `Event ${event.seq} of session ${sessionId} is ${size} bytes as JSON, over what one reply may carry (the server's max_payload of ${maxPayload} bytes): read it from the stream as a trusted user (SessiondClient.replay), or through the gateway's event stream.`,
        { details: { sessionId, seq: event.seq, bytes: size, maxPayload } },
      );
    }
    bytes += size;
    page.push(event);
  }
  return { events: page, more: page.length < events.length };
}

function parseReplyPrefixes(value: readonly string[] | undefined): string[] {
  const prefixes = value === undefined ? [DEFAULT_REPLY_PREFIX] : [...value];
  if (!Array.isArray(prefixes) || prefixes.length === 0 || !prefixes.every((p) => typeof p === 'string' && SUBJECT_TOKENS.test(p))) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid command service option replyPrefixes ${JSON.stringify(value)}: give one or more inbox prefixes such as ["${DEFAULT_REPLY_PREFIX}"] (subject tokens, no wildcards).`,
      { details: { option: 'replyPrefixes' } },
    );
  }
  return prefixes;
}

/** True when `reply` is `<prefix>.<tokens>` for one of `prefixes`, with no wildcard. */
export function isAllowedReply(reply: string, prefixes: readonly string[]): boolean {
  if (!SUBJECT_TOKENS.test(reply)) return false;
  return prefixes.some((p) => reply.startsWith(`${p}.`));
}

/** Tenants whose answerers are kept (past it they are made again: they hold nothing but the target). */
const MAX_TENANTS_KEPT = 1000;

/** Each verb's largest body (admit's follows the prompt limit). */
const BODY_LIMITS: Partial<Record<CommandVerb, number>> = {
  wake: MAX_SMALL_REQUEST_BYTES,
  cancel: MAX_SMALL_REQUEST_BYTES,
  status: MAX_SMALL_REQUEST_BYTES,
  events: MAX_SMALL_REQUEST_BYTES,
  drop: MAX_DROP_REQUEST_BYTES,
  resolve: MAX_RESOLVE_REQUEST_BYTES,
  tag: MAX_TAGS_REQUEST_BYTES,
  budget: MAX_SMALL_REQUEST_BYTES,
  list: MAX_TAGS_REQUEST_BYTES,
  fork: MAX_TAGS_REQUEST_BYTES,
  upload: MAX_UPLOAD_REQUEST_BYTES,
  blob: MAX_SMALL_REQUEST_BYTES,
};

/** Unknown fields named in a refusal, and how much of each name. */
const MAX_FIELDS_SHOWN = 5;
const MAX_FIELD_CHARS = 60;

/** A request body: at most `maxBytes`, nested at most MAX_BODY_DEPTH, JSON, an object, known fields only, sessionId present. */
function parseBody(verb: CommandVerb, data: Uint8Array, maxBytes: number): Record<string, unknown> & { sessionId: unknown } {
  const example =
    verb === 'admit' ? '{"sessionId":"ses_1","prompt":"hello"}' : verb === 'cancel' ? '{"sessionId":"ses_1","reason":"user stop"}' : '{"sessionId":"ses_1"}';
  // size and depth first, without parsing: a huge or deeply nested body costs nothing to refuse
  if (data.length > maxBytes) {
    throw new Reject(
      CommandFailureCode.BadRequest,
      `The ${verb} request is ${data.length} bytes, over the limit of ${maxBytes} bytes for ${verb} requests${verb === 'admit' ? ' (set by the prompt limit)' : ''}: send a JSON object such as ${example}.`,
      { limit: maxBytes, bytes: data.length },
    );
  }
  const deep = tooDeepAt(data, MAX_BODY_DEPTH);
  if (deep >= 0) {
    throw new Reject(
      CommandFailureCode.BadRequest,
      `The ${verb} request is nested more than ${MAX_BODY_DEPTH} levels deep (at byte ${deep}): requests are flat JSON objects such as ${example}.`,
      { limit: MAX_BODY_DEPTH },
    );
  }
  let body: unknown;
  try {
    body = decodeJson(data);
  } catch (err) {
    throw new Reject(
      CommandFailureCode.BadRequest,
      `The ${verb} request is not valid UTF-8 JSON (${boundText(messageOf(err))}). Send a JSON object such as ${example}.`,
    );
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new Reject(
      CommandFailureCode.BadRequest,
      `The ${verb} request must be a JSON object such as ${example}, got ${Array.isArray(body) ? 'an array' : body === null ? 'null' : typeof body}.`,
    );
  }
  const fields = requestFields[verb];
  const unknown = Object.keys(body).filter((k) => !fields.includes(k));
  if (unknown.length > 0) {
    const shown =
      unknown
        .slice(0, MAX_FIELDS_SHOWN)
        .map((k) => echo(k, MAX_FIELD_CHARS))
        .join(', ') + (unknown.length > MAX_FIELDS_SHOWN ? ` and ${unknown.length - MAX_FIELDS_SHOWN} more` : '');
    throw new Reject(
      CommandFailureCode.BadRequest,
      `The ${verb} request has unknown field${unknown.length > 1 ? 's' : ''} ${shown}: the fields are ${fields.join(', ')}.`,
      { fields: unknown.slice(0, MAX_FIELDS_SHOWN).map((k) => boundText(k, MAX_FIELD_CHARS)) },
    );
  }
  if (!('sessionId' in body) && verb !== 'list' && verb !== 'upload')
    throw new Reject(CommandFailureCode.BadRequest, `The ${verb} request has no sessionId: send ${example}.`);
  return body as Record<string, unknown> & { sessionId: unknown };
}

function toErrorBody(verb: string, err: unknown): ErrorBody {
  if (err instanceof Reject) return { code: err.failure, message: err.message, ...(Object.keys(err.details).length > 0 ? { details: err.details } : {}) };
  if (isSessiondError(err)) return { code: err.code, message: err.message, ...(Object.keys(err.details).length > 0 ? { details: jsonSafe(err.details) } : {}) };
  return {
    code: CommandFailureCode.Internal,
    message: `The worker failed to run ${verb}: ${messageOf(err)}. Retry; if it keeps failing, look at the worker's output.`,
  };
}

/** Details made JSON-safe (drops what JSON cannot carry rather than failing the reply). */
function jsonSafe(details: Record<string, unknown>): Record<string, unknown> {
  try {
    return JSON.parse(JSON.stringify(details)) as Record<string, unknown>;
  } catch {
    return {};
  }
}
