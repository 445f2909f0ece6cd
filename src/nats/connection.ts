/**
 * Connecting to NATS, spelled once: `parseConnectionOptions` checks options and fills defaults (a bad
 * one is refused with `invalid_option`, naming it and what is accepted); `connectNats` reconnects
 * forever, so a NATS restart never ends a sessiond process. Callers retry what is safe to retry.
 */
import { systemClock, type Clock, type TimerHandle } from '../clock.ts';
import { wholeNumber } from '../options.ts';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, errors as natsErrors, type NatsConnection } from '@nats-io/transport-node';
import { ConnectionError, ErrorCode, PermissionError, SessiondError, messageOf } from '../errors.ts';
import { settleRequestsWithoutErrors } from './request-settle.ts';
import { SUBJECT_TOKENS } from './subjects.ts';

/** nats.conf's listener on loopback. */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';
/** Shown in the server's connection list (`/connz`). */
export const DEFAULT_CONNECTION_NAME = 'sessiond';
/** Wait between reconnect attempts. */
export const DEFAULT_RECONNECT_WAIT_MS = 500;
/** Longest wait for the first connection (and the default request timeout). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** Reconnect forever: a NATS outage must not end the process. */
export const RECONNECT_FOREVER = -1;

export interface NatsConnectionOptions {
  /** One URL, a comma-separated list, or an array: `nats://host:4222`. */
  servers?: string | string[];
  user?: string;
  pass?: string;
  name?: string;
  reconnectWaitMs?: number;
  timeoutMs?: number;
  /**
   * Subject prefix of this connection's reply inboxes (default `_INBOX_<user>`, or `_INBOX` without a
   * user). nats.conf lets each user subscribe only to its own prefix, so no user can read another's
   * replies or learn its consumer names (docs/protocol.md).
   */
  inboxPrefix?: string;
  /**
   * Keep trying the first connection until the server answers (default false: fail after
   * `timeoutMs`). For long-running workers, which should outlive a server that is not up yet.
   */
  waitForServer?: boolean;
}

export interface ResolvedConnectionOptions {
  servers: string[];
  user: string | undefined;
  pass: string | undefined;
  name: string;
  reconnectWaitMs: number;
  timeoutMs: number;
  inboxPrefix: string;
  waitForServer: boolean;
}

const KNOWN = ['servers', 'user', 'pass', 'name', 'reconnectWaitMs', 'timeoutMs', 'inboxPrefix', 'waitForServer'] as const;

/** The inbox prefix nats.conf gives `user`: `_INBOX_<user>` (`_INBOX` for a connection without a user). */
export function inboxPrefixOf(user: string | undefined): string {
  return user === undefined ? '_INBOX' : `_INBOX_${user}`;
}

function bad(option: string, value: unknown, expected: string): never {
  const shown = option === 'pass' ? '(hidden)' : JSON.stringify(value);
  throw new SessiondError(ErrorCode.InvalidOption, `Invalid NATS connection option ${option}: ${shown}. Expected ${expected}.`, { details: { option } });
}

function optionalString(option: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0) bad(option, value, 'a non-empty string');
  return value;
}

function parseServers(value: unknown): string[] {
  if (value === undefined) return [DEFAULT_NATS_URL];
  const list =
    typeof value === 'string'
      ? value
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s.length > 0)
      : value;
  if (!Array.isArray(list) || list.length === 0) bad('servers', value, `a NATS URL such as ${DEFAULT_NATS_URL}, or a list of them`);
  for (const url of list) {
    if (typeof url !== 'string' || !/^(nats|tls):\/\/[^\s/]+$/.test(url)) {
      bad('servers', url, `a URL of the form nats://host:port (e.g. ${DEFAULT_NATS_URL})`);
    }
  }
  return list as string[];
}

function parseInboxPrefix(value: unknown, user: string | undefined): string {
  if (value === undefined) return inboxPrefixOf(user);
  if (typeof value !== 'string' || !SUBJECT_TOKENS.test(value)) {
    bad('inboxPrefix', value, 'subject tokens without wildcards or spaces, such as _INBOX_client');
  }
  return value;
}

