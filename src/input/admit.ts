/**
 * Admission: a prompt enters a session's inbox, idempotent by input id. An exact retry returns the
 * same receipt; reusing an id with different content is refused.
 */
import { parseTraceparent } from '../observability/tracing.ts';
import { ErrorCode, SessiondError, isRefusal } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { Delivery, Prompt } from '../events/catalog.ts';
import { checkPrompt, samePrompt } from '../events/prompt.ts';
import { MAX_TAGS, sameTags, validateTags, type Tags } from '../events/tags.ts';
import type { CommandHandler } from '../execution/command-handler.ts';
import { admittedSeq } from '../machines/session-context.ts';
import { DEFAULT_LIMITS, DEFAULT_MAX_PROMPT_BYTES, type SessionLimits } from './limits.ts';
import { urlGuard, type UrlGuard } from './url-guard.ts';
import { storeBlobParts } from './blob-parts.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import type { BlobAccess } from '../blobs/blob-grants.ts';
import { LATEST_CLIENT_TIME, isoTime } from '../clock.ts';
import { checkOwner, unreachable } from '../sessions/owner.ts';
import { DEFAULT_BLOB_GRACE_MS } from '../blobs/sweep.ts';
import { executeMarked, markOf } from '../execution/blob-marks.ts';

export { DEFAULT_MAX_PROMPT_BYTES };

export interface AdmitRequest {
  /** Idempotency key; generated when absent. */
  id?: string;
  /** A string, or a list of parts: text, an image or a file (by URL or base64 bytes), JSON data (see `PromptPart`). */
  prompt: Prompt;
  delivery?: Delivery;
  /** Wake the session after admitting (default true). */
  wake?: boolean;
  /** Schedule the prompt: no turn takes it before this time (ms since the epoch); the recovery sweep wakes the session when it is due. */
  notBefore?: number;
  /** Tags for the session (`{ customer: 'acme' }`): merged into those it has, at most `MAX_TAGS` in all (events/tags.ts). */
  tags?: Tags;
  /**
   * Who admits (a gateway grant's tenant, `token:<name>`): the session's owner when this admission
   * creates it. A session another owner holds answers `not_found`, as one with no events would;
   * one with no owner takes the admission and stays ownerless (sessions/owner.ts).
   */
  owner?: string;
  /**
   * The caller's W3C trace context (`00-<trace id>-<span id>-<flags>`): the turn that runs this input
   * is its child, on whichever worker. A malformed one is ignored (and counted), never an error.
   */
  traceparent?: string;
  /** The session whose turn admits this (set by `ctx.callSession`): shown as the child's `calledBy`. */
  caller?: string;
}

export interface AdmitReceipt {
  sessionId: string;
  inputId: string;
  /** Sequence of the `input.admitted` event. */
  admittedSeq: number;
  /** False when this was a retry of an input already admitted. */
  created: boolean;
  wake: boolean;
}

