/**
 * The one place commands meet I/O: load the session's snapshot (folding what the log has that we
 * have not seen), let the machine decide, stamp ids and time on the decided events, append them
 * with the snapshot's sequence as the fencing token, and fold what was committed. A conflict means
 * someone else wrote first: catch up and decide again (for a bounded time).
 */
import { sleep, type Clock } from '../clock.ts';
import type { IdSource } from '../ids.ts';
import type { EventLog } from '../events/event-log.ts';
import type { DraftEvent, SessionEvent } from '../events/envelope.ts';
import { decide, evolve, initialSnapshot, type SessionMachine, type SessionSnapshot } from '../machines/decider.ts';
import { DEFAULT_SNAPSHOT_EVERY, type SnapshotStore } from '../machines/snapshot-store.ts';
import { pendingBytes } from '../machines/session-context.ts';
import { verifyStoredSnapshot } from './verify-snapshot.ts';
import { messageOf, isSequenceConflict, CommandRefusedError } from '../errors.ts';
import { DEFAULT_MAX_HELD_BYTES } from '../input/limits.ts';
import { sessionMachine } from '../machines/session-machine.ts';
import type { Command } from '../machines/commands.ts';
import { retryTransient } from '../storage/sqlite/transient.ts';
import { catalog } from '../events/catalog.ts';

/** Conflicts retried at once (the usual race: one other write in between). */
export const IMMEDIATE_CONFLICT_RETRIES = 8;
/** How long a decide-and-append keeps losing races before it fails with `sequence_conflict` (see `decideAndAppendOnce`). */
export const DEFAULT_CONFLICT_RETRY_MS = 5_000;
/** How long a decide-and-append keeps retrying a locked database before it fails. */
export const DEFAULT_STORAGE_RETRY_MS = 5_000;
export const DEFAULT_SNAPSHOT_CACHE = 10_000;

/** Builds a command from the decision time and the state it is decided on. */
export type Build = (now: number, snapshot: SessionSnapshot) => Command;

export interface CommandResult {
  events: SessionEvent[];
  snapshot: SessionSnapshot;
}

export interface CommandHandlerOptions {
  machine?: SessionMachine;
  /** Sessions whose snapshot is kept in memory (least recently used are dropped). */
  cacheSize?: number;
  /** Stored snapshots: a cold load starts from the latest one instead of the first event. */
  snapshots?: SnapshotStore;
  /** Store a snapshot after this many events since the last one, and whenever a turn settles. */
  snapshotEvery?: number;
  /** Pending prompt bytes the cached sessions may hold together (least recently used are dropped past it). */
  maxHeldBytes?: number;
}

/** What the handler counts. */
export interface CommandHandlerStats {
  /** Stored snapshots that failed the check against the log: discarded, the session folded from the log. */
  snapshotsDiscarded: number;
  /** Stored snapshots not checked because they claim more than `MAX_CHECKED_PENDING` pending inputs (folded from the log). */
  snapshotsSetAside: number;
  /** Events `observe` folded into a cached snapshot: other writers' (this handler's own are folded once, by the append). */
  observed: number;
}

export class CommandHandler {
  readonly stats: CommandHandlerStats = { snapshotsDiscarded: 0, snapshotsSetAside: 0, observed: 0 };
  private readonly snapshots = new Map<string, SessionSnapshot>();
  /** Sessions whose stored snapshot failed the check on this load (replaced by the folded one). */
  private readonly discardedStored = new Set<string>();
  /** The seq of each cached session's last stored snapshot. */
  private readonly storedAt = new Map<string, number>();
  /** The tail of each session's queue of `execute` calls in this process (see `execute`). */
  private readonly writing = new Map<string, Promise<unknown>>();
  /** Ids of the events this handler is appending: the append folds them, so `observe` passes them by. */
  private readonly appending = new Set<string>();
  private readonly machine: SessionMachine;
  private readonly cacheSize: number;
  private readonly store: SnapshotStore | undefined;
  private readonly snapshotEvery: number;
  private readonly maxHeldBytes: number;
  /** Pending prompt bytes of each cached session (only those with some), and their sum. */
  private readonly held = new Map<string, number>();
  private heldBytes = 0;

