// Shared setup for the NATS tests: one real nats-server per test file (the harness), engines on the
// JetStream log with the NATS live bus, clients as any nats.conf user, and a teardown that closes
// everything it opened (then the server, then the temp dir).
import { errors as natsErrors, type NatsConnection } from '@nats-io/transport-node';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { startSessiond, type Sessiond, type SessiondOptions } from '../../src/host.ts';
import { NatsLiveBus, decodeLiveEvent, type LiveMessage } from '../../src/nats/live-bus.ts';
import { SessiondClient, type SessiondClientOptions } from '../../src/client/client.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { Runner } from '../../src/runner/types.ts';
import { startNatsServer, CLIENT, COMMANDS, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';
import { startCommandService, type CommandService, type CommandServiceOptions, type CommandTarget } from '../../src/nats/command-service.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

export type User = { readonly user: string; readonly pass: string };

/** How long teardown waits for one close. */
const CLOSE_WITHIN_MS = 30_000;

export interface NatsWorld {
  server: NatsServer;
  /** A new connection as `user` (default worker), closed at teardown. */
  connect(user?: User): Promise<NatsConnection>;
  /**
   * A worker as `sessiond start --nats` runs it (`startSessiond`: its own worker connection, the
   * JetStream log, commits published live, the projector and the recovery sweep; no command service,
   * see `serve`), echo runner by default. With `liveCommits: false`, only the core: `openEngine` on
   * the JetStream log and the live bus, which publishes deltas but not what it commits.
   */
  engine(options?: {
    runner?: Runner;
    liveCommits?: boolean;
    host?: Partial<SessiondOptions>;
  }): Promise<{ engine: Engine; log: JetStreamEventLog; nc: NatsConnection; host: Sessiond | undefined }>;
  /** Serves commands for `target` on a connection of the commands user, as a worker does; closed at teardown. */
  serve(target: CommandTarget, options?: CommandServiceOptions): Promise<CommandService>;
  client(user?: User, options?: Partial<SessiondClientOptions>): Promise<SessiondClient>;
  /** Registers something to close at teardown (closed in reverse order; `what` names it if its close hangs). */
  defer(close: () => Promise<unknown>, what?: string | (() => string)): void;
  /** Closes everything opened since the last call (for `after.each`). */
  reset(): Promise<void>;
  dispose(): Promise<void>;
}

/** `streams: false`: leave the streams to the test (default: set up as the admin user, as `sessiond setup` does). */
export async function natsWorld(options: { bin?: string; streams?: boolean } = {}): Promise<NatsWorld> {
  const server = await startNatsServer({ ...(options.bin ? { bin: options.bin } : {}), ...(options.streams === false ? { streams: false } : {}) });
  const tmp = tempDir('sessiond-nats-test-');
  let closers: { close: () => Promise<unknown>; what: string | (() => string) }[] = [];
  let files = 0;
  const defer = (close: () => Promise<unknown>, what: string | (() => string) = 'something the test deferred') => {
    closers.push({ close, what });
  };
  const connect = async (user: User = WORKER) => {
    const nc = await connectNats({ servers: server.url, ...user, reconnectWaitMs: 50 });
    defer(() => nc.close(), `a connection as ${user.user}`);
    return nc;
  };
  // a close that hangs fails the teardown naming it, instead of holding the file until the runner's timeout
  const reset = async () => {
    const all = closers.reverse();
    closers = [];
    const hung: string[] = [];
    for (const { close, what } of all) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<'late'>((r) => {
        timer = setTimeout(() => r('late'), CLOSE_WITHIN_MS);
      });
      if ((await Promise.race([close().catch(() => undefined), late])) === 'late') hung.push(typeof what === 'string' ? what : what());
      clearTimeout(timer);
    }
    if (hung.length > 0) throw new Error(`Teardown: closing ${hung.join(', ')} did not finish within ${CLOSE_WITHIN_MS} ms.`);
  };
  return {
    server,
    connect,
    defer,
    async engine(options = {}) {
      const file = tmp.file(`engine-${++files}.db`);
      const runner = options.runner ?? echoRunner();
      if (options.liveCommits === false) {
        const nc = await connect(WORKER);
        const log = await JetStreamEventLog.open({ connection: nc });
        const engine = await openEngine({ file, log, bus: new NatsLiveBus(nc), runner });
        defer(async () => {
          await engine.close();
          await log.close();
        }, 'an engine and its JetStream log');
        return { engine, log, nc, host: undefined };
      }
      const host = await startSessiond({ db: file, runner, ...options.host, nats: { connection: { servers: server.url, ...WORKER, reconnectWaitMs: 50 } } });
      defer(
        () => host.close(),
        () => `a worker (startSessiond, stuck closing ${host.closing ?? 'nothing'})`,
      );
      return { engine: host.engine, log: host.nats!.log, nc: host.nats!.connection, host };
    },
    async serve(target, options = {}) {
      const service = startCommandService(await connect(COMMANDS), target, options);
      defer(() => service.close(), 'a command service');
      return service;
    },
    async client(user: User = CLIENT, options = {}) {
      const client = await SessiondClient.connect({ connection: { servers: server.url, ...user, reconnectWaitMs: 50 }, ...options });
      defer(() => client.close(), `a client as ${user.user}`);
      return client;
    },
    reset,
    async dispose() {
      await reset();
      await server.dispose();
      tmp.remove();
    },
  };
}

