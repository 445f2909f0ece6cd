/**
 * The HTTP and SSE gateway in front of any `Sessions` (the embedded worker, or `SessiondClient` on
 * NATS): JSON in and out, errors as `{ "error": { "code", "message" } }`, loopback and a checked
 * `Host` without tokens, CORS for the origins given. Routes: `ROUTES` below and docs/gateway.md.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode, HttpError, SessiondError, isSessiondError, messageOf } from '../errors.ts';
import { validateId } from '../ids.ts';
import { DEFAULT_LIMITS } from '../input/limits.ts';
import { MAX_BODY_DEPTH, admitBodyLimit, tooDeepAt } from '../nats/command-protocol.ts';
import { hostGuard } from '../inspector/host-check.ts';
import { listFilterOf } from '../sessions/list-query.ts';
import type { Sessions } from '../sessions/sessions.ts';
import { OPEN_GRANT, actingOwner, asReached, checkTagChanges, listFor, mayStart, reachable } from './access.ts';
import { openEventStream, type EventStream, type LiveSource } from './event-stream.ts';
import { answerApprovals, parseChatRequest, streamChatTurn, replayEndsAtWait, turnUnderWay } from './chat.ts';
import { presentedToken, type Grant, type TokenTable } from './tokens.ts';
import { grantOf } from './authenticate.ts';
import { blobReaderOf, sendBlob } from './blob-route.ts';
import { blobUploaderOf, bodyChunks, uploadRequestOf } from './blob-upload.ts';
import { closeAfterAnswer } from './lingering-close.ts';
import type { JwtVerifier } from './jwt.ts';
import { checkScope, type Scope } from './scopes.ts';
import { gatewayQuotas, type GatewayLimits } from './quota-checks.ts';
import { DEFAULT_STALL_MS } from './stall.ts';
import { type Clock, type TimerHandle, systemClock } from '../clock.ts';
import type { Prompt } from '../events/prompt.ts';

export const DEFAULT_GATEWAY_HEARTBEAT_MS = 15_000;
export const DEFAULT_GATEWAY_BUFFER_BYTES = 1024 * 1024;
/** How long a request body may take to arrive, from its first byte awaited to its last. */
export const DEFAULT_GATEWAY_BODY_TIMEOUT_MS = 15_000;
/**
 * The largest request body by default: 12 MiB, an ordinary photo of up to 9 MB sent as base64 JSON
 * (on the embedded log its bytes are stored beside the log at admission; a NATS deployment still
 * refuses a prompt over its message limit). Each request's body is held whole while it is read.
 */
export const DEFAULT_GATEWAY_MAX_BODY_BYTES = Math.max(12 * 1024 * 1024, admitBodyLimit(DEFAULT_LIMITS.maxPromptBytes));
export const DEFAULT_GATEWAY_RECHECK_MS = 5_000;
export const DEFAULT_GATEWAY_STALL_MS = DEFAULT_STALL_MS;