export function parseAdmitRequest(sessionId: string, req: AdmitRequest, maxPromptBytes = DEFAULT_MAX_PROMPT_BYTES): ParsedAdmission {
  validateId(sessionId, 'session id');
  if (req === null || typeof req !== 'object') throw invalid('the request must be an object like { prompt: "..." }');
  if (req.id !== undefined) validateId(req.id, 'input id');
  let prompt: Prompt;
  try {
    prompt = checkPrompt(req.prompt, maxPromptBytes);
  } catch (err) {
    throw invalid((err as Error).message);
  }
  const delivery = req.delivery ?? 'queue';
  if (delivery !== 'steer' && delivery !== 'queue') throw invalid(`delivery must be "steer" or "queue", got ${JSON.stringify(delivery)}`);
  if (req.wake !== undefined && typeof req.wake !== 'boolean') throw invalid('wake must be true or false');
  const notBefore = req.notBefore;
  if (notBefore !== undefined && (!Number.isSafeInteger(notBefore) || notBefore < 0))
    throw invalid(`notBefore must be a time in whole milliseconds since the epoch (e.g. Date.parse('2026-12-24T09:00:00Z')), got ${String(notBefore)}`);
  if (notBefore !== undefined && notBefore > LATEST_CLIENT_TIME)
    throw invalid(`notBefore ${notBefore} is after ${isoTime(LATEST_CLIENT_TIME)}, the latest time a prompt may be scheduled for`);
  const tags = req.tags === undefined ? undefined : (validateTags(req.tags, 'the admission') as Tags);
  if (req.owner !== undefined) checkOwner(req.owner);
  const trace = parseTraceparent(req.traceparent);
  return {
    ...(trace ? { traceparent: `00-${trace.traceId}-${trace.spanId}-0${trace.traceFlags & 1}` } : {}),
    ...(req.id ? { id: req.id } : {}),
    prompt,
    delivery,
    wake: req.wake ?? true,
    ...(notBefore === undefined ? {} : { notBefore }),
    ...(tags === undefined || Object.keys(tags).length === 0 ? {} : { tags }),
    ...(req.owner === undefined ? {} : { owner: req.owner }),
    ...(req.caller === undefined ? {} : { caller: validateId(req.caller, 'caller session id') }),
  };
}

/** An admission checked: defaults applied, tags sorted (absent when none). */
export type ParsedAdmission = Required<Pick<AdmitRequest, 'prompt' | 'delivery' | 'wake'>> &
  Pick<AdmitRequest, 'id' | 'notBefore' | 'tags' | 'owner' | 'traceparent' | 'caller'>;

/** What an admission holds that an exact resend must repeat: its prompt, delivery, wake, time and tags. */
export function sameAdmission(a: Omit<ParsedAdmission, 'id' | 'owner'>, b: Omit<ParsedAdmission, 'id' | 'owner'>): boolean {
  return samePrompt(a.prompt, b.prompt) && a.delivery === b.delivery && a.wake === b.wake && a.notBefore === b.notBefore && sameTags(a.tags, b.tags);
}

function invalid(why: string): SessiondError {
  return new SessiondError(ErrorCode.InvalidOption, `Invalid input: ${why}.`);
}

/** Whether the admission's owner may reference a stored blob (a request's owner is checked by the parse after). */
function mayUseFor(request: AdmitRequest, access: BlobAccess | undefined): ((sha256: string) => Promise<boolean>) | undefined {
  if (!access) return undefined;
  const owner = request.owner === undefined ? undefined : String(request.owner);
  return (sha256) => access(owner, sha256);
}

/** Where an admission's large parts go, and who may reference stored ones. */
export interface AdmissionBlobs {
  store?: BlobStore | undefined;
  /** Whether the admission's owner may name a stored blob (blob-grants.ts); absent: any caller may. */
  access?: BlobAccess | undefined;
  /** The grace deletes and sweeps keep unreferenced blobs for: the append checks its blobs' mark against it (src/execution/blob-marks.ts). */
  graceMs?: number | undefined;
}

/** No allowlist, the system's resolver: what an admission gets when it is given no guard. */
const DEFAULT_URL_GUARD = urlGuard();

