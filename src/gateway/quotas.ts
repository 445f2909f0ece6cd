/**
 * What each token (grant) and tenant may use of the gateway: open streams (a cap) and, over rolling
 * windows, sessions created, forks and their bytes, admissions, plus pending prompt bytes. Pure
 * counters on an injected clock: `check`/`openStream` before acting, `record` after; a refusal is
 * `limit_exceeded` naming the quota (docs/gateway.md#quotas).
 */
import type { Clock } from '../clock.ts';
import { ErrorCode, SessiondError } from '../errors.ts';

export interface Quotas {
  /** Event and chat streams open at once. */
  streams: number;
  /** New sessions (a first admission, a fork's target) in a rolling hour. */
  sessionsPerHour: number;
  /** Forks in a rolling hour. */
  forksPerHour: number;
  /** Bytes of conversation forks copied in a rolling hour (checked before each fork against those made). */
  forkBytesPerHour: number;
  /** Admissions (prompts) in a rolling minute. */
  admissionsPerMinute: number;
  /** Prompt bytes admitted and not yet run, over the sessions it admitted to. */
  pendingBytes: number;
}

export type QuotaName = keyof Quotas;
export const QUOTA_NAMES: readonly QuotaName[] = ['streams', 'sessionsPerHour', 'forksPerHour', 'forkBytesPerHour', 'admissionsPerMinute', 'pendingBytes'];

const MIB = 1024 * 1024;
/** A token's limits unless its entry or the gateway says otherwise. */
export const DEFAULT_TOKEN_QUOTAS: Quotas = {
  streams: 100,
  sessionsPerHour: 1_000,
  forksPerHour: 100,
  forkBytesPerHour: 64 * MIB,
  admissionsPerMinute: 600,
  pendingBytes: 64 * MIB,
};
/** A tenant's limits (over all its tokens) unless the gateway says otherwise. */
export const DEFAULT_TENANT_QUOTAS: Quotas = {
  streams: 1_000,
  sessionsPerHour: 10_000,
  forksPerHour: 1_000,
  forkBytesPerHour: 640 * MIB,
  admissionsPerMinute: 6_000,
  pendingBytes: 640 * MIB,
};

const WINDOW_MS: Record<Exclude<QuotaName, 'streams' | 'pendingBytes'>, number> = {
  sessionsPerHour: 3_600_000,
  forksPerHour: 3_600_000,
  forkBytesPerHour: 3_600_000,
  admissionsPerMinute: 60_000,
};
type Windowed = keyof typeof WINDOW_MS;

/**
 * Limits as a token entry or a flag gives them: `{"streams": 10, "admissionsPerMinute": 60}`, whole
 * numbers >= 0 (0 refuses every use). Throws naming what was wrong (`where` says where it was read).
 */
export function parseQuotas(raw: unknown, where: string): Partial<Quotas> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new Error(`${where} must be an object such as {"streams": 10, "admissionsPerMinute": 60}`);
  const out: Partial<Quotas> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!(QUOTA_NAMES as readonly string[]).includes(k)) throw new Error(`${where} has unknown limit ${k} (the limits: ${QUOTA_NAMES.join(', ')})`);
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new Error(`${where}.${k} must be a whole number >= 0, got ${JSON.stringify(v)}`);
    out[k as QuotaName] = v;
  }
  return out;
}

/** One holder of quotas: a token or a tenant. */
export interface QuotaKey {
  /** `token:NAME` or `tenant:NAME`. */
  id: string;
  /** How a refusal names it: `token web-app`, `tenant acme`. */
  label: string;
  limits: Quotas;
}

/** The keys a grant is counted under: its own, and its tenant's (when it has one, but `*`). */
export function quotaKeys(grant: { name: string; tenant?: string; limits?: Partial<Quotas> }, defaults: { token: Quotas; tenant: Quotas }): QuotaKey[] {
  const keys: QuotaKey[] = [{ id: `token:${grant.name}`, label: `token ${grant.name}`, limits: { ...defaults.token, ...grant.limits } }];
  if (grant.tenant !== undefined && grant.tenant !== '*') keys.push({ id: `tenant:${grant.tenant}`, label: `tenant ${grant.tenant}`, limits: defaults.tenant });
  return keys;
}

const HINT: Record<QuotaName, string> = {
  streams: 'Close a stream it no longer reads',
  sessionsPerHour: 'Reuse a session, or wait',
  forksPerHour: 'Wait',
  forkBytesPerHour: 'Fork at an earlier point, or wait',
  admissionsPerMinute: 'Send fewer prompts, or wait',
  pendingBytes: 'Wait for its sessions to run what is pending, or drop pending inputs',
};

