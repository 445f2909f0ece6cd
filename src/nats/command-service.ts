/**
 * The worker side of the command protocol (shapes in commands.ts): serves `sessiond.cmd.*` in the
 * queue group `COMMAND_QUEUE`, so with any number of workers exactly one takes each request. A
 * worker holds a few places in the group (`places`), each good for one request and renewed as soon
 * as it is used: a worker that stops running (SIGSTOP, a blocked event loop) keeps at most `places`
 * requests and then gets no more, and the clients send those again to the others.
 *
 *   const nc = await connectNats({ servers, user: 'commands', pass });   // its own connection and user
 *   const service = startCommandService(nc, engine);   // engine: anything with admit/wake/cancel/status
 *   ...
 *   await service.close();                             // before closing the engine
 *
 * Replies go only into the requesters' inboxes. NATS does not check a request's reply subject, so a
 * caller could name `$JS.API.STREAM.PURGE.SESSIOND_EVENTS` or `sessiond.events.<s>` as its reply and
 * have the worker publish there with the worker's rights (a confused deputy). The service therefore
 * refuses, without running it, any request whose reply subject is not under one of `replyPrefixes`
 * (default `_INBOX_client`), and it is meant to run on a connection of its own whose user may publish
 * nothing but those inboxes (the `commands` user in nats.conf), so the server refuses it too.
 *
 * Every request gets a reply. Bad input (malformed JSON, unknown fields, an invalid id, an oversize
 * prompt, a session with no events) is answered with `{ ok: false, error }` and never reaches the
 * engine or crashes the worker; an unexpected engine failure is answered with `internal` and passed
 * to `onError`. Requests are handled concurrently; `close()` stops taking new ones and waits for
 * those in flight to be answered.
 */
import { wholeNumber } from '../options.ts';
import { pendingPage } from '../machines/session-view.ts';
import type { DropPendingRequest, DropPendingResult } from '../input/drop.ts';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { ErrorCode, SessiondError, isSessiondError, messageOf } from '../errors.ts';
import { isValidId, validateId } from '../ids.ts';
import { parseAdmitRequest, DEFAULT_MAX_PROMPT_BYTES, type AdmitReceipt, type AdmitRequest } from '../input/admit.ts';
import type { CancelResult, ResumeResult } from '../execution/session-execution.ts';
import type { SessionStatus } from '../engine.ts';
import {
  CommandFailureCode, MAX_CANCEL_REASON, MAX_DROP_IDS, EXECUTION_INPUTS_SHOWN, baseErrorCode, decodeJson, encodeJson, requestFields,
  type CommandFailure, type CommandRequests, type ErrorBody, type StatusReply, type WakeResult,
} from './commands.ts';
import { COMMAND_QUEUE, SUBJECT_TOKENS, commandVerbs, isCommandVerb, subjects, type CommandVerb } from './subjects.ts';
import { inboxPrefixOf } from './connection.ts';

/** What the service drives: the Engine's methods (`resume`, when present, gives wake its result). */
export interface CommandTarget {
  admit(sessionId: string, request: AdmitRequest): Promise<AdmitReceipt>;
  wake(sessionId: string): Promise<void>;
  resume?(sessionId: string): Promise<ResumeResult>;
  cancel(sessionId: string, reason?: string, executionId?: string): Promise<CancelResult>;
  status(sessionId: string): Promise<SessionStatus>;
  dropPending(sessionId: string, request?: DropPendingRequest): Promise<DropPendingResult>;
}

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
  /** A request refused for its reply subject (default: `onError`). It was not run and got no reply. */
  onRefusedReply?: (refused: RefusedReply) => void;
  /**
   * Requests the worker takes ahead of renewing its place in the queue group (default
   * `DEFAULT_QUEUE_PLACES`): a worker that stops running keeps at most this many, unanswered, and
   * the server sends it no more. Keep it below the client's requestTimeoutMs / attemptTimeoutMs.
   */
  places?: number;
}

/** Each place takes one request and is renewed at once by a running worker; a frozen one renews none. */
export const DEFAULT_QUEUE_PLACES = 3;

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
  constructor(readonly failure: CommandFailure, message: string, details?: Record<string, unknown>) {
    super(baseErrorCode(failure), message, details ? { details } : {});
    this.name = 'Reject';
  }
}