export async function admitInput(
  handler: CommandHandler,
  sessionId: string,
  request: AdmitRequest,
  limits: SessionLimits = DEFAULT_LIMITS,
  urls: UrlGuard = DEFAULT_URL_GUARD,
  { store, access, graceMs = DEFAULT_BLOB_GRACE_MS }: AdmissionBlobs = {},
): Promise<AdmitReceipt> {
  const mayUse = mayUseFor(request, access);
  if (request !== null && typeof request === 'object') validateId(sessionId, 'session id');
  const markedAt = handler.clock.now(); // before the blobs are put: the mark is at least this recent
  // large parts go to the blob store first (written before the event that references them: a crash
  // or a refusal between leaves at most an orphan blob, which a sweep removes); the size check then
  // counts the event
  const staged =
    request !== null && typeof request === 'object'
      ? { ...request, prompt: await storeBlobParts(request.prompt, store, limits.maxBlobBytes, mayUse) }
      : request;
  const req = parseAdmitRequest(sessionId, staged, limits.maxPromptBytes);
  await urls.check(req.prompt);
  const inputId = req.id ?? handler.ids.next('inp');
  const { maxPendingInputs, maxPendingBytes, maxPendingBlobBytes } = limits;
  try {
    // the prompt's blobs were marked when its parts were stored or checked; too old a mark stores them again
    const mark = markOf({ type: 'input.admitted', payload: { prompt: req.prompt } }, markedAt, graceMs, () => async () => {
      await storeBlobParts(request.prompt, store, limits.maxBlobBytes, mayUse);
    });
    const { events } = await executeMarked(handler, sessionId, mark, (now) => ({
      type: 'admit',
      now,
      inputId,
      prompt: req.prompt,
      delivery: req.delivery,
      wake: req.wake,
      limits: { maxPendingInputs, maxPendingBytes, maxPendingBlobBytes },
      ...(req.notBefore === undefined ? {} : { notBefore: req.notBefore }),
      ...(req.tags === undefined ? {} : { tags: req.tags }),
      ...(req.owner === undefined ? {} : { owner: req.owner }),
      ...(req.traceparent === undefined ? {} : { traceparent: req.traceparent }),
      ...(req.caller === undefined ? {} : { caller: req.caller }),
    }));
    return { sessionId, inputId, admittedSeq: events[0]!.seq, created: true, wake: req.wake };
  } catch (err) {
    if (isRefusal(err, 'not_owner')) throw unreachable(sessionId);
    if (isRefusal(err, 'pending_limit')) {
      throw new SessiondError(ErrorCode.LimitExceeded, err.message.replace(/^admit refused for session \S+ \(pending_limit\): /, ''), {
        cause: err,
        details: { sessionId, inputId, maxPendingInputs, maxPendingBytes, maxPendingBlobBytes },
      });
    }
    if (isRefusal(err, 'tag_limit')) {
      throw new SessiondError(ErrorCode.LimitExceeded, err.message.replace(/^admit refused for session \S+ \(tag_limit\): /, ''), {
        cause: err,
        details: { sessionId, inputId, maxTags: MAX_TAGS },
      });
    }
    if (!isRefusal(err, 'already_admitted')) throw err;
    const snapshot = await handler.load(sessionId);
    const seq = admittedSeq(snapshot.context, inputId)!;
    // a pending input carries its prompt in the session state; a promoted one is read back from the log
    const pending = snapshot.context.pending.find((p) => p.inputId === inputId);
    const admitted = pending ?? (await readAdmitted(handler, sessionId, seq));
    if (!admitted) {
      // the id of a prompt in the conversation the session was forked with (its session.forked)
      throw new SessiondError(
        ErrorCode.InputConflict,
        `Input ${inputId} is the id of a prompt in the conversation session ${sessionId} was forked with (sequence ${seq}). Use a new input id.`,
        { details: { sessionId, inputId, admittedSeq: seq } },
      );
    }
    if (!sameAdmission(admitted, req)) {
      throw new SessiondError(
        ErrorCode.InputConflict,
        `Input ${inputId} was already admitted to session ${sessionId} with different content (at sequence ${seq}). Use a new input id for a new prompt.`,
        { details: { sessionId, inputId, admittedSeq: seq } },
      );
    }
    return { sessionId, inputId, admittedSeq: seq, created: false, wake: req.wake };
  }
}

/** The content of the input admitted at `seq` (one read of one event). */
async function readAdmitted(handler: CommandHandler, sessionId: string, seq: number): Promise<Omit<ParsedAdmission, 'id'> | undefined> {
  const [event] = await handler.log.readSession(sessionId, { afterSeq: seq - 1, limit: 1 });
  return event?.type === 'input.admitted' ? event.payload : undefined;
}