export function quotaRefusal(key: QuotaKey, quota: QuotaName, used: number, retryAfterMs?: number): SessiondError {
  const limit = key.limits[quota];
  const raise = key.id.startsWith('tenant:')
    ? `--tenant-limit ${quota}=N on the gateway, or on the workers for a NATS tenant user`
    : `"limits": {"${quota}": N} in the token's entry, or --token-limit ${quota}=N`;
  const retry = retryAfterMs !== undefined ? ` (room again in ${Math.ceil(retryAfterMs / 1000)} s)` : '';
  return new SessiondError(
    ErrorCode.LimitExceeded,
    `Refused: ${key.label} is at its limit ${quota} = ${limit} (${used} used). ${HINT[quota]}${retry}, or raise it (${raise}).`,
    { details: { quota, limit, used, holder: key.id, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) } },
  );
}

/** Sessions whose pending bytes a holder's count remembers. */
export const MAX_PENDING_SESSIONS = 10_000;

interface Holder {
  streams: number;
  windows: Map<Windowed, { t: number; n: number }[]>;
  /** Pending prompt bytes per session (an upper bound: runs lower it, `setPending` corrects it). */
  pending: Map<string, number>;
}

export class QuotaBook {
  private readonly holders = new Map<string, Holder>();

  constructor(private readonly clock: Pick<Clock, 'now'>) {}

  private holder(id: string): Holder {
    let h = this.holders.get(id);
    if (!h) {
      h = { streams: 0, windows: new Map(), pending: new Map() };
      this.holders.set(id, h);
    }
    return h;
  }

  /** The window's entries still inside it, and their sum. */
  private window(h: Holder, quota: Windowed): { entries: { t: number; n: number }[]; sum: number } {
    const since = this.clock.now() - WINDOW_MS[quota];
    const entries = (h.windows.get(quota) ?? []).filter((e) => e.t > since && e.n > 0);
    h.windows.set(quota, entries);
    return { entries, sum: entries.reduce((s, e) => s + e.n, 0) };
  }

  /** Refuses (throws limit_exceeded) when using `amount` more of a windowed quota would pass a key's limit. */
  check(keys: readonly QuotaKey[], quota: Windowed, amount = 1): void {
    for (const key of keys) {
      const { entries, sum } = this.window(this.holder(key.id), quota);
      const limit = key.limits[quota];
      if (sum + amount > limit || (quota === 'forkBytesPerHour' && sum >= limit)) {
        // when the oldest use leaves the window there is room again
        const retry = entries.length > 0 ? entries[0]!.t + WINDOW_MS[quota] - this.clock.now() : undefined;
        throw quotaRefusal(key, quota, sum, retry);
      }
    }
  }

  /** Records `amount` used of a windowed quota (before the action, so concurrent ones see it); the result takes it back. */
  record(keys: readonly QuotaKey[], quota: Windowed, amount = 1): () => void {
    if (amount <= 0) return () => undefined;
    const made: { t: number; n: number }[] = [];
    for (const key of keys) {
      const h = this.holder(key.id);
      this.window(h, quota);
      const entry = { t: this.clock.now(), n: amount };
      h.windows.get(quota)!.push(entry);
      made.push(entry);
    }
    return () => {
      for (const entry of made) entry.n = 0;
    };
  }

  /** Takes a stream place under every key (or throws, taking none); the returned function gives it back (once). */
  openStream(keys: readonly QuotaKey[]): () => void {
    for (const key of keys) {
      const used = this.holder(key.id).streams;
      if (used + 1 > key.limits.streams) throw quotaRefusal(key, 'streams', used);
    }
    for (const key of keys) this.holder(key.id).streams++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const key of keys) this.holder(key.id).streams--;
    };
  }

  streams(keyId: string): number {
    return this.holders.get(keyId)?.streams ?? 0;
  }

  /** The pending bytes counted for a key, and the sessions they are in. */
  pending(keyId: string): { total: number; sessions: string[] } {
    const p = this.holders.get(keyId)?.pending ?? new Map<string, number>();
    return { total: [...p.values()].reduce((s, n) => s + n, 0), sessions: [...p.keys()] };
  }

  /** An admission of `bytes` to `sessionId` left them pending, under every key. */
  addPending(keys: readonly QuotaKey[], sessionId: string, bytes: number): void {
    for (const key of keys) {
      const p = this.holder(key.id).pending;
      p.set(sessionId, (p.get(sessionId) ?? 0) + bytes);
      // memory stays bounded: past MAX_PENDING_SESSIONS the oldest is forgotten (its prompts have likely run)
      if (p.size > MAX_PENDING_SESSIONS) p.delete(p.keys().next().value!);
    }
  }

  /** What a session holds pending now (read from its status): corrects every key's count, at most that much. */
  setPending(keys: readonly QuotaKey[], sessionId: string, bytes: number): void {
    for (const key of keys) {
      const p = this.holder(key.id).pending;
      const known = p.get(sessionId);
      if (known === undefined) continue;
      const now = Math.min(known, bytes);
      if (now <= 0) p.delete(sessionId);
      else p.set(sessionId, now);
    }
  }

  /** The first key over its pending bytes limit with `bytes` more, or undefined. */
  overPending(keys: readonly QuotaKey[], bytes: number): QuotaKey | undefined {
    return keys.find((key) => this.pending(key.id).total + bytes > key.limits.pendingBytes);
  }
}