export interface GatewayOptions {
  sessions: Omit<Sessions, 'close'>;
  /** Live-only events (text deltas): `engineLive(sessiond)` or `natsLive(client)` (live.ts). Without it a stream has committed events only. */
  live?: LiveSource;
  /** 0 picks a free port. */
  port: number;
  /** Address to bind (default 127.0.0.1). Anything but loopback needs `tokens`. */
  host?: string;
  /** Bearer tokens and their reach (tokens.ts). Without them every request may reach every session: loopback only. */
  tokens?: TokenTable;
  /** Signed tokens (JWTs) from an identity provider (jwt.ts); with or instead of `tokens`. */
  jwt?: JwtVerifier;
  /** Time for token expiry, stream re-checks and quota counting (default the system clock). */
  clock?: Clock;
  /** Origins whose pages may call the gateway (`['https://app.example']`, or `'*'`); default none (same origin only). */
  corsOrigins?: readonly string[] | '*';
  /** Largest request body (default `DEFAULT_GATEWAY_MAX_BODY_BYTES`, 12 MiB: a photo of up to 9 MB as base64). */
  maxBodyBytes?: number;
  /** A request body not all there after this long gets 408 and its connection closed (default 15 s); an upload (POST /v1/blobs), one silent this long. */
  bodyTimeoutMs?: number;
  /** Largest blob POST /v1/blobs takes (default the engine's maxBlobBytes embedded, else 64 MiB; on NATS the workers' limit applies too). */
  maxBlobBytes?: number;
  heartbeatMs?: number;
  /** Bytes an event stream may have waiting for a slow client before it drops deltas and ends (default 1 MiB). */
  maxBufferedBytes?: number;
  /** How often the tokens of open event streams are checked again (default 5 s). */
  recheckMs?: number;
  /** How long a stream may stay over `maxBufferedBytes` (or unflushed once ended) before its connection is cut (default 5 s). */
  stallMs?: number;
  /** Quotas of every token and tenant (quotas.ts; a token's own `"limits"` go over them). Without tokens nothing is counted. */
  limits?: GatewayLimits;
  /** A failure behind a request (logged; the client got a 500 or its stream ended). */
  onError?: (err: unknown) => void;
}

export interface Gateway {
  readonly url: string;
  readonly port: number;
  /** Event streams open now. */
  streams(): number;
  close(): Promise<void>;
}

type Route = {
  method: 'GET' | 'POST';
  pattern: RegExp;
  /** What the token must be allowed to do (scopes.ts); none: anyone (health). */
  scope?: Scope;
  run: (c: Call) => Promise<unknown>;
};

interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: string[];
  grant: Grant;
  body: () => Promise<Record<string, unknown>>;
}

const isLoopback = (host: string) => host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);

/** The HTTP status of a sessiond error, from its kind. */
export function httpStatusOf(err: SessiondError): number {
  if (err instanceof HttpError) return err.status;
  if (err.code === ErrorCode.PayloadTooLarge) return 413;
  if (err.code === ErrorCode.LimitExceeded) return 429;
  switch (err.kind) {
    case 'invalid_input':
      return 400;
    case 'permission':
      return 403;
    case 'not_found':
      return 404;
    case 'conflict':
    case 'refused':
      return 409;
    case 'unavailable':
      return 503;
    case 'timeout':
      return 504;
    default:
      return 500;
  }
}

