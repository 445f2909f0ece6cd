/**
 * The inspector's HTTP server (node:http, no framework) over an EventLog: it follows the log
 * (follow.ts: every session's folded state, the timeline, the marks) and serves the page, its JSON
 * routes and SSE, behind the Host check (host-check.ts). Routes: docs/inspector.md (why: docs/inspector.md#design-notes).
 */
import type { CapacityWait } from '../sessions/sessions.ts';
import { listFilterOf } from '../sessions/list-query.ts';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../clock.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { catalog, isEventType } from '../events/catalog.ts';
import type { LiveEvent } from '../events/live-bus.ts';
import type { EventLog } from '../events/event-log.ts';
import { ErrorCode, SessiondError, messageOf, HttpError, isSessiondError } from '../errors.ts';
import type { Sessions } from '../sessions/sessions.ts';
import type { SessionListItem } from '../sessions/list.ts';
import { sessionMachine } from '../machines/session-machine.ts';
import { machineToDot, renderSvg, type DotOptions } from './chart.ts';
import { inspectorPage } from './page.ts';
import { projectedRowsAt, type RowsAt } from './rows.ts';
import { conversationAt, parseConversationQuery } from './conversation-at.ts';
import { CHECKPOINT_EVERY, sessionTree, type InspectorContext, type InspectorStore, type SessionSummary } from './store.ts';
import { hostGuard, type Refusal } from './host-check.ts';
import { type InspectorAuth, inspectorGrant, isLoopbackHost } from './auth.ts';
import type { JwtVerifier } from '../gateway/jwt.ts';
import type { TokenTable } from '../gateway/tokens.ts';
import type { InspectorIndexStore } from './index-store.ts';
import { FollowGate } from './follow-gate.ts';
import { followLog, type DeletionFeed } from './follow.ts';
import { DEFAULT_PAGE, parsePageQuery, timelinePage, type PageQuery } from './timeline.ts';
import { sessionLastSeq, travel } from './travel.ts';
import type { SnapshotStore } from '../machines/snapshot-store.ts';
import { parseSeq, parseSessionId, stateView, timelineRow, type AtView, type SessionView } from './views.ts';

export const DEFAULT_INSPECTOR_HOST = '127.0.0.1';
/** How long a list request waits for the store to fold the log up to its head before answering. */
export const DEFAULT_CATCH_UP_MS = 5_000;

export interface InspectorOptions {
  log: EventLog;
  /** TCP port (0 picks a free one). */
  port: number;
  host?: string;
  /**
   * More Host header values to answer besides the bound address (and, for a loopback or wildcard
   * bind, localhost, 127.0.0.1 and [::1]): names that point at this machine, `name` or `name:port`.
   */
  allowedHosts?: readonly string[];
  /** Rows of a session at a sequence (default: the projector in memory, with projection checkpoints; null: none). */
  rowsAt?: RowsAt | null;
  clock?: Clock;
  /**
   * The sessions behind the log (an engine): the session list pages through `list` with its
   * filters, and "fork here" forks through `fork`. Absent: every session, folded here; no writes.
   */
  sessions?: Pick<Sessions, 'list' | 'fork'>;
  /** The log subscription failed (default: printed to stderr); the list routes then answer 503. */
  onError?: (err: unknown) => void;
  /**
   * Live events of every session (an engine's `subscribe({}, ...)`): the live-only ones (text and
   * reasoning deltas, model retries, `turn.interrupted`) go to the page as they happen, so the
   * conversation shows an answer while it streams. Absent: committed events only.
   */
  live?: (onEvent: (event: LiveEvent) => void) => { close(): void };
  /**
   * The gateway's tokens and signed tokens (auth.ts): every /api route then needs a token reaching
   * every session, with `read` (fork: `manage`). Required to bind beyond loopback.
   */
  tokens?: TokenTable;
  jwt?: JwtVerifier;
  /**
   * Where the index the views start from is kept (machine checkpoints, conversation marks): default
   * in memory, built again from the whole log by every start; `SqliteInspectorIndex` over the
   * database beside the log keeps it across starts (index-store.ts).
   */
  index?: InspectorIndexStore;
  /**
   * The workers' session snapshots (an engine's store): a view near a session's head starts from
   * the latest one when the index has not followed the log that far (a restart, a first start).
   */
  snapshots?: Pick<SnapshotStore, 'get'>;
  /**
   * The sessions deleted from the log (on NATS: its audit stream), every one recorded and then each
   * new one: a deleted session the log no longer has is forgotten (the list, the tree, the index).
   */
  deletions?: DeletionFeed;
  /** Whether a model call of the session's running turn waits for room under the deployment's limits (a worker's gate; src/capacity/). */
  capacity?: (sessionId: string) => Promise<CapacityWait | undefined>;
}