let counter = 0;
/** A session id unique within the test process. */
export const sessionId = (label = 's') => `ses_${label}_${process.pid}_${++counter}`;

/** Subscribes with a raw connection and decodes every message (throws on an invalid one: these tests publish valid ones). */
export async function collect(nc: NatsConnection, subject: string): Promise<LiveMessage[]> {
  const seen: LiveMessage[] = [];
  nc.subscribe(subject, {
    callback: (err, msg) => {
      if (!err) seen.push(decodeLiveEvent(msg.data, msg.subject));
    },
  });
  await nc.flush();
  return seen;
}

/** Waits (polling, with a deadline) until `list` has an item matching `match`. */
export function until<T>(list: T[], match: (item: T) => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  return waitFor(() => list.some(match), { timeoutMs, what });
}

const REFUSAL_DEADLINE_MS = 5000;

/** Resolves with the PermissionViolationError the server sends for a publish to `subject` made by `publish`, or fails after a deadline. */
export async function refusedPublish(
  nc: NatsConnection,
  subject: string,
  publish: () => void,
): Promise<InstanceType<typeof natsErrors.PermissionViolationError>> {
  const statuses = nc.status()[Symbol.asyncIterator]();
  publish();
  const deadline = Date.now() + REFUSAL_DEADLINE_MS;
  try {
    while (Date.now() < deadline) {
      let timer: NodeJS.Timeout | undefined;
      const next = await Promise.race([
        statuses.next(),
        new Promise<'timeout'>((r) => {
          timer = setTimeout(() => r('timeout'), deadline - Date.now());
        }),
      ]);
      clearTimeout(timer);
      if (next === 'timeout' || next.done) break;
      const status = next.value;
      if (status.type === 'error' && status.error instanceof natsErrors.PermissionViolationError && status.error.subject === subject) return status.error;
    }
  } finally {
    await statuses.return?.();
  }
  throw new Error(`the server did not refuse publishing to ${subject} within ${REFUSAL_DEADLINE_MS} ms`);
}

/** What ends a subscription the server should refuse (its PermissionViolationError), or fails after a deadline instead of waiting for ever. */
export async function subscriptionEnd(nc: NatsConnection, subject: string, queue?: string): Promise<unknown> {
  const sub = nc.subscribe(subject, queue ? { queue } : {});
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([
    sub.closed,
    new Promise<'timeout'>((r) => {
      timer = setTimeout(() => r('timeout'), REFUSAL_DEADLINE_MS);
    }),
  ]);
  clearTimeout(timer);
  if (ended !== 'timeout') return ended;
  sub.unsubscribe();
  throw new Error(`the server did not end the subscription to ${subject}${queue ? ` (queue ${queue})` : ''} within ${REFUSAL_DEADLINE_MS} ms`);
}

/** The error `p` rejects with (fails the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => assert.unreachable('expected the request to be refused'),
    (e: unknown) => e,
  );
}