/** Checks connection options and fills in defaults. Unknown keys are refused (likely typos). */
export function parseConnectionOptions(input: NatsConnectionOptions | undefined = {}): ResolvedConnectionOptions {
  if (input === null || typeof input !== 'object') bad('options', input, 'an object');
  for (const key of Object.keys(input)) {
    if (!(KNOWN as readonly string[]).includes(key)) bad(key, (input as Record<string, unknown>)[key], `one of the known options: ${KNOWN.join(', ')}`);
  }
  if (input.waitForServer !== undefined && typeof input.waitForServer !== 'boolean') bad('waitForServer', input.waitForServer, 'true or false');
  const user = optionalString('user', input.user);
  const pass = optionalString('pass', input.pass);
  if ((user === undefined) !== (pass === undefined)) {
    bad(user === undefined ? 'user' : 'pass', user === undefined ? undefined : '(missing)', 'user and pass to be given together (or neither)');
  }
  return {
    servers: parseServers(input.servers),
    user,
    pass,
    name: optionalString('name', input.name) ?? DEFAULT_CONNECTION_NAME,
    reconnectWaitMs: wholeNumber('NATS connection', 'reconnectWaitMs', input.reconnectWaitMs, DEFAULT_RECONNECT_WAIT_MS),
    timeoutMs: wholeNumber('NATS connection', 'timeoutMs', input.timeoutMs, DEFAULT_CONNECT_TIMEOUT_MS),
    inboxPrefix: parseInboxPrefix(input.inboxPrefix, user),
    waitForServer: input.waitForServer ?? false,
  };
}

/** Connects (first attempt must succeed within `timeoutMs`), then reconnects forever. */
export async function connectNats(options: NatsConnectionOptions = {}): Promise<NatsConnection> {
  const o = parseConnectionOptions(options);
  settleRequestsWithoutErrors(); // an answered request builds no Error (request-settle.ts)
  try {
    return await connect({
      servers: o.servers,
      ...(o.user !== undefined ? { user: o.user, pass: o.pass } : {}),
      name: o.name,
      maxReconnectAttempts: RECONNECT_FOREVER,
      reconnectTimeWait: o.reconnectWaitMs,
      timeout: o.timeoutMs,
      inboxPrefix: o.inboxPrefix,
      // a worker started before its server keeps trying, as it does after any later outage
      waitOnFirstConnect: o.waitForServer,
      // no async stack capture per request: building those error objects was ~30% of append CPU
      // in the benchmarks; errors still carry their message and code
      noAsyncTraces: true,
    });
  } catch (err) {
    const who = o.user !== undefined ? ` as ${o.user}` : '';
    // refused credentials are a permission matter; a server that is not there is unavailable
    const refused = err instanceof natsErrors.AuthorizationError || /authori[sz]ation/i.test(messageOf(err));
    throw new (refused ? PermissionError : ConnectionError)(
      `Could not connect to NATS at ${o.servers.join(', ')}${who}: ${messageOf(err)}. Check that nats-server is running (nats-server -c nats.conf) and that the servers, user and pass options are right.`,
      { cause: err, details: { servers: o.servers, user: o.user } },
    );
  }
}

/**
 * Errors after which the same request may be sent again: timeouts, no responder (JetStream still
 * starting after a restart), a dropped connection. Not: a closed connection, permissions.
 */
export function isTransientNatsError(err: unknown): boolean {
  if (err instanceof natsErrors.TimeoutError || err instanceof natsErrors.NoRespondersError) return true;
  if (err instanceof natsErrors.RequestError) return !(err.cause instanceof natsErrors.PermissionViolationError);
  if (err instanceof natsErrors.ClosedConnectionError || err instanceof natsErrors.DrainingConnectionError) return false;
  if (err instanceof natsErrors.ConnectionError) return true;
  return isJetStreamNotEnabled(err);
}

/** @nats-io/jetstream raises JetStreamNotEnabled when a JetStream request finds no responder. */
const isJetStreamNotEnabled = (err: unknown) => err instanceof Error && err.name === 'JetStreamNotEnabled';

/**
 * The connection's JetStream manager, refusing at once a server that runs without JetStream (its
 * INFO says so and no server answers the JetStream API: in a cluster, another server may answer
 * for it). sessiond keeps its log, snapshots and buckets in JetStream, and the patient loops after
 * this (a cluster electing its leader) would otherwise ask for a minute before giving up. No request
 * is made when the server runs JetStream; a probe that times out is left to those loops.
 */