  constructor(
    readonly log: EventLog,
    readonly clock: Clock,
    readonly ids: IdSource,
    options: CommandHandlerOptions = {},
  ) {
    this.machine = options.machine ?? sessionMachine;
    this.cacheSize = options.cacheSize ?? DEFAULT_SNAPSHOT_CACHE;
    this.store = options.snapshots;
    this.snapshotEvery = options.snapshotEvery ?? DEFAULT_SNAPSHOT_EVERY;
    this.maxHeldBytes = options.maxHeldBytes ?? DEFAULT_MAX_HELD_BYTES;
  }

  /** What the cached sessions hold in memory: how many, and the bytes of their pending prompts. */
  holding(): { sessions: number; pendingBytes: number } {
    return { sessions: this.snapshots.size, pendingBytes: this.heldBytes };
  }

  /** The session's snapshot, caught up with the log (from a stored snapshot on a cold load). */
  async load(sessionId: string): Promise<SessionSnapshot> {
    let snapshot = this.snapshots.get(sessionId) ?? (await this.coldStart(sessionId));
    let folded = 0;
    for (;;) {
      const events = await this.log.readSession(sessionId, { afterSeq: snapshot.context.seq, limit: 1000 });
      for (const e of events) snapshot = evolve(snapshot, e, this.machine);
      folded += events.length;
      if (events.length < 1000) break;
    }
    const newest = this.remember(sessionId, snapshot);
    // a discarded stored snapshot is replaced at once by the one folded from the log (on JetStream
    // the new message supersedes it: one per subject), so the next cold load does not meet it again
    const replace = this.discardedStored.delete(sessionId) && newest.context.seq > 0;
    if (folded >= this.snapshotEvery || replace) this.storeSnapshot(newest);
    return newest;
  }

  /**
   * Where a cold load starts: the stored snapshot once the log confirms it, else the beginning.
   * A stored snapshot is a cache anyone with the store's credentials can write: nothing rests on it
   * before `verifyStored` has found what it claims in the log. One that fails is discarded, told to
   * the store (which reports it) and counted; the session folds from the log.
   */
  private async coldStart(sessionId: string): Promise<SessionSnapshot> {
    const stored = await this.readStored(sessionId);
    if (stored) {
      const checked = await verifyStoredSnapshot(this.log, sessionId, stored).catch((err: unknown) => ({
        reason: `the log could not be read to check it (${messageOf(err)})`,
        report: false,
      }));
      if ('snapshot' in checked) {
        this.storedAt.set(sessionId, checked.snapshot.context.seq);
        return checked.snapshot;
      }
      if (checked.report) {
        this.stats.snapshotsDiscarded++;
        this.discardedStored.add(sessionId);
        try {
          this.store?.discarded?.(sessionId, checked.reason);
        } catch {
          // reporting is the store's; a failing report does not stop the load
        }
      } else {
        this.stats.snapshotsSetAside++;
      }
    }
    return initialSnapshot(sessionId, this.machine);
  }

  /**
   * A stored snapshot as the store returned it: untrusted, so every input it claims pending is
   * marked `unverified` (whatever the stored data says); the machine neither claims for nor
   * promotes such an input (`hasPending`, `promotesOnlyPending`) until `verifyStored` clears it.
   */
  private async readStored(sessionId: string): Promise<SessionSnapshot | undefined> {
    let stored: SessionSnapshot | undefined;
    try {
      stored = await this.store?.get(sessionId);
    } catch {
      return undefined; // a cache: an unreadable snapshot is rebuilt from the log
    }
    if (!Array.isArray(stored?.context?.pending)) return stored; // not a snapshot: verifyStored says so
    return { ...stored, context: { ...stored.context, pending: stored.context.pending.map((p) => ({ ...p, unverified: true as const })) } };
  }

  /**
   * Stores the snapshot in the background (a cache write: a failure is not the command's failure,
   * and nothing waits for it). Any snapshot of this session is valid, an older one only folds more.
   */
  private storeSnapshot(snapshot: SessionSnapshot): void {
    if (!this.store) return;
    const { sessionId, seq } = snapshot.context;
    this.storedAt.set(sessionId, seq); // no second put for the same stretch while this one is in flight
    this.store.put(snapshot).catch(() => {
      // locked, full or disconnected: the next trigger tries again; loads fold a little more meanwhile
      if (this.storedAt.get(sessionId) === seq) this.storedAt.delete(sessionId);
    });
  }