export function startCommandService(nc: NatsConnection, target: CommandTarget, options: CommandServiceOptions = {}): CommandService {
  const onError = options.onError ?? ((err: unknown) => process.stderr.write(`sessiond: command service: ${messageOf(err)}\n`));
  const maxPromptBytes = options.maxPromptBytes ?? DEFAULT_MAX_PROMPT_BYTES;
  const stats: CommandServiceStats = { requests: 0, refusedReplies: 0, failures: {} };
  const replyPrefixes = parseReplyPrefixes(options.replyPrefixes);
  const onRefusedReply = options.onRefusedReply ?? ((r: RefusedReply) => onError(new Error(r.message)));
  const inFlight = new Set<Promise<void>>();
  const queue = options.queue ?? COMMAND_QUEUE;
  const places = wholeNumber('command service', 'places', options.places, DEFAULT_QUEUE_PLACES);
  let closing = false;

  const serve = async (msg: Msg) => {
    const verb = subjects.verbOfCommandSubject(msg.subject);
    let reply: Record<string, unknown>;
    try {
      reply = { ok: true, ...await handle(verb, msg.subject, msg.data) };
    } catch (err) {
      const error = toErrorBody(verb, err);
      if (error.code === CommandFailureCode.Internal) onError(err);
      stats.failures[error.code] = (stats.failures[error.code] ?? 0) + 1;
      reply = { ok: false, error };
    }
    try {
      msg.respond(encodeJson(reply));
    } catch (err) {
      onError(err); // the connection closed under us: the client times out
    }
  };

  const handle = async (verb: string, subject: string, data: Uint8Array): Promise<Record<string, unknown>> => {
    if (!isCommandVerb(verb)) {
      throw new Reject(CommandFailureCode.UnknownCommand, `Unknown command ${JSON.stringify(verb)} (subject ${subject}): send one of ${commandVerbs.map((v) => subjects.command(v)).join(', ')}.`);
    }
    const body = parseBody(verb, data);
    const sessionId = validateId(body.sessionId, 'session id');
    switch (verb) {
      case 'admit': {
        const request = body as unknown as CommandRequests['admit'];
        const admit: AdmitRequest = { prompt: request.prompt };
        if (request.id !== undefined) admit.id = request.id;
        if (request.delivery !== undefined) admit.delivery = request.delivery;
        if (request.wake !== undefined) admit.wake = request.wake;
        parseAdmitRequest(sessionId, admit, maxPromptBytes); // every check before the engine sees it
        return { receipt: await target.admit(sessionId, admit) };
      }
      case 'wake': {
        await known(sessionId, verb);
        const result: WakeResult = target.resume ? await target.resume(sessionId) : (await target.wake(sessionId), { status: 'requested' });
        return { result };
      }
      case 'cancel': {
        const { reason, executionId } = body as CommandRequests['cancel'];
        if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_CANCEL_REASON)) {
          throw new Reject(CommandFailureCode.BadRequest, `Invalid cancel request: reason must be a string of at most ${MAX_CANCEL_REASON} characters.`);
        }
        if (executionId !== undefined && !isValidId(executionId)) {
          throw new Reject(CommandFailureCode.BadRequest, `Invalid cancel request: executionId must be an execution id (e.g. "exe_..."), got ${JSON.stringify(executionId)}.`);
        }
        await known(sessionId, verb);
        return { result: await target.cancel(sessionId, reason, executionId) };
      }
      case 'drop': {
        const { inputIds, reason } = body as CommandRequests['drop'];
        if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_CANCEL_REASON)) {
          throw new Reject(CommandFailureCode.BadRequest, `Invalid drop request: reason must be a string of at most ${MAX_CANCEL_REASON} characters.`);
        }
        if (inputIds !== undefined && (!Array.isArray(inputIds) || inputIds.length === 0 || inputIds.length > MAX_DROP_IDS || !inputIds.every(isValidId))) {
          throw new Reject(CommandFailureCode.BadRequest, `Invalid drop request: inputIds must be a list of 1-${MAX_DROP_IDS} input ids (e.g. ["inp_..."]), or absent to drop every pending input.`);
        }
        await known(sessionId, verb);
        return { result: await target.dropPending(sessionId, { ...(inputIds ? { inputIds } : {}), ...(reason ? { reason } : {}) }) };
      }
      case 'status': {
        const { pendingFrom } = body as CommandRequests['status'];
        if (pendingFrom !== undefined && (typeof pendingFrom !== 'number' || !Number.isInteger(pendingFrom) || pendingFrom < 0)) {
          throw new Reject(CommandFailureCode.BadRequest, `Invalid status request: pendingFrom must be a whole number >= 0 (the index of the first pending input to list), got ${JSON.stringify(pendingFrom)}.`);
        }
        const status = await known(sessionId, verb);
        const exec = status.context.execution;
        const reply: StatusReply = {
          // prompts stay out of the reply (up to 256 KiB each), and long lists are paged or cut, so a
          // reply stays small however many inputs wait: read prompts from the log when needed
          ...status.view, ...(pendingFrom ? pendingPage(status.context, pendingFrom) : {}),
          execution: exec ? { ...exec, inputIds: exec.inputIds.slice(0, EXECUTION_INPUTS_SHOWN), inputCount: exec.inputIds.length } : null,
        };
        return reply as unknown as Record<string, unknown>;
      }
    }
  };

  /** The session's status; `unknown_session` when it has no events. */
  const known = async (sessionId: string, verb: CommandVerb): Promise<SessionStatus> => {
    const status = await target.status(sessionId);
    if (status.seq === 0) {
      throw new Reject(CommandFailureCode.UnknownSession,
        `Session ${sessionId} has no events, so there is nothing to ${verb}. Check the session id, or admit a prompt first (it creates the session).`,
        { sessionId });
    }
    return status;
  };

  const take = (err: Error | null, msg: Msg) => {
    if (err) {
      onError(err); // e.g. a permissions violation: this user may not serve commands
      return;
    }
    stats.requests++;
    if (!msg.reply) {
      onError(new Error(`A message on ${msg.subject} has no reply subject: send commands as requests (nc.request), not publishes.`));
      return;
    }
    if (!isAllowedReply(msg.reply, replyPrefixes)) {
      stats.refusedReplies++;
      onRefusedReply({
        subject: msg.subject, reply: msg.reply,
        message: `Refused a request on ${msg.subject}: its reply subject ${JSON.stringify(msg.reply.slice(0, 200))} is not an inbox under ${replyPrefixes.join(', ')}, so it was neither run nor answered. Commands must be sent with nc.request from a connection whose inbox prefix nats.conf allows (docs/protocol.md).`,
      });
      return;
    }
    // requests delivered while draining are served too: the queue group gave them to us alone
    const p: Promise<void> = serve(msg).catch(onError).finally(() => inFlight.delete(p));
    inFlight.add(p);
  };

  // Each place is a queue subscription the server ends after one request (UNSUB <sid> 1); a place
  // used is renewed at once, so a worker that stops running (SIGSTOP, a blocked event loop) holds
  // at most `places` requests and then leaves the group, and clients resend those elsewhere.
  const open = new Set<Subscription>();
  const openPlace = () => {
    const place: Subscription = nc.subscribe(subjects.allCommands, {
      queue, max: 1,
      callback: (err, msg) => {
        open.delete(place);
        if (!err && !closing) openPlace();
        take(err, msg);
      },
    });
    open.add(place);
  };
  for (let i = 0; i < places; i++) openPlace();
  // nats.js resubscribes after a reconnect without the one-request limit: open the places afresh
  const statuses = nc.status() as AsyncIterable<{ type: string }> & { stop?: () => void };
  void (async () => {
    for await (const status of statuses) {
      if (status.type !== 'reconnect' || closing) continue;
      for (const place of [...open]) { open.delete(place); place.unsubscribe(); }
      for (let i = 0; i < places; i++) openPlace();
    }
  })().catch(onError);

  return {
    stats,
    async close() {
      if (closing) return;
      closing = true;
      statuses.stop?.();
      if (!nc.isClosed()) await Promise.all([...open].map((place) => place.drain().catch(() => place.unsubscribe())));
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}

function parseReplyPrefixes(value: readonly string[] | undefined): string[] {
  const prefixes = value === undefined ? [DEFAULT_REPLY_PREFIX] : [...value];
  if (!Array.isArray(prefixes) || prefixes.length === 0 || !prefixes.every((p) => typeof p === 'string' && SUBJECT_TOKENS.test(p))) {
    throw new SessiondError(ErrorCode.InvalidOption,
      `Invalid command service option replyPrefixes ${JSON.stringify(value)}: give one or more inbox prefixes such as ["${DEFAULT_REPLY_PREFIX}"] (subject tokens, no wildcards).`,
      { details: { option: 'replyPrefixes' } });
  }
  return prefixes;
}

/** True when `reply` is `<prefix>.<tokens>` for one of `prefixes`, with no wildcard. */
export function isAllowedReply(reply: string, prefixes: readonly string[]): boolean {
  if (!SUBJECT_TOKENS.test(reply)) return false;
  return prefixes.some((p) => reply.startsWith(`${p}.`));
}

/** A request body: JSON, an object, known fields only, sessionId present. */
function parseBody(verb: CommandVerb, data: Uint8Array): Record<string, unknown> & { sessionId: unknown } {
  const example = verb === 'admit' ? '{"sessionId":"ses_1","prompt":"hello"}' : verb === 'cancel' ? '{"sessionId":"ses_1","reason":"user stop"}' : '{"sessionId":"ses_1"}';
  let body: unknown;
  try {
    body = decodeJson(data);
  } catch (err) {
    throw new Reject(CommandFailureCode.BadRequest, `The ${verb} request is not valid UTF-8 JSON (${messageOf(err)}). Send a JSON object such as ${example}.`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new Reject(CommandFailureCode.BadRequest, `The ${verb} request must be a JSON object such as ${example}, got ${Array.isArray(body) ? 'an array' : body === null ? 'null' : typeof body}.`);
  }
  const fields = requestFields[verb];
  const unknown = Object.keys(body).filter((k) => !fields.includes(k));
  if (unknown.length > 0) {
    throw new Reject(CommandFailureCode.BadRequest, `The ${verb} request has unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')}: the fields are ${fields.join(', ')}.`,
      { fields: unknown });
  }
  if (!('sessionId' in body)) throw new Reject(CommandFailureCode.BadRequest, `The ${verb} request has no sessionId: send ${example}.`);
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