export interface Inspector {
  /** `http://127.0.0.1:4600/` */
  readonly url: string;
  readonly port: number;
  readonly store: InspectorStore;
  readonly index: InspectorIndexStore;
  /** The log position its follow resumed after, from the kept index (0: it followed the log from its start). */
  readonly resumedAfter: number;
  close(): Promise<void>;
}

/** The chart's highlight: the session's state, and the committed event that just moved it (from `from`). */
interface ChartHighlight {
  state: string;
  move?: { from: string; event: string };
}

const LAST_PAGE: PageQuery = { anchor: { kind: 'last' }, limit: DEFAULT_PAGE, types: null, q: null };

/** `commands=1|true|0|false` (absent: false). */
function parseFlag(raw: string | null, name: string): boolean {
  if (raw === null || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new HttpError(
    400,
    'invalid_query',
    `Invalid ${name} ${JSON.stringify(raw)}: use ${name}=1 to draw the commands and refusals, ${name}=0 (the default) for states and committed events only.`,
  );
}

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL, params: string[]) => Promise<void> | void;

/** A refusal of the sessions behind the inspector as an HTTP error: its code and message, the status its kind says. */
function asHttpError(err: unknown): unknown {
  if (!isSessiondError(err)) return err;
  const status = err.kind === 'not_found' ? 404 : err.kind === 'invalid_input' ? 400 : err.kind === 'conflict' || err.kind === 'refused' ? 409 : 500;
  return status === 500 ? err : new HttpError(status, err.code, err.message);
}

/** A small JSON object body (at most 4 KiB). */
async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 4096) throw new HttpError(413, 'body_too_large', 'The request body is over 4 KiB: send a small JSON object.');
  }
  try {
    const value = JSON.parse(text) as unknown;
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {}
  throw new HttpError(400, 'invalid_body', 'The request body must be a JSON object.');
}

/** A listed session with the live state the store folded (owner, waits) where it has it. */
function listedSession(item: SessionListItem, live: SessionSummary | undefined): Record<string, unknown> {
  return {
    ...(live ?? { owner: null, waiting: item.waiting ? 1 : 0 }),
    sessionId: item.sessionId,
    state: live?.state ?? item.state,
    seq: Math.max(live?.seq ?? 0, item.seq),
    pending: live?.pending ?? item.pendingInputs,
    time: live?.time ?? item.updatedAt,
    tags: item.tags,
    forkedFrom: item.forkedFrom,
  };
}

