/**
 * The client's commands: request/reply on `sessiond.cmd.<verb>` (a tenant's on its own subjects),
 * sent again while unanswered or while no worker serves the subject, and the replies checked.
 * Why: docs/nats.md#the-client.
 */
import { headers as natsHeaders, errors as natsErrors, type Msg, type NatsConnection } from '@nats-io/transport-node';
import type { Clock } from '../clock.ts';
import { ErrorCode, messageOf } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { AdmitReceipt } from '../input/admit.ts';
import type { CancelResult } from '../execution/session-execution.ts';
import type { ActorOptions } from '../sessions/actor.ts';
import { isPermissionError } from '../nats/connection.ts';
import {
  CommandError,
  CommandFailureCode,
  decodeJson,
  encodeRequest,
  isCommandError,
  type AdmitCommand,
  type CommandReply,
  type CommandRequests,
  type CommandResults,
} from '../nats/command-protocol.ts';
import { subjects, type CommandVerb } from '../nats/subjects.ts';

/** How long a command waits for a worker's reply, over all its attempts. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** How long one attempt waits before the command is sent again (it may reach another worker). */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 2_000;
/** How long a command is sent again while no worker serves its subject (workers resubscribing after an outage). */
export const DEFAULT_NO_WORKER_RETRY_MS = 3_000;

/** Admissions sent again at most this often when a worker answered `sequence_conflict` (the session kept moving under it). */
const ADMIT_CONFLICT_ATTEMPTS = 5;

export interface CommandSettings {
  /** Over all attempts (`SessiondClientOptions.requestTimeoutMs`). */
  timeoutMs: number;
  attemptTimeoutMs: number;
  noWorkerRetryMs: number;
  /** The tenant whose subjects the commands go to, if any. */
  tenant: string | undefined;
  /** The NATS user, named in a refusal. */
  user: string | undefined;
  clock: Clock;
  /** Throws when the client is closed. */
  assertOpen: () => void;
}

export class CommandSender {
  constructor(
    private readonly nc: NatsConnection,
    private readonly settings: CommandSettings,
  ) {}

  /** Admits `body` (see `SessiondClient.admit`), sent again when the session moved under the worker. */
  async admit(body: AdmitCommand): Promise<AdmitReceipt> {
    // Sent again after an attempt a worker took and did not answer (a frozen worker, a server
    // restart): finding the same input already admitted means that attempt admitted it, for this
    // call. Sent again too when the session moved under the worker more often than it retries
    // (many writers at once, `sequence_conflict`): an admission is idempotent by its id.
    let resentEver = false;
    for (let attempt = 1; ; attempt++) {
      try {
        const { result, resent } = await this.send('admit', body);
        resentEver ||= resent;
        return resentEver && !result.receipt.created ? { ...result.receipt, created: true } : result.receipt;
      } catch (err) {
        if (!isCommandError(err, ErrorCode.SequenceConflict) || attempt >= ADMIT_CONFLICT_ATTEMPTS) throw err;
        resentEver = true;
        await new Promise<void>((r) => {
          this.settings.clock.setTimeout(r, attempt * 10 + Math.random() * attempt * 20);
        });
      }
    }
  }

  /** Cancels the session's execution in progress (see `SessiondClient.cancel`). */
  async cancel(sessionId: string, reason?: string, executionId?: string, options: ActorOptions = {}): Promise<CancelResult> {
    let target = executionId;
    if (target === undefined) {
      // a status this user may not ask, or of a session with no events: the cancel itself says why
      const execution = await this.request('status', { sessionId }).then(
        (s) => s.execution,
        (err: unknown) => {
          if (isCommandError(err)) return undefined;
          throw err;
        },
      );
      if (execution && execution.outcome !== null) {
        return { cancelled: false, reason: 'nothing_to_cancel', message: `session ${sessionId} has no execution in progress to cancel` };
      }
      target = execution?.id;
    }
    const { result, resent } = await this.send('cancel', {
      sessionId,
      ...(target === undefined ? {} : { executionId: target }),
      ...(reason === undefined ? {} : { reason }),
      ...(options.actor === undefined ? {} : { actor: options.actor }),
    });
    if (result.result.cancelled || !resent || result.result.reason !== 'nothing_to_cancel') return result.result;
    const { execution } = await this.request('status', { sessionId });
    return execution?.cancelled ? { cancelled: true, executionId: execution.id } : result.result;
  }

  async request<V extends CommandVerb>(verb: V, body: CommandRequests[V]): Promise<CommandResults[V]> {
    return (await this.send(verb, body)).result;
  }