  /** Resolves once the commands of the session in progress in this handler are done (their appends folded into the cache). */
  async writesDone(sessionId: string): Promise<void> {
    await this.writing.get(sessionId);
  }

  /** The cached snapshot without touching the log (may be behind). */
  cached(sessionId: string): SessionSnapshot | undefined {
    return this.snapshots.get(sessionId);
  }

  /**
   * Folds events committed elsewhere (e.g. seen on a subscription) when they are the next ones. The
   * events of this handler's own appends are folded by the append that wrote them (a subscription
   * may see them before the append returns): not twice.
   */
  observe(events: readonly SessionEvent[]): void {
    for (const e of events) {
      if (this.appending.has(e.id)) continue;
      const snap = this.snapshots.get(e.sessionId);
      if (!snap) continue;
      if (e.seq === snap.context.seq + 1) {
        this.cache(e.sessionId, evolve(snap, e, this.machine));
        this.stats.observed++;
      } else if (e.seq > snap.context.seq + 1) this.forget(e.sessionId); // gap: reload next time
    }
  }

  /**
   * Decides and appends. An accepted decision is always checked by the append (a stale snapshot
   * means a conflict, a catch-up and a new decision), so the cached snapshot is used when there is
   * one. A refusal is not checked by anything: `fresh: true` catches up with the log before
   * deciding, for commands whose refusal on a stale snapshot would be wrong (a cancel refused as
   * "nothing to cancel" while another process runs a turn).
   */
  async execute(sessionId: string, build: Build, options: { fresh?: boolean } = {}): Promise<CommandResult> {
    return this.executeAll(sessionId, [build], options);
  }

  /**
   * Several commands as one decision: each is decided on the state the previous ones' events lead
   * to (exactly as if they were appended one after another with nothing in between), and all their
   * events are appended at once: one write, all or nothing. A refusal of any refuses them all.
   * E.g. claim + start + promotion of the turn's inputs: one append instead of three.
   */
  async executeAll(sessionId: string, builds: readonly Build[], options: { fresh?: boolean } = {}): Promise<CommandResult> {
    // One decide-and-append at a time per session in this process: racing its own writers, a busy
    // runner's heartbeat lost every retry until its lease expired (test/nats/multinode.test.ts).
    // Conflicts with other processes are still retried below.
    const previous = this.writing.get(sessionId) ?? Promise.resolve();
    const result = previous.then(() => this.decideAndAppend(sessionId, builds, options));
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.writing.set(sessionId, settled);
    void settled.then(() => {
      if (this.writing.get(sessionId) === settled) this.writing.delete(sessionId);
    });
    return result;
  }

  private async decideAndAppend(sessionId: string, builds: readonly Build[], options: { fresh?: boolean }): Promise<CommandResult> {
    // a locked database (SQLITE_BUSY): nothing was written; wait it out, catch up and decide again
    return retryTransient(() => this.decideAndAppendOnce(sessionId, builds, options), { clock: this.clock, forMs: DEFAULT_STORAGE_RETRY_MS });
  }

  /** The drafts of `builds` decided in turn on `snapshot` (each on the state the previous ones lead to). */
  private decideAll(sessionId: string, snapshot: SessionSnapshot, builds: readonly Build[], now: number): DraftEvent[] {
    const drafts: DraftEvent[] = [];
    let working = snapshot;
    for (const build of builds) {
      const command = build(now, working);
      const decision = decide(working, command, this.machine);
      if (!decision.ok) throw new CommandRefusedError(sessionId, command.type, decision.reason, decision.message);
      for (const p of decision.events) {
        const draft = { id: this.ids.next('evt'), type: p.type, time: now, payload: p.payload } as DraftEvent;
        drafts.push(draft);
        if (builds.length > 1)
          working = evolve(working, { ...draft, version: catalog[draft.type].version, sessionId, seq: working.context.seq + 1 } as SessionEvent, this.machine);
      }
    }
    return drafts;
  }