export async function requireJetStream(nc: NatsConnection): Promise<JetStreamManager> {
  if (!nc.info?.jetstream) {
    try {
      return await jetstreamManager(nc);
    } catch (err) {
      if (isJetStreamNotEnabled(err)) {
        throw new ConnectionError(
          `nats-server ${nc.getServer()}${nc.info?.version ? ` (${nc.info.version})` : ''} runs without JetStream, and sessiond keeps its log, snapshots and buckets in JetStream streams. Start the server with JetStream (\`nats-server -js\`, or a \`jetstream { store_dir: ... }\` block in its config, as in sessiond's nats.conf), then try again.`,
          { cause: err },
        );
      }
    }
  }
  return jetstreamManager(nc, { checkAPI: false });
}

/** The server refused a publish or subscribe for the connected user (nats.conf permissions). */
export function isPermissionError(err: unknown): boolean {
  return (
    err instanceof natsErrors.PermissionViolationError || (err instanceof natsErrors.RequestError && err.cause instanceof natsErrors.PermissionViolationError)
  );
}

/**
 * Follows a connection's status. nats.js discards whatever was published while disconnected when it
 * reconnects, so a request sent during an outage can only time out: callers check `connected`, wait
 * for `nextReconnect()` and send again (safe for idempotent requests and msg-id deduped publishes).
 */
export class ConnectionWatch {
  private up = true;
  private readonly waiters = new Set<() => void>();
  private resolveReconnect: () => void = () => undefined;
  private reconnect: Promise<void>;
  private readonly statuses: AsyncIterable<{ type: string }> & { stop?: () => void };

  constructor(nc: NatsConnection) {
    this.reconnect = this.arm();
    const statuses = nc.status() as AsyncIterable<{ type: string }> & { stop?: () => void };
    this.statuses = statuses;
    void (async () => {
      for await (const s of statuses) {
        if (s.type === 'disconnect') this.up = false;
        if (s.type === 'reconnect') {
          this.up = true;
          const resolve = this.resolveReconnect;
          this.reconnect = this.arm();
          resolve();
          const waiters = [...this.waiters];
          this.waiters.clear();
          for (const w of waiters) w();
        }
      }
    })().catch(() => undefined);
  }

  private arm(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.resolveReconnect = resolve;
    });
  }

  get connected(): boolean {
    return this.up;
  }

  /** Resolves when the connection is next re-established (shared: for long-lived waits only). */
  nextReconnect(): Promise<void> {
    return this.reconnect;
  }

  /**
   * A waiter for the next reconnect that can be dropped. Per-request waits must use this and
   * `cancel()` when done: a `.then` on the shared `nextReconnect()` promise stays attached until
   * the next reconnect, which leaked ~600 bytes per append (found by the benchmarks).
   */
  whenReconnected(): { promise: Promise<void>; cancel: () => void } {
    let cancel!: () => void;
    const promise = new Promise<void>((resolve) => {
      cancel = this.onNextReconnect(resolve);
    });
    return { promise, cancel };
  }

  /** Calls `callback` once at the next reconnect, unless the returned function drops it first. */
  onNextReconnect(callback: () => void): () => void {
    this.waiters.add(callback);
    return () => {
      this.waiters.delete(callback);
    };
  }

  stop(): void {
    this.statuses.stop?.();
    this.resolveReconnect();
    for (const w of this.waiters) w();
    this.waiters.clear();
  }
}

export function isNatsConnection(value: unknown): value is NatsConnection {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as NatsConnection).request === 'function' &&
    typeof (value as NatsConnection).isClosed === 'function'
  );
}

/** Resolves true if `p` settles within `ms` on `clock`, false once `ms` pass; never leaves a timer behind. */
export async function waitAtMost(p: Promise<unknown>, ms: number, clock: Clock = systemClock): Promise<boolean> {
  if (ms <= 0) return false;
  let timer: TimerHandle | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = clock.setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      p.then(
        () => true as const,
        () => true as const,
      ),
      timeout,
    ]);
  } finally {
    clock.clearTimeout(timer);
  }
}

/** The URL(s) to show; never the password. */
export function describeNats(options: NatsConnectionOptions): string {
  const servers = Array.isArray(options.servers) ? options.servers.join(', ') : (options.servers ?? '');
  return `${servers}${options.user ? ` as user ${options.user}` : ''}`;
}