export async function startInspector(options: InspectorOptions): Promise<Inspector> {
  const { log } = options;
  const host = options.host ?? DEFAULT_INSPECTOR_HOST;
  if (!options.tokens && !options.jwt && !isLoopbackHost(host))
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Refusing to serve the inspector on ${host} without tokens: anyone who reaches it would read every session's prompts and live events. Give the gateway's tokens (--tokens FILE or SESSIOND_GATEWAY_TOKENS, or --jwks for signed tokens; docs/inspector.md), or bind 127.0.0.1.`,
    );
  const allowedHosts = parseAllowedHosts(options.allowedHosts);
  const clock = options.clock ?? systemClock;

  const onError = options.onError ?? ((err: unknown) => process.stderr.write(`sessiond inspector: ${messageOf(err)}\n`));
  const clients = new Set<ServerResponse>();
  // each committed event to the connected pages, with its session's summary after the batch
  const broadcast = (events: readonly SessionEvent[], sessions: InspectorContext['sessions']) => {
    if (clients.size === 0) return;
    const chunk = events
      .map(
        (e) =>
          `id: ${e.position ?? ''}\nevent: committed\ndata: ${JSON.stringify({ sessionId: e.sessionId, event: timelineRow(e), session: sessions[e.sessionId] ?? null })}\n\n`,
      )
      .join('');
    for (const res of clients) res.write(chunk);
  };
  /** Views being answered hold the follow's next batch. */
  const gate = new FollowGate(FOLLOW_GRACE_MS);
  const follow = await followLog({
    log,
    ...(options.index ? { index: options.index } : {}),
    clock,
    turn: () => gate.turn(), // a long catch-up (a big log at start) leaves room for requests between batches
    onFresh: broadcast, // what the log held at start is folded, not broadcast
    ...(options.deletions ? { deletions: options.deletions } : {}),
    onError,
  });
  const { store, kept, index, marks, startHead, context, indexingNow, untilFolded } = follow;
  const conversation = conversationAt({ log, marks });
  const rowsAt = options.rowsAt === undefined ? projectedRowsAt({ log, clock, marks }) : options.rowsAt;

  // live-only events, bounded, to the connected pages (never stored; a page that joins later sees what commits)
  const liveSub = options.live?.((e) => {
    if (clients.size === 0 || !isEventType(e.type) || catalog[e.type].durable) return;
    const chunk = `event: live\ndata: ${JSON.stringify({ sessionId: e.sessionId, type: e.type, time: e.time, payload: boundLive(e.payload) })}\n\n`;
    for (const res of clients) if (res.writableLength < LIVE_BUFFER_BYTES) res.write(chunk);
  });

  /** Waits (bounded) until the store has folded everything committed before this request. */
  const caughtUp = async (): Promise<boolean> => {
    const head = await log.head();
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    try {
      return await Promise.race([
        untilFolded(head).then(() => true),
        new Promise<boolean>((resolve) => (timer = clock.setTimeout(() => resolve(false), DEFAULT_CATCH_UP_MS))),
      ]);
    } finally {
      clock.clearTimeout(timer);
    }
  };

  /**
   * While the log held at start is being followed (a first start), a view of a session far past what
   * the follow has folded of it waits for the follow to get there, stepping aside so it runs, instead
   * of folding that stretch itself (pausing the follow and doing its work twice). `state`: the view
   * needs only the state, which the workers' snapshot of the session also gives; `index`: it needs
   * the marks or the timeline the follow builds.
   */
  const reach = async (sessionId: string, seq: number | undefined, needs: 'state' | 'index'): Promise<void> => {
    if (indexingNow() === null) return;
    const target = seq ?? (await log.lastSeq(sessionId));
    if (target === 0 || (context().snapshots[sessionId]?.context.seq ?? 0) >= target - FOLD_ALONE) return;
    if (needs === 'state') {
      const stored = (await options.snapshots?.get(sessionId).catch(() => undefined))?.context.seq;
      if (stored !== undefined && stored <= target && stored >= target - FOLD_ALONE) return;
    }
    const [event] = await log.readSession(sessionId, { afterSeq: target - 1, limit: 1 });
    if (event?.position !== undefined) await gate.aside(untilFolded(event.position));
  };

  // one rendering per (state, move, commands): a handful of distinct charts
  const charts = new Map<string, Promise<string>>();
  const chartSvg = (highlight: ChartHighlight | undefined, commands: boolean) => {
    const key = JSON.stringify([highlight ?? null, commands]);
    let svg = charts.get(key);
    if (!svg) {
      const dot: DotOptions = { commands };
      if (highlight) dot.highlight = highlight.state;
      if (highlight?.move) dot.move = highlight.move;
      svg = renderSvg(machineToDot(sessionMachine, dot));
      svg.catch(() => charts.delete(key));
      charts.set(key, svg);
    }
    return svg;
  };

  const routes: [RegExp, Handler, ('POST' | undefined)?][] = [
    [/^\/$/, (_req, res) => send(res, 200, 'text/html; charset=utf-8', inspectorPage({ logName: log.name, writes: options.sessions !== undefined }))],
    [
      /^\/api\/sessions$/,
      async (_req, res, url) => {
        // while the log held at start is being indexed (a first start over a long log) the list answers at once, with the progress
        const indexing = indexingNow();
        const complete = indexing === null ? await caughtUp() : false;
        const { position, sessions } = store.getSnapshot().context;
        if (options.sessions) {
          const page = await options.sessions.list(listFilterOf(url.searchParams));
          const rows = page.sessions.map((item) => listedSession(item, sessions[item.sessionId]));
          json(res, 200, { log: log.name, position, complete, indexing, listed: true, sessions: rows, next: page.next });
          return;
        }
        if ([...url.searchParams.keys()].length > 0)
          throw new HttpError(
            400,
            'invalid_query',
            'This inspector lists every session and takes no filters: start it with sessiond start --inspect PORT to list with filters.',
          );
        const list = Object.values(sessions).sort((a, b) => b.time - a.time || a.sessionId.localeCompare(b.sessionId));
        json(res, 200, { log: log.name, position, complete, indexing, listed: false, sessions: list, next: null });
      },
    ],
    [
      /^\/api\/sessions\/([^/]+)\/fork$/,
      async (req, res, _url, [rawId]) => {
        const sessionId = parseSessionId(rawId!);
        if (!options.sessions)
          throw new HttpError(405, 'read_only', 'This inspector only reads the log: start it with sessiond start --inspect PORT to fork from it.');
        const body = await readJsonBody(req);
        const fresh = typeof body.sessionId === 'string' ? parseSessionId(body.sessionId) : undefined;
        if (!fresh) throw new HttpError(400, 'invalid_body', 'Send { "sessionId": "<the new session id>", "at": <seq> } to fork.');
        if (body.at !== undefined && (typeof body.at !== 'number' || !Number.isSafeInteger(body.at) || body.at < 1))
          throw new HttpError(400, 'invalid_body', `Invalid at ${JSON.stringify(body.at)}: give a sequence (a whole number >= 1).`);
        try {
          json(res, 200, await options.sessions.fork(sessionId, fresh, body.at === undefined ? {} : { at: body.at as number }));
        } catch (err) {
          throw asHttpError(err);
        }
      },
      'POST',
    ],
    [
      /^\/api\/sessions\/([^/]+)$/,
      async (_req, res, _url, [rawId]) => {
        const sessionId = parseSessionId(rawId!);
        await reach(sessionId, undefined, 'state');
        const at = await travel(log, context, sessionId, undefined, kept, options.snapshots);
        const timeline = await timelinePage(log, index, sessionId, at.lastSeq, LAST_PAGE);
        const capacity = await options.capacity?.(sessionId);
        const tree = sessionTree(context(), sessionId);
        const view: SessionView = { ...stateView(sessionId, at, clock.now()), timeline, tree, ...(capacity ? { capacity } : {}) };
        json(res, 200, view);
      },
    ],
    [
      /^\/api\/sessions\/([^/]+)\/events$/,
      async (_req, res, url, [rawId]) => {
        const sessionId = parseSessionId(rawId!);
        const query = parsePageQuery(url.searchParams);
        const lastSeq = await sessionLastSeq(log, sessionId);
        if (query.types !== null || query.anchor.kind === 'time') {
          await reach(sessionId, lastSeq, 'index');
          await index.catchUp(log, sessionId, lastSeq);
        }
        json(res, 200, await timelinePage(log, index, sessionId, lastSeq, query));
      },
    ],
    [
      /^\/api\/sessions\/([^/]+)\/at\/([^/]+)$/,
      async (_req, res, _url, [rawId, rawSeq]) => {
        const sessionId = parseSessionId(rawId!);
        const seq = parseSeq(rawSeq!);
        await reach(sessionId, seq, rowsAt ? 'index' : 'state');
        const at = await travel(log, context, sessionId, seq, kept, options.snapshots);
        const view: AtView = { ...stateView(sessionId, at), rows: rowsAt ? await rowsAt(sessionId, at.snapshot.context.seq) : null };
        json(res, 200, view);
      },
    ],
    [
      /^\/api\/sessions\/([^/]+)\/conversation$/,
      async (_req, res, url, [rawId]) => {
        const sessionId = parseSessionId(rawId!);
        const query = parseConversationQuery(url.searchParams);
        const lastSeq = await sessionLastSeq(log, sessionId, query.seq);
        await reach(sessionId, query.seq ?? lastSeq, 'index');
        json(res, 200, await conversation(sessionId, query.seq ?? lastSeq, lastSeq, query));
      },
    ],
    [
      /^\/api\/chart\.svg$/,
      async (_req, res, url) => {
        const commands = parseFlag(url.searchParams.get('commands'), 'commands');
        const rawId = url.searchParams.get('session');
        let highlight: ChartHighlight | undefined;
        if (rawId !== null) {
          const sessionId = parseSessionId(rawId);
          const rawSeq = url.searchParams.get('seq');
          const seq = rawSeq === null ? undefined : parseSeq(rawSeq);
          await reach(sessionId, seq, 'state');
          const at = await travel(log, context, sessionId, seq, kept, options.snapshots);
          highlight = { state: at.snapshot.value };
          if (at.previous && at.event) highlight.move = { from: at.previous.value, event: at.event.type };
        } else if (url.searchParams.has('seq')) {
          throw new HttpError(400, 'invalid_query', 'seq needs a session: /api/chart.svg?session=ID&seq=N.');
        }
        send(res, 200, 'image/svg+xml; charset=utf-8', await chartSvg(highlight, commands));
      },
    ],
    [
      /^\/api\/events$/,
      (req, res) => {
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
        });
        res.write(`retry: 2000\n: following ${log.name}\n\n`);
        clients.add(res);
        req.on('close', () => clients.delete(res));
      },
    ],
  ];

  // set once the port is known (nothing arrives before)
  let guard = (_req: IncomingMessage): Refusal | undefined => ({ status: 421, message: 'Refused: the inspector is not listening yet.\n' });
  const server = createServer((req, res) => {
    const refusal = guard(req);
    if (refusal) {
      res.writeHead(refusal.status, {
        'content-type': 'text/plain; charset=utf-8',
        'content-length': Buffer.byteLength(refusal.message),
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      res.end(req.method === 'HEAD' ? undefined : refusal.message);
      return;
    }
    void handle(req, res).catch((err) => {
      const e = err instanceof HttpError ? err : new HttpError(500, 'internal', `The inspector failed to answer: ${messageOf(err)}`);
      if (!(err instanceof HttpError)) onError(err);
      if (res.headersSent) res.end();
      else json(res, e.status, { error: { code: e.reason, message: e.message } });
    });
  });

  // a connection opened is a request coming: the follow waits for it as for one being answered
  server.on('connection', () => gate.connected());

  const auth: InspectorAuth | undefined =
    options.tokens || options.jwt ? { clock, ...(options.tokens ? { tokens: options.tokens } : {}), ...(options.jwt ? { jwt: options.jwt } : {}) } : undefined;
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://inspector.local');
    if (auth && url.pathname.startsWith('/api/')) await inspectorGrant(req, url, auth, req.method === 'POST' ? 'manage' : 'read');
    for (const [pattern, handler, method] of routes) {
      const match = pattern.exec(url.pathname);
      if (!match) continue;
      const allowed = method ?? 'GET';
      if (req.method !== allowed && !(allowed === 'GET' && req.method === 'HEAD')) {
        res.setHeader('allow', allowed === 'GET' ? 'GET, HEAD' : allowed);
        throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${url.pathname}: use ${allowed}.`);
      }
      // a view is answered before the follow goes on (the list waits for the follow; the event stream stays open)
      if (url.pathname === '/api/sessions' || url.pathname === '/api/events') return handler(req, res, url, match.slice(1));
      gate.enter();
      try {
        return await handler(req, res, url, match.slice(1));
      } finally {
        gate.leave();
      }
    }
    throw new HttpError(
      404,
      'not_found',
      `No route ${url.pathname}. Routes: /, /api/sessions, /api/sessions/:id, /api/sessions/:id/events, POST /api/sessions/:id/fork, /api/sessions/:id/at/:seq, /api/sessions/:id/conversation, /api/chart.svg, /api/events.`,
    );
  }

  try {
    // without a kept index, the views need the one folded from the whole log: it is built before the first request
    if (!options.index) await untilFolded(startHead).catch(() => undefined);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    await follow.close();
    const code = (err as { code?: unknown }).code;
    const why = code === 'EADDRINUSE' ? 'the address is in use' : code === 'EACCES' ? 'permission denied' : messageOf(err);
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Cannot serve the inspector on ${host}:${options.port}: ${why}. Pick another port (0 picks a free one), or stop what is using it.`,
      { cause: err },
    );
  }
  const port = (server.address() as AddressInfo).port;
  guard = hostGuard({ host, port, extraHosts: allowedHosts });
  const shownHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${shownHost}:${port}/`,
    port,
    store,
    index: kept,
    resumedAfter: follow.resumedAfter,
    async close() {
      liveSub?.close();
      gate.close();
      for (const res of clients) res.end();
      clients.clear();
      await follow.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** During a first start, a view folds at most this many events past the follow's state of its session itself; further, it waits for the follow. */
const FOLD_ALONE = 5 * CHECKPOINT_EVERY;

/** How long the follow of the log waits after the last view was answered (a page asks for several at once). */
const FOLLOW_GRACE_MS = 25;

/** Bytes a page may have waiting before its live events are dropped (they are never needed: what commits follows). */
const LIVE_BUFFER_BYTES = 256 * 1024;

/** A live payload as the page gets it: string fields cut at 2,000 characters (a delta is small). */
function boundLive(payload: unknown): unknown {
  if (payload === null || typeof payload !== 'object') return payload;
  return Object.fromEntries(Object.entries(payload).map(([k, v]) => [k, typeof v === 'string' && v.length > 2000 ? `${v.slice(0, 2000)}\u2026` : v]));
}

const HOST_VALUE = /^[A-Za-z0-9.-]+(:\d+)?$|^\[?[0-9A-Fa-f:.]+\]?(:\d+)?$/;

function parseAllowedHosts(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((h) => typeof h === 'string' && h.length <= 255 && HOST_VALUE.test(h))) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid inspector option allowedHosts ${JSON.stringify(value)?.slice(0, 200)}: give host names or addresses this machine is reached by, such as ["inspector.internal", "10.0.0.5:4600"].`,
      { details: { option: 'allowedHosts' } },
    );
  }
  return value as string[];
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...(type.startsWith('text/html')
      ? { 'content-security-policy': "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:" }
      : {}),
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, 'application/json; charset=utf-8', `${JSON.stringify(body, null, 2)}\n`);
}