const str = (v: unknown, what: string): string | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new HttpError(400, ErrorCode.InvalidOption, `${what} must be a string.`);
  return v;
};

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const host = options.host ?? '127.0.0.1';
  const { sessions, live, tokens, jwt } = options;
  const clock = options.clock ?? systemClock;
  if (!tokens && !jwt && !isLoopback(host)) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Refusing to serve the gateway on ${host} without tokens: anyone who reaches it could read and drive every session. Give tokens (--tokens FILE or SESSIOND_GATEWAY_TOKENS, or --jwks for an identity provider's signed tokens; docs/gateway.md), or bind 127.0.0.1.`,
    );
  }
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_GATEWAY_MAX_BODY_BYTES;
  const bodyTimeoutMs = options.bodyTimeoutMs ?? DEFAULT_GATEWAY_BODY_TIMEOUT_MS;
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_GATEWAY_HEARTBEAT_MS;
  const maxBufferedBytes = options.maxBufferedBytes ?? DEFAULT_GATEWAY_BUFFER_BYTES;
  const onError = options.onError ?? ((err: unknown) => process.stderr.write(`sessiond gateway: ${messageOf(err)}\n`));
  const origins = options.corsOrigins;
  const streams = new Set<EventStream>();
  /** The token each open stream was opened with: checked again every `recheckMs`, so a removed or expired token's streams end too. */
  const authorized = new Map<EventStream, string>();
  const recheckMs = options.recheckMs ?? DEFAULT_GATEWAY_RECHECK_MS;
  const quotas = gatewayQuotas(sessions, options.limits ?? {}, clock, () => tokens !== undefined);
  const stallMs = options.stallMs ?? DEFAULT_GATEWAY_STALL_MS;

  const blobReader = blobReaderOf(sessions);
  const uploader = blobUploaderOf(sessions);
  const maxBlobBytes = options.maxBlobBytes ?? uploader?.maxBytes ?? 0;
  const sessionOf = (c: Call) => validateId(segment(c.params[0]!, 'session id'), 'session id');
  const ROUTES: Route[] = [
    { method: 'GET', pattern: /^\/v1\/health$/, run: async () => ({ ok: true }) },
    { method: 'GET', pattern: /^\/v1\/sessions$/, scope: 'read', run: (c) => listFor(sessions, c.grant, listFilterOf(c.url.searchParams)) },
    {
      method: 'GET',
      pattern: /^\/v1\/sessions\/([^/]+)$/,
      scope: 'read',
      run: (c) => reachable(sessions, c.grant, sessionOf(c)),
    },
    {
      method: 'GET',
      pattern: /^\/v1\/sessions\/([^/]+)\/blobs\/([^/]+)$/,
      scope: 'read',
      run: async (c) => {
        const id = sessionOf(c);
        await reachable(sessions, c.grant, id);
        await sendBlob(c.res, blobReader, id, decodeURIComponent(c.params[1]!));
        return STREAMING;
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/blobs$/,
      // what uploads a blob is what may then admit it
      scope: 'prompt',
      run: async (c) => {
        try {
          if (!uploader)
            throw new HttpError(
              503,
              ErrorCode.Unavailable,
              "This gateway's sessions keep no blob store: send images inline (base64) in the prompt, or by URL.",
            );
          const request = uploadRequestOf(c.req, c.url, maxBlobBytes, actingOwner(c.grant));
          reply(c.res, 201, await uploader.upload(bodyChunks(c.req, request, bodyTimeoutMs), request));
        } catch (err) {
          // a refused body: the connection closes once the answer is sent, its rest drained (lingering-close.ts)
          closeAfterAnswer(c.req, c.res);
          throw err;
        }
        return STREAMING;
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/sessions\/([^/]+)\/inputs$/,
      scope: 'prompt',
      run: async (c) => {
        const id = sessionOf(c);
        const { owner: _claimed, caller: _caller, ...body } = await c.body(); // the owner is the grant's, the caller a session call's: never the body's
        const start = await mayStart(sessions, c.grant, id, body.tags as Record<string, string> | undefined);
        return quotas.admit(c.grant, id, body.prompt as Prompt, () => asReached(id, sessions.admit(id, { ...body, ...start, ...callerTrace(c) } as never)));
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/sessions\/([^/]+)\/wake$/,
      scope: 'prompt',
      run: async (c) => {
        const id = sessionOf(c);
        await reachable(sessions, c.grant, id);
        return sessions.wake(id);
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/sessions\/([^/]+)\/cancel$/,
      scope: 'manage',
      run: async (c) => {
        const id = sessionOf(c);
        const body = await c.body();
        await reachable(sessions, c.grant, id);
        return sessions.cancel(id, str(body.reason, 'reason'), str(body.executionId, 'executionId'), actorOf(c.grant));
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/sessions\/([^/]+)\/calls\/([^/]+)\/(approve|deny)$/,
      scope: 'approve',
      run: async (c) => {
        const id = sessionOf(c);
        const body = await c.body();
        await reachable(sessions, c.grant, id);
        const reason = str(body.reason, 'reason');
        const decision = { ...(reason === undefined ? {} : { reason }), ...actorOf(c.grant) };
        const callId = segment(c.params[1]!, 'call id');
        return c.params[2] === 'approve' ? sessions.approve(id, callId, decision) : sessions.deny(id, callId, decision);
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/sessions\/([^/]+)\/waits\/([^/]+)$/,
      scope: 'approve',
      run: async (c) => {
        const id = sessionOf(c);
        const body = await c.body();
        await reachable(sessions, c.grant, id);
        return sessions.resolve(id, segment(c.params[1]!, 'wait name'), { ...(body.data === undefined ? {} : { data: body.data }), ...actorOf(c.grant) });
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/sessions\/([^/]+)\/tags$/,
      scope: 'manage',
      run: async (c) => {
        const id = sessionOf(c);
        const body = await c.body();
        const changes = (body.tags ?? {}) as Record<string, string | null>;
        await reachable(sessions, c.grant, id);
        checkTagChanges(c.grant, changes);
        return sessions.tag(id, changes);
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/sessions\/([^/]+)\/budget$/,
      // the operator's: a tenant that could manage its own sessions must not raise its own budget
      scope: 'admin',
      run: async (c) => {
        const id = sessionOf(c);
        const body = await c.body();
        await reachable(sessions, c.grant, id);
        // the engine checks the fields (unknown ones and bad limits are refused, saying what to give); the grant is the actor
        return sessions.budget(id, { ...body, ...actorOf(c.grant) } as never);
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/sessions\/([^/]+)\/pending\/drop$/,
      scope: 'manage',
      run: async (c) => {
        const id = sessionOf(c);
        const body = await c.body();
        await reachable(sessions, c.grant, id);
        return sessions.dropPending(id, { ...body, ...actorOf(c.grant) } as never);
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/sessions\/([^/]+)\/fork$/,
      scope: 'manage',
      run: async (c) => {
        const source = sessionOf(c);
        const body = await c.body();
        const target = str(body.sessionId, 'sessionId');
        if (target === undefined) throw new HttpError(400, ErrorCode.InvalidOption, 'Say the new session\'s id: {"sessionId": "ses_new", "at": 12}.');
        await reachable(sessions, c.grant, source);
        const start = await mayStart(sessions, c.grant, validateId(target, 'session id'), body.tags as Record<string, string> | undefined);
        return quotas.fork(c.grant, target, () =>
          asReached(target, sessions.fork(source, target, { ...(body.at !== undefined ? { at: body.at as number } : {}), ...start })),
        );
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/chat$/,
      scope: 'prompt',
      run: async (c) => {
        const request = parseChatRequest(await c.body());
        const bounds = { maxBufferedBytes, stallMs };
        if (request.kind === 'approval') {
          if (!c.grant.scopes.has('approve'))
            throw new HttpError(
              403,
              ErrorCode.PermissionDenied,
              `Token ${c.grant.name} may not answer approval requests: it needs the approve scope (add "approve" to its "scopes" in the tokens file).`,
            );
          const status = await reachable(sessions, c.grant, request.sessionId);
          const release = quotas.openStream(c.grant);
          c.res.on('close', release);
          const turn = await answerApprovals(sessions, status, request, actorOf(c.grant));
          await streamChatTurn(c.res, sessions, live, request.sessionId, turn, onError, heartbeatMs, bounds);
          return STREAMING;
        }
        const { sessionId, inputId, prompt } = request;
        const start = await mayStart(sessions, c.grant, sessionId, undefined);
        const release = quotas.openStream(c.grant);
        c.res.on('close', release);
        const receipt = await quotas.admit(c.grant, sessionId, prompt, () =>
          asReached(sessionId, sessions.admit(sessionId, { id: inputId, prompt, ...start, ...callerTrace(c) })),
        );
        // a retried request (the same message) replays its turn from the log, to a wait still open
        const now = receipt.created ? undefined : await sessions.status(sessionId);
        const openedAtSeq = now ? now.seq : receipt.admittedSeq;
        const endAtWait = c.grant.scopes.has('approve') && (!now || replayEndsAtWait(now, inputId));
        const turn = { inputIds: [inputId], afterSeq: receipt.admittedSeq - 1, openedAtSeq, endAtWait };
        await streamChatTurn(c.res, sessions, live, sessionId, turn, onError, heartbeatMs, bounds);
        return STREAMING;
      },
    },
    {
      method: 'GET',
      pattern: /^\/v1\/chat\/([^/]+)\/stream$/,
      scope: 'read',
      run: async (c) => {
        const id = sessionOf(c);
        const turn = turnUnderWay(await reachable(sessions, c.grant, id), c.grant.scopes.has('approve'));
        if (!turn) {
          c.res.writeHead(204, { 'cache-control': 'no-store' });
          c.res.end();
          return STREAMING;
        }
        const release = quotas.openStream(c.grant);
        c.res.on('close', release);
        await streamChatTurn(c.res, sessions, live, id, turn, onError, heartbeatMs, { maxBufferedBytes, stallMs });
        return STREAMING;
      },
    },
    {
      method: 'GET',
      pattern: /^\/v1\/sessions\/([^/]+)\/events$/,
      scope: 'read',
      run: async (c) => {
        const id = sessionOf(c);
        const after = resumePoint(c.req.headers['last-event-id'], c.url.searchParams.get('after'));
        // a session not started yet may be listened to where the grant could start it: every id of
        // its prefix opens a stream (its own, another's, or none yet: the same answer), and a stream
        // on one that is not its own now is vetted again at its first event (silent if still not)
        const mine = () =>
          reachable(sessions, c.grant, id).then(
            () => true,
            (err: unknown) => {
              if (err instanceof HttpError && err.status === 404) return false;
              throw err; // another failure: refused now, or asked again at the next event
            },
          );
        let vet: (() => Promise<boolean>) | undefined;
        if (c.grant.tag || !id.startsWith(c.grant.prefix)) await reachable(sessions, c.grant, id);
        else if (!(await mine())) vet = mine;
        const release = quotas.openStream(c.grant);
        c.res.on('close', release);
        const stream = await openEventStream(c.res, sessions, live, id, after, { heartbeatMs, maxBufferedBytes, stallMs, onError, ...(vet ? { vet } : {}) });
        streams.add(stream);
        const presented = presentedToken(c.req.headers.authorization, c.url.searchParams);
        if (presented !== undefined) authorized.set(stream, presented);
        c.res.on('close', () => {
          streams.delete(stream);
          authorized.delete(stream);
        });
        return STREAMING;
      },
    },
  ];

  const cors = (req: IncomingMessage, res: ServerResponse): boolean => {
    const origin = req.headers.origin;
    if (origin === undefined || origins === undefined) return false;
    const allowed = origins === '*' || origins.includes(origin);
    res.setHeader('vary', 'Origin');
    if (allowed) {
      res.setHeader('access-control-allow-origin', origins === '*' ? '*' : origin);
      res.setHeader('access-control-expose-headers', 'content-type');
    }
    return allowed;
  };

  let guard: ((req: IncomingMessage) => { status: number; message: string } | undefined) | undefined;
  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      const e = isSessiondError(err) ? err : new SessiondError(ErrorCode.Internal, `The gateway failed to answer: ${messageOf(err)}`, { cause: err });
      const status = httpStatusOf(e);
      if (status >= 500 && !(err instanceof HttpError)) onError(err);
      if (res.headersSent) res.end();
      else {
        if (typeof e.details.retryAfterMs === 'number') res.setHeader('retry-after', String(Math.ceil(e.details.retryAfterMs / 1000)));
        reply(res, status, { error: { code: e instanceof HttpError ? e.reason : e.code, message: e.message } });
      }
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refusal = guard?.(req);
    if (refusal) throw new HttpError(refusal.status, 'host_refused', refusal.message.trim());
    const allowedOrigin = cors(req, res);
    const url = new URL(req.url ?? '/', 'http://gateway.local');
    if (req.method === 'OPTIONS') {
      if (!allowedOrigin)
        throw new HttpError(
          403,
          ErrorCode.PermissionDenied,
          `Origin ${req.headers.origin ?? '(none)'} may not call this gateway: start it with --cors-origin ORIGIN.`,
        );
      res.writeHead(204, {
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-allow-headers': 'authorization, content-type, last-event-id, x-sessiond-sha256',
        'access-control-max-age': '600',
      });
      res.end();
      return;
    }
    const route = ROUTES.find((r) => r.pattern.test(url.pathname));
    if (!route)
      throw new HttpError(
        404,
        'no_route',
        `No route ${req.method} ${url.pathname}. Routes: GET /v1/health, POST /v1/blobs, GET /v1/sessions, GET /v1/sessions/:id, GET /v1/sessions/:id/events (SSE), GET /v1/sessions/:id/blobs/:sha256, POST /v1/sessions/:id/{inputs,wake,cancel,tags,budget,fork,pending/drop}, POST /v1/sessions/:id/calls/:callId/{approve,deny}, POST /v1/sessions/:id/waits/:name, POST /v1/chat, GET /v1/chat/:id/stream (docs/gateway.md).`,
      );
    const matching = ROUTES.find((r) => r.pattern.test(url.pathname) && r.method === req.method);
    if (!matching) {
      res.setHeader('allow', route.method);
      throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${url.pathname}: use ${route.method}.`);
    }
    const grant = await authenticate(req, url);
    if (matching.scope) checkScope(grant, matching.scope, `${req.method} ${url.pathname}`);
    const result = await matching.run({
      req,
      res,
      url,
      params: matching.pattern.exec(url.pathname)!.slice(1),
      grant,
      body: () => readBody(req, res, maxBodyBytes, bodyTimeoutMs),
    });
    if (result !== STREAMING) reply(res, 200, result);
  }

  async function authenticate(req: IncomingMessage, url: URL): Promise<Grant> {
    if (!tokens && !jwt) return OPEN_GRANT;
    const presented = presentedToken(req.headers.authorization, url.searchParams);
    if (presented === undefined)
      throw new HttpError(
        401,
        'unauthorized',
        'This gateway needs a token: send Authorization: Bearer <token> (an EventSource may put ?access_token=<token> in the URL).',
      );
    const grant = await grantOf(presented, { tokens, jwt, now: clock.now() });
    // one answer for an unknown, expired or forged token: the caller learns nothing of which
    if (!grant)
      throw new HttpError(
        401,
        'unauthorized',
        'Unknown or expired token: check it against the gateway tokens file, or get a new one from the identity provider.',
      );
    return grant;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err: unknown) => {
    const code = (err as { code?: unknown }).code;
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Cannot serve the gateway on ${host}:${options.port}: ${code === 'EADDRINUSE' ? 'the address is in use' : messageOf(err)}. Pick another port (0 picks a free one), or stop what uses it.`,
      { cause: err },
    );
  });
  const port = (server.address() as AddressInfo).port;
  let rechecking: TimerHandle | undefined;
  if (tokens || jwt) {
    const recheck = async () => {
      for (const [stream, presented] of authorized)
        if (!(await grantOf(presented, { tokens, jwt, now: clock.now() }))) {
          authorized.delete(stream);
          await stream.close();
        }
    };
    const tick = () => {
      void recheck()
        .catch(onError)
        .finally(() => {
          if (rechecking !== undefined) rechecking = unrefd(clock.setTimeout(tick, recheckMs));
        });
    };
    rechecking = unrefd(clock.setTimeout(tick, recheckMs));
  }
  if (!tokens && !jwt) {
    const check = hostGuard({ host, port });
    guard = (req) => check(req);
  }
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/`,
    port,
    streams: () => streams.size,
    async close() {
      clock.clearTimeout(rechecking);
      rechecking = undefined;
      await Promise.all([...streams].map((s) => s.close()));
      tokens?.close?.();
      jwt?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

const STREAMING = Symbol('streaming');

/** A timer that does not keep the process alive. */
const unrefd = (t: TimerHandle): TimerHandle => {
  if (typeof t === 'object' && 'unref' in t) t.unref();
  return t;
};

/** Who a request acts as, recorded in the events it causes: the token's name or the JWT's subject; none without tokens. */
const actorOf = (grant: Grant): { actor?: string } => (grant === OPEN_GRANT ? {} : { actor: grant.name });

/** Where a stream starts: after the Last-Event-ID a reconnecting EventSource sends, else `?after=`, else 0. */
function resumePoint(lastEventId: string | string[] | undefined, after: string | null): number {
  const raw = (Array.isArray(lastEventId) ? lastEventId[0] : lastEventId) ?? after ?? '0';
  if (!/^\d{1,15}$/.test(raw))
    throw new HttpError(
      400,
      ErrorCode.InvalidOption,
      `Resume point ${JSON.stringify(raw.slice(0, 40))} is not a sequence: Last-Event-ID (or ?after=) is the seq of the last event received.`,
    );
  return Number(raw);
}

/** A path segment decoded; a malformed %-escape is a 400 naming it. */
function segment(raw: string, what: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    const bad = /%(?![0-9a-f]{2})|(%[0-9a-f]{2})+/i.exec(raw)?.[0] ?? raw;
    throw new HttpError(
      400,
      ErrorCode.InvalidId,
      `The ${what} in the path, ${JSON.stringify(raw.slice(0, 80))}, has a malformed %-escape (${JSON.stringify(bad.slice(0, 24))}): escape "%" as %25 and send UTF-8 as %XX bytes.`,
    );
  }
}

/** The caller's W3C `traceparent` header, passed on with the input (the engine ignores and counts a malformed one). */
function callerTrace(c: Call): { traceparent?: string } {
  const header = c.req.headers.traceparent;
  return typeof header === 'string' && header !== '' ? { traceparent: header } : {};
}

/**
 * The JSON body: at most `limit` bytes (else 413), all of it within `timeoutMs` (else 408: a stalled
 * body holds nothing for long), nested at most `MAX_BODY_DEPTH` (checked before parsing). A body
 * refused before its end closes its connection after the answer (lingering-close.ts).
 */
async function readBody(req: IncomingMessage, res: ServerResponse, limit: number, timeoutMs: number): Promise<Record<string, unknown>> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(
        new HttpError(
          408,
          'request_timeout',
          `The request body did not arrive within ${timeoutMs} ms: send the whole body at once (the gateway's --body-timeout sets how long it waits).`,
        ),
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([readJson(req, limit), stalled]);
  } catch (err) {
    // a body refused before its end (over the limit, too slow): the connection closes once the answer is sent (lingering-close.ts)
    closeAfterAnswer(req, res);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

async function readJson(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const declared = Number(req.headers['content-length'] ?? 0);
  const tooLarge = () =>
    new HttpError(
      413,
      ErrorCode.PayloadTooLarge,
      `The request body is over ${limit} bytes: send a smaller prompt (a large image by URL), or raise the gateway's --max-body-bytes (an image's base64 is 4/3 of its bytes).`,
    );
  if (declared > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  // not `for await`: leaving one destroys the request, whose rest is still to be drained (lingering-close.ts)
  const body = (req as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  for (let next = await body.next(); !next.done; next = await body.next()) {
    size += next.value.length;
    if (size > limit) throw tooLarge();
    chunks.push(next.value);
  }
  if (size === 0) return {};
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(type))
    throw new HttpError(415, ErrorCode.InvalidOption, `Send the body as application/json (got ${JSON.stringify(type.slice(0, 60))}).`);
  const data = Buffer.concat(chunks);
  const deep = tooDeepAt(data, MAX_BODY_DEPTH);
  if (deep >= 0)
    throw new HttpError(
      400,
      ErrorCode.InvalidPayload,
      `The request body is nested more than ${MAX_BODY_DEPTH} levels deep (at byte ${deep}): send a flatter JSON object (docs/gateway.md).`,
    );
  let value: unknown;
  try {
    value = JSON.parse(data.toString('utf8'));
  } catch (err) {
    throw new HttpError(400, ErrorCode.InvalidPayload, `The request body is not JSON: ${messageOf(err)}.`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new HttpError(400, ErrorCode.InvalidPayload, 'The request body must be a JSON object.');
  return value as Record<string, unknown>;
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    ...(status === 401 ? { 'www-authenticate': 'Bearer realm="sessiond"' } : {}),
  });
  res.end(text);
}
