/**
 * The gateway's quotas around the calls it makes (quotas.ts holds the counters): an admission is
 * checked against admissions per minute, pending bytes and, when it would create the session,
 * sessions per hour; a fork against forks and fork bytes per hour; a stream takes a place while it
 * is open. A gateway without tokens (loopback only) counts nothing.
 */
import type { Clock } from '../clock.ts';
import { isSessiondError, ErrorCode } from '../errors.ts';
import type { AdmitReceipt } from '../input/admit.ts';
import { promptBytes, type Prompt } from '../events/prompt.ts';
import type { ForkResult } from '../sessions/fork-result.ts';
import type { Sessions } from '../sessions/sessions.ts';
import { DEFAULT_TENANT_QUOTAS, DEFAULT_TOKEN_QUOTAS, QuotaBook, quotaKeys, quotaRefusal, type QuotaKey, type Quotas } from './quotas.ts';
import type { Grant } from './tokens.ts';

type GatewaySessions = Omit<Sessions, 'close'>;

export interface GatewayLimits {
  /** Every token's limits unless its entry says otherwise. */
  token?: Partial<Quotas>;
  /** Every tenant's limits (over all the tokens of that tenant). */
  tenant?: Partial<Quotas>;
}

export interface GatewayQuotas {
  readonly book: QuotaBook;
  admit(grant: Grant, sessionId: string, prompt: Prompt, run: () => Promise<AdmitReceipt>): Promise<AdmitReceipt>;
  fork(grant: Grant, target: string, run: () => Promise<ForkResult>): Promise<ForkResult>;
  /** Takes a stream place (or throws limit_exceeded); call the result when the stream ends. */
  openStream(grant: Grant): () => void;
}

/** The checks around admissions and forks, for any holder's keys (a gateway grant's, a NATS tenant's). */
export interface QuotaGuard {
  readonly book: QuotaBook;
  admit(keys: QuotaKey[], sessionId: string, prompt: Prompt, run: () => Promise<AdmitReceipt>): Promise<AdmitReceipt>;
  fork(keys: QuotaKey[], target: string, run: () => Promise<ForkResult>): Promise<ForkResult>;
}

/** The quota checks over `sessions` (status for pending bytes and existence, events for a fork's size). */
export function quotaGuard(sessions: Pick<Sessions, 'status' | 'events'>, clock: Pick<Clock, 'now'>): QuotaGuard {
  const book = new QuotaBook(clock);

  const exists = async (sessionId: string): Promise<boolean> => {
    try {
      await sessions.status(sessionId);
      return true;
    } catch (err) {
      if (isSessiondError(err, ErrorCode.NotFound)) return false;
      throw err;
    }
  };

  /** Reserves a new session under sessions per hour; when the window is full, asks whether it exists (then nothing to reserve). */
  const reserveSession = async (keys: QuotaKey[], sessionId: string): Promise<() => void> => {
    try {
      book.check(keys, 'sessionsPerHour');
    } catch (err) {
      if (await exists(sessionId)) return () => undefined;
      throw err;
    }
    return book.record(keys, 'sessionsPerHour');
  };

  /** Pending bytes, corrected from the sessions' status when the count says the admission would pass the limit. */
  const checkPending = async (keys: QuotaKey[], bytes: number) => {
    if (!book.overPending(keys, bytes)) return;
    const seen = new Set<string>();
    for (const key of keys)
      for (const id of book.pending(key.id).sessions) {
        if (seen.has(id)) continue;
        seen.add(id);
        const pending = await sessions.status(id).then(
          (s) => s.pendingBytes,
          () => 0,
        );
        book.setPending(keys, id, pending);
      }
    const over = book.overPending(keys, bytes);
    if (over) throw quotaRefusal(over, 'pendingBytes', book.pending(over.id).total);
  };

  return {
    book,
    async admit(keys, sessionId, prompt, run) {
      if (keys.length === 0) return run();
      // a malformed prompt counts nothing here: the admission refuses it, saying what is wrong
      const bytes = typeof prompt === 'string' || Array.isArray(prompt) ? promptBytes(prompt) : 0;
      book.check(keys, 'admissionsPerMinute');
      await checkPending(keys, bytes);
      const session = await reserveSession(keys, sessionId);
      const admission = book.record(keys, 'admissionsPerMinute');
      let receipt: AdmitReceipt;
      try {
        receipt = await run();
      } catch (err) {
        admission();
        session();
        throw err;
      }
      if (!receipt.created) admission(); // a resend of an input already admitted uses nothing
      if (!receipt.created || receipt.admittedSeq !== 1) session();
      if (receipt.created) book.addPending(keys, sessionId, bytes);
      return receipt;
    },
    async fork(keys, target, run) {
      if (keys.length === 0) return run();
      try {
        book.check(keys, 'forksPerHour');
        book.check(keys, 'forkBytesPerHour', 0);
        book.check(keys, 'sessionsPerHour');
      } catch (err) {
        // the same fork sent again makes nothing (created false), so it needs no room
        if (await exists(target)) return run();
        throw err;
      }
      const fork = book.record(keys, 'forksPerHour');
      const session = book.record(keys, 'sessionsPerHour');
      let result: ForkResult;
      try {
        result = await run();
      } catch (err) {
        fork();
        session();
        throw err;
      }
      if (!result.created) {
        fork();
        session();
        return result;
      }
      book.record(keys, 'forkBytesPerHour', await forkedBytes(sessions, target));
      return result;
    },
  };
}

export function gatewayQuotas(sessions: GatewaySessions, limits: GatewayLimits, clock: Pick<Clock, 'now'>, counted: (grant: Grant) => boolean): GatewayQuotas {
  const guard = quotaGuard(sessions, clock);
  const defaults = { token: { ...DEFAULT_TOKEN_QUOTAS, ...limits.token }, tenant: { ...DEFAULT_TENANT_QUOTAS, ...limits.tenant } };
  const keysOf = (grant: Grant): QuotaKey[] => (counted(grant) ? quotaKeys(grant, defaults) : []);
  return {
    book: guard.book,
    admit: (grant, sessionId, prompt, run) => guard.admit(keysOf(grant), sessionId, prompt, run),
    fork: (grant, target, run) => guard.fork(keysOf(grant), target, run),
    openStream(grant) {
      const keys = keysOf(grant);
      return keys.length === 0 ? () => undefined : guard.book.openStream(keys);
    },
  };
}

/** The size of a new fork's conversation: its first event (`session.forked`) as JSON (0 when it cannot be read). */
async function forkedBytes(sessions: Pick<Sessions, 'events'>, sessionId: string): Promise<number> {
  const [first] = await sessions.events(sessionId, { limit: 1 }).catch(() => []);
  return first ? Buffer.byteLength(JSON.stringify(first.payload)) : 0;
}
