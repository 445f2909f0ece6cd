/**
 * Live events on NATS core subjects (`sessiond.live.<session>.<type>`), never stored: `NatsLiveBus`
 * (the worker's `LiveBus`, which never throws into the runner) and the msgpack wire format
 * (`encodeLiveEvent`, `decodeLiveEvent`, fully checked). Ordering and gaps:
 * docs/nats.md#live-events.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, SessiondError, isSessiondError, messageOf } from '../errors.ts';
import { catalog } from '../events/catalog.ts';
import { DEFAULT_MAX_PAYLOAD_BYTES, decodeEvent, pack, unpack } from '../events/codec.ts';
import type { LiveBus, LiveEvent } from '../events/live-bus.ts';
import { TENANT_NAME, subjects } from './subjects.ts';

/** A live event as it travels: the LiveEvent plus its schema version and, when committed, its log position. */
export type LiveMessage = LiveEvent & { version: number; position?: number };

/** The msgpack body of a live message (a plain map; optional fields are left out, never nil). */
export function encodeLiveEvent(event: LiveEvent & { version?: number; position?: number }): Uint8Array {
  const frame: Record<string, unknown> = {
    id: event.id,
    type: event.type,
    version: event.version ?? catalog[event.type].version,
    sessionId: event.sessionId,
    time: event.time,
    payload: event.payload,
  };
  if (event.seq !== undefined) frame.seq = event.seq;
  if (event.position !== undefined) frame.position = event.position;
  return pack(frame);
}

/**
 * Decodes and schema-checks one live message received on `subject`. Throws a `SessiondError`
 * (decode_failed, unknown_event_type, unsupported_event_version, invalid_payload, invalid_id,
 * payload_too_large) whose message says what is wrong; `details.seq` holds the event's seq when the
 * frame was readable that far.
 */
export function decodeLiveEvent(data: Uint8Array, subject: string, maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES, tenant?: string): LiveMessage {
  const source = { describe: `Live message on ${subject}`, hint: 'Only sessiond workers should publish on sessiond.live.>.', seqRequired: false };
  let event: LiveMessage;
  try {
    event = decodeEvent(data, { maxPayloadBytes, source }) as LiveMessage;
  } catch (err) {
    // the seq, when the frame says one, tells a subscriber which gap to fill
    if (isSessiondError(err)) Object.assign(err.details, { subject }, seqOf(data));
    throw err;
  }
  if (event.position !== undefined && !isCount(event.position)) throw invalid(subject, 'position must be a whole number >= 1 when present', event.seq);
  const expected = tenant === undefined ? subjects.live(event.sessionId, event.type) : subjects.tenantLive(tenant, event.sessionId, event.type);
  if (subject !== expected) throw invalid(subject, `it says session ${event.sessionId} and type ${event.type}, which belong on ${expected}`, event.seq);
  return event;
}

function invalid(subject: string, why: string, seq: number | undefined): SessiondError {
  return new SessiondError(
    ErrorCode.DecodeFailed,
    `Live message on ${subject} is not a valid sessiond event: ${why}. Only sessiond workers should publish on sessiond.live.>.`,
    { details: { subject, ...(seq !== undefined ? { seq } : {}) } },
  );
}

/** `{ seq }` of a frame that is a map with a whole seq >= 1, else nothing. */
function seqOf(data: Uint8Array): { seq?: number } {
  try {
    const raw = unpack(data) as { seq?: unknown } | null;
    return raw !== null && typeof raw === 'object' && isCount(raw.seq) ? { seq: raw.seq } : {};
  } catch {
    return {};
  }
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1;
}

export interface NatsLiveBusStats {
  published: number;
  /** Events that could not be published (connection closed): live events are best effort. */
  dropped: number;
}

export interface NatsLiveBusOptions {
  onError?: (err: unknown) => void;
  /**
   * The owner of a session (`SessionStatus.ownedBy`; null for none). Given, each event of a session
   * a tenant owns goes out on that tenant's copy of its subject too
   * (`sessiond.t.<tenant>.live.<session>.<type>`), which only the tenant's user may subscribe to.
   */
  ownerOf?: (sessionId: string) => Promise<string | null>;
  /** How long an owner looked up is trusted (default 2 s: a deleted session's id may be taken again). */
  ownerTtlMs?: number;
  /** The clock of that (default `Date.now`). */
  now?: () => number;
}

/** Sessions whose owner a bus remembers at most. */
const OWNERS_KEPT = 10_000;

/** The LiveBus on NATS core subjects. Shares the caller's connection and never closes it. */
export class NatsLiveBus implements LiveBus {
  readonly stats: NatsLiveBusStats = { published: 0, dropped: 0 };
  private readonly onError: (err: unknown) => void;
  private warned = false;
  private readonly owners = new Map<string, { owner: string | null; until: number }>();
  /** Per session, the tenant copies waiting for its owner, so they go out in order. */
  private readonly waiting = new Map<string, Promise<void>>();

  constructor(
    readonly nc: NatsConnection,
    private readonly options: NatsLiveBusOptions = {},
  ) {
    this.onError =
      options.onError ??
      ((err) => {
        if (this.warned) return; // once: a closed connection would otherwise print for every delta
        this.warned = true;
        process.stderr.write(`sessiond: live events are being dropped: ${messageOf(err)}\n`);
      });
  }

  publish(event: LiveEvent & { version?: number; position?: number }): void {
    let data: Uint8Array;
    try {
      data = encodeLiveEvent(event);
      this.nc.publish(subjects.live(event.sessionId, event.type), data);
      this.stats.published++;
    } catch (err) {
      this.stats.dropped++;
      this.onError(err);
      return;
    }
    if (this.options.ownerOf) this.copyToTenant(event, data);
  }

  private copyToTenant(event: LiveEvent, data: Uint8Array): void {
    const id = event.sessionId;
    const now = this.options.now ?? Date.now;
    // a session's first event names its owner (or none): no lookup
    if (event.seq === 1) this.remember(id, (event.payload as { owner?: string }).owner ?? null);
    const known = this.owners.get(id);
    const send = (owner: string | null) => {
      if (owner === null || !TENANT_NAME.test(owner)) return; // no owner, or a gateway token's (token:<name>)
      try {
        this.nc.publish(subjects.tenantLive(owner, id, event.type), data);
      } catch (err) {
        this.stats.dropped++;
        this.onError(err);
      }
    };
    const queued = this.waiting.get(id);
    if (known && known.until > now() && !queued) {
      send(known.owner);
      return;
    }
    const next = (queued ?? Promise.resolve()).then(async () => {
      let entry = this.owners.get(id);
      if (!entry || entry.until <= now()) {
        const owner = await this.options.ownerOf!(id).catch((err: unknown) => {
          this.onError(new Error(`the owner of session ${id} could not be read, so its tenant's live copy of ${event.type} was not sent: ${messageOf(err)}`));
          return undefined;
        });
        if (owner === undefined) return;
        entry = this.remember(id, owner);
      }
      send(entry.owner);
    });
    this.waiting.set(id, next);
    void next.finally(() => {
      if (this.waiting.get(id) === next) this.waiting.delete(id);
    });
  }

  private remember(sessionId: string, owner: string | null): { owner: string | null; until: number } {
    const entry = { owner, until: (this.options.now ?? Date.now)() + (this.options.ownerTtlMs ?? 2_000) };
    this.owners.delete(sessionId);
    this.owners.set(sessionId, entry);
    if (this.owners.size > OWNERS_KEPT) this.owners.delete(this.owners.keys().next().value!);
    return entry;
  }
}