  /**
   * Decides on the cached (or loaded) snapshot and appends; on a conflict, catches up and decides
   * again. A few times at once, then with a short growing, jittered wait, until
   * `DEFAULT_CONFLICT_RETRY_MS` has passed: a count alone was too few when another process's turn
   * appends every few milliseconds (an admission lost eight races in a row).
   */
  private async decideAndAppendOnce(sessionId: string, builds: readonly Build[], options: { fresh?: boolean }): Promise<CommandResult> {
    const giveUpAt = this.clock.now() + DEFAULT_CONFLICT_RETRY_MS;
    let snapshot = options.fresh || !this.snapshots.has(sessionId) ? await this.load(sessionId) : this.snapshots.get(sessionId)!;
    for (let attempt = 0; ; attempt++) {
      const drafts = this.decideAll(sessionId, snapshot, builds, this.clock.now());
      for (const d of drafts) this.appending.add(d.id);
      try {
        const committed = await this.log.append(sessionId, snapshot.context.seq, drafts).finally(() => {
          for (const d of drafts) this.appending.delete(d.id);
        });
        for (const e of committed) snapshot = evolve(snapshot, e, this.machine);
        this.remember(sessionId, snapshot);
        const since = snapshot.context.seq - (this.storedAt.get(sessionId) ?? 0);
        // every `snapshotEvery` events, and at a settle once a fifth of that has passed (a settled
        // session is the one most likely to be loaded cold next)
        const settled = committed.some((e) => e.type === 'execution.settled');
        if (this.store && (since >= this.snapshotEvery || (settled && since >= this.snapshotEvery / 5))) this.storeSnapshot(snapshot);
        return { events: committed, snapshot };
      } catch (err) {
        if (!isSequenceConflict(err)) throw err;
        if (attempt >= IMMEDIATE_CONFLICT_RETRIES) {
          if (this.clock.now() >= giveUpAt) throw err;
          await sleep(this.clock, conflictBackoffMs(attempt - IMMEDIATE_CONFLICT_RETRIES));
        }
        snapshot = await this.load(sessionId);
      }
    }
  }

  /** Caches the snapshot unless a newer one is cached already; returns the newest. */
  private remember(sessionId: string, snapshot: SessionSnapshot): SessionSnapshot {
    // A load that raced an append of this process can be older than what that append cached; caching
    // it moved the session back in time and a live runner lost its claim (test/nats/multinode.test.ts).
    const known = this.snapshots.get(sessionId);
    if (known && known.context.seq > snapshot.context.seq) return known;
    this.snapshots.delete(sessionId);
    this.cache(sessionId, snapshot);
    // the least recently used go past either bound (never the session just cached)
    while (this.snapshots.size > this.cacheSize || (this.heldBytes > this.maxHeldBytes && this.snapshots.size > 1)) {
      const oldest = this.snapshots.keys().next().value;
      if (oldest === undefined || oldest === sessionId) break;
      this.forget(oldest);
      this.storedAt.delete(oldest);
    }
    return snapshot;
  }

  /** Caches a snapshot (most recently used last) and counts the pending bytes it holds. */
  private cache(sessionId: string, snapshot: SessionSnapshot): void {
    this.snapshots.set(sessionId, snapshot);
    const before = this.held.get(sessionId) ?? 0;
    const now = snapshot.context.pending.length === 0 ? 0 : pendingBytes(snapshot.context);
    this.heldBytes += now - before;
    if (now === 0) this.held.delete(sessionId);
    else this.held.set(sessionId, now);
  }

  /** Drops the cached snapshot (the next command folds the session from the log: after a delete, say). */
  forget(sessionId: string): void {
    this.snapshots.delete(sessionId);
    this.heldBytes -= this.held.get(sessionId) ?? 0;
    this.held.delete(sessionId);
  }
}

/** The wait before the n-th slow retry of a conflict: 2 ms doubling to 64 ms, times 0.5-1 (two retriers do not keep meeting). */
function conflictBackoffMs(n: number): number {
  return Math.ceil(Math.min(64, 2 * 2 ** n) * (0.5 + Math.random() / 2));
}