  /**
   * Sends the request and waits up to attemptTimeoutMs for a reply, then sends the same body again
   * (it may reach another worker) until the unanswered attempts add up to requestTimeoutMs;
   * while no worker serves the subject (nobody received it), sends it again with backoff for up to
   * noWorkerRetryMs. `resent`: an earlier attempt reached a worker that did not answer in time (it
   * may have run it).
   */
  async send<V extends CommandVerb>(verb: V, body: CommandRequests[V]): Promise<{ result: CommandResults[V]; resent: boolean }> {
    const { timeoutMs, attemptTimeoutMs, noWorkerRetryMs, tenant, clock } = this.settings;
    this.settings.assertOpen();
    if ('sessionId' in body) validateId(body.sessionId, 'session id');
    const subject = tenant === undefined ? subjects.command(verb) : subjects.tenantCommand(tenant, verb);
    // an admit's caller trace context goes as the W3C traceparent header, as NATS instrumentations carry it
    const { traceparent, ...rest } = body as CommandRequests[V] & { traceparent?: string };
    const traced = verb === 'admit' && typeof traceparent === 'string' ? traceparent : undefined;
    const data = encodeRequest(verb, (traced === undefined ? body : rest) as CommandRequests[V]);
    const hdrs = traced === undefined ? undefined : natsHeaders();
    hdrs?.set('traceparent', traced!);
    const started = clock.now();
    let msg: Msg;
    let attempts = 0;
    let unanswered = 0; // ms spent on attempts that someone received and did not answer
    for (let wait = 10; ; ) {
      attempts++;
      const timeout = Math.min(attemptTimeoutMs, timeoutMs - unanswered);
      try {
        msg = await this.nc.request(subject, data, { timeout, ...(hdrs ? { headers: hdrs } : {}) });
        break;
      } catch (err) {
        const failure = this.noReply(verb, subject, body as { sessionId?: string; id?: string }, err, attempts);
        if (this.nc.isClosed()) throw failure;
        if (failure.failure === CommandFailureCode.Timeout && failure.cause instanceof natsErrors.TimeoutError) {
          unanswered += timeout;
          if (unanswered < timeoutMs) continue;
          throw failure;
        }
        // nobody received it: sending it again is safe, until the retry window is spent (the last pause is what is left of it)
        const left = started + noWorkerRetryMs - clock.now();
        if (failure.failure !== CommandFailureCode.NoWorker || left <= 0) throw failure;
        await new Promise<void>((r) => {
          clock.setTimeout(r, Math.min(wait / 2 + (Math.random() * wait) / 2, left));
        });
        wait = Math.min(wait * 2, 500);
      }
    }
    return { result: this.replyOf(verb, subject, msg), resent: unanswered > 0 };
  }

  /** The worker's reply, checked: its result, or its error reply thrown as a `CommandError`. */
  private replyOf<V extends CommandVerb>(verb: V, subject: string, msg: Msg): CommandResults[V] {
    let reply: CommandReply<V>;
    try {
      reply = decodeJson(msg.data) as CommandReply<V>;
    } catch (err) {
      throw new CommandError(
        verb,
        CommandFailureCode.Internal,
        `The reply to ${verb} on ${subject} is not JSON (${messageOf(err)}): is something other than a sessiond worker answering ${subject}?`,
        { cause: err },
      );
    }
    if (reply === null || typeof reply !== 'object' || typeof reply.ok !== 'boolean') {
      throw new CommandError(
        verb,
        CommandFailureCode.Internal,
        `The reply to ${verb} on ${subject} is not a sessiond reply: is something other than a sessiond worker answering ${subject}?`,
      );
    }
    if (!reply.ok) {
      const error = reply.error ?? { code: CommandFailureCode.Internal, message: 'no error given' };
      throw new CommandError(verb, error.code, error.message, error.details ? { details: error.details } : {});
    }
    const { ok: _ok, ...result } = reply;
    return result as unknown as CommandResults[V];
  }

  /** Why an attempt got no reply, as the `CommandError` the caller gets. */
  private noReply(verb: CommandVerb, subject: string, body: { sessionId?: string; id?: string }, err: unknown, attempts: number): CommandError {
    const { timeoutMs, noWorkerRetryMs, user } = this.settings;
    const cause = err instanceof natsErrors.RequestError && err.cause ? err.cause : err;
    if (cause instanceof natsErrors.NoRespondersError) {
      return new CommandError(
        verb,
        CommandFailureCode.NoWorker,
        `No sessiond worker is serving ${subject} on ${this.nc.getServer()}${noWorkerRetryMs > 0 ? ` (asked again for ${noWorkerRetryMs} ms)` : ''}: start one (sessiond start --nats <url> --nats-user worker --nats-pass <secret>) and retry.`,
        { cause: err },
      );
    }
    if (isPermissionError(err)) {
      return new CommandError(
        verb,
        CommandFailureCode.PermissionDenied,
        `NATS user ${user ?? "(this connection's user)"} may not send sessiond commands: nats.conf refuses publishing to ${subject}. Connect as a user allowed to publish sessiond.cmd.> (the client user in nats.conf; workers' own users may not).`,
        { cause: err },
      );
    }
    if (cause instanceof natsErrors.TimeoutError) {
      const retry =
        verb === 'admit' && body.id ? `admit again with the same input id ${body.id} (it is idempotent)` : `check with status before sending ${verb} again`;
      return new CommandError(
        verb,
        CommandFailureCode.Timeout,
        `No reply to ${verb}${body.sessionId === undefined ? '' : ` for session ${body.sessionId}`} within ${timeoutMs} ms (sent ${attempts} time${attempts > 1 ? 's' : ''}): the workers may be busy or gone, so the command may or may not have run. To be sure, ${retry}.`,
        { cause },
      );
    }
    if (this.nc.isClosed())
      return new CommandError(verb, ErrorCode.LogClosed, `The NATS connection is closed: connect a new SessiondClient to send ${verb}.`, { cause: err });
    return new CommandError(verb, CommandFailureCode.Timeout, `Sending ${verb} on ${subject} failed: ${messageOf(err)}. Check the NATS connection and retry.`, {
      cause: err,
    });
  }
}
