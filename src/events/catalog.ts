/**
 * The event catalog: every event type sessiond writes or publishes, defined once. Each entry has a
 * schema version, a runtime schema for its payload (types are inferred from it), and whether it is
 * durable (stored in the log) or live-only (published on NATS core subjects, never stored).
 *
 * Event types are past tense; the strings below are the only place they are spelled.
 */
import { z } from 'zod';

const id = z.string().min(1).max(128);
const seq = z.number().int().min(-1);
const time = z.number().int().nonnegative();
/** A W3C trace context (`traceparent`, version 00): where a span of OpenTelemetry tracing is. */
const traceparent = z.string().regex(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/);
/** Who did it: the gateway token's name or the JWT's subject, or what a trusted NATS client or the CLI says. */
const actor = z.string().min(1).max(200);
/** A session's tags (events/tags.ts has the rules and the messages; this is what the log holds). */
const tagKey = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$/);
const tagValue = z.string().min(1).max(256);
export const Tags = z.record(tagKey, tagValue);
export type Tags = Readonly<Record<string, string>>;
/** A change to a session's tags: a value sets the key, `null` removes it. */
export type TagChanges = Readonly<Record<string, string | null>>;
/** Who a session belongs to (a gateway grant's tenant, or `token:<name>`): fixed by its first event, never changed (sessions/owner.ts checks its characters where requests name it). */
export const Owner = z.string().min(1).max(128);

/**
 * A prompt: a string, or a list of parts (src/events/prompt.ts has the rules and the messages). Bytes
 * travel as base64 text, so every reader (JSON, msgpack, other languages) sees one shape.
 */
/** A value JSON can carry: null, a boolean, a finite number, a string, a list or a map of them. */
function isJsonValue(v: unknown): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isJsonValue);
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) return Object.values(v).every(isJsonValue);
  return false;
}
const mediaType = z.string().regex(/^[a-z]+\/[A-Za-z0-9.+-]+$/);
const url = z.string().regex(/^(https?:\/\/|data:)/);
/** A blob beside the log (src/blobs/blob-store.ts `BlobRef`): its bytes' SHA-256 (lower-case hex), size and media type. */
export const BlobRefSchema = z.object({ sha256: z.string().regex(/^[0-9a-f]{64}$/), size: z.number().int().nonnegative(), mediaType });
export const PromptPart = z.union([
  z.strictObject({ type: z.literal('text'), text: z.string() }),
  z.strictObject({ type: z.literal('image'), url, mediaType: mediaType.optional() }),
  z.strictObject({ type: z.literal('image'), data: z.base64(), mediaType }),
  /** An image stored as a blob beside the log (a large inline image is moved there at admission). */
  z.strictObject({ type: z.literal('image'), blob: BlobRefSchema }),
  z.strictObject({ type: z.literal('file'), url, mediaType, filename: z.string().min(1).max(256).optional() }),
  z.strictObject({ type: z.literal('file'), data: z.base64(), mediaType, filename: z.string().min(1).max(256).optional() }),
  z.strictObject({ type: z.literal('file'), blob: BlobRefSchema, filename: z.string().min(1).max(256).optional() }),
  z.strictObject({
    type: z.literal('json'),
    value: z.unknown().refine(isJsonValue, 'must be a JSON value (null, a boolean, a finite number, a string, a list or a map of them)'),
  }),
]);
export type PromptPart = z.infer<typeof PromptPart>;
export const Prompt = z.union([z.string(), z.array(PromptPart).min(1)]);
export type Prompt = z.infer<typeof Prompt>;

export const RecordedError = z.object({
  type: z.string().min(1),
  message: z.string(),
  name: z.string().optional(),
});
export type RecordedError = z.infer<typeof RecordedError>;

export const Delivery = z.enum(['steer', 'queue']);
export type Delivery = z.infer<typeof Delivery>;

/** `safe`: no external effect has started, rerunning is harmless. `unknown`: a model request or tool may be in flight. */
export const ExecutionPhase = z.enum(['safe', 'unknown']);
export type ExecutionPhase = z.infer<typeof ExecutionPhase>;

/** `waiting`: the turn ended its execution to wait (an approval, a signal, a timer); it resumes when its waits resolve. */
export const SettleOutcome = z.enum(['succeeded', 'failed', 'released', 'waiting']);
export type SettleOutcome = z.infer<typeof SettleOutcome>;

/** Tokens a model step used, as the server reported them. */
/** Tokens a model call used; `cachedInputTokens` (read from the provider's cache) is part of `inputTokens`, `reasoningTokens` of `outputTokens`, each recorded when the server reports it. */
export const Usage = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cachedInputTokens: z.number().int().nonnegative().optional(),
  reasoningTokens: z.number().int().nonnegative().optional(),
  /** What the call cost in US dollars, priced when it ended (`sessiond start --prices`): set only where the model had a price. */
  costUsd: z.number().nonnegative().optional(),
});
export type Usage = z.infer<typeof Usage>;

/**
 * A change to a session's budget (`budget.set`): `tokens` and `costUsd` set a limit where a number,
 * remove it where null, leave it where absent; `reset` counts the session's spend from this event on.
 */
export const BudgetChange = z.object({
  tokens: z.number().int().nonnegative().nullable().optional(),
  costUsd: z.number().nonnegative().nullable().optional(),
  reset: z.boolean().optional(),
});
export type BudgetChange = z.infer<typeof BudgetChange>;

/**
 * What a continuation continues (on the `input.admitted` of a recovery or a hand-back), as data: the
 * execution it takes over, the inputs that execution was running (their prompts are in the
 * session's transcript), its last assistant message (the partial answer), and the durable tool
 * calls that were journaled and never finished, to retry with the same idempotency key.
 */
export const Continuation = z.object({
  executionId: id,
  reason: z.enum(['interrupted', 'handed_back', 'resumed']),
  phase: ExecutionPhase,
  inputIds: z.array(id),
  assistantMessageId: id.nullable(),
  retryTools: z.array(z.object({ callId: id, messageId: id, name: z.string().min(1), idempotencyKey: z.string() })),
  /** The span of the turn continued (its `invoke_agent`): the continuation's turn links to it. */
  traceparent: traceparent.optional(),
});
export type Continuation = z.infer<typeof Continuation>;

/**
 * What a turn may wait for, holding nothing: a person's decision on a tool call (`approval`, named
 * by the call id), a value delivered from outside (`signal`, named by the runner), a time (`timer`),
 * another session's turn (`session`, named by the runner's `callSession`; its answer is delivered).
 */
export const WaitKind = z.enum(['approval', 'signal', 'timer', 'session']);
export type WaitKind = z.infer<typeof WaitKind>;

/** How a wait ended: an approval `approved`/`denied`, a signal or a session call `delivered`/`timed_out`, a timer `elapsed`; any of them `cancelled`. */
export const WaitOutcome = z.enum(['approved', 'denied', 'delivered', 'timed_out', 'elapsed', 'cancelled']);
export type WaitOutcome = z.infer<typeof WaitOutcome>;

/**
 * The conversation a fork starts with: the source's transcript up to the fork point, as the model
 * runner folds it (src/events/transcript.ts has the types and the fold).
 */
const transcriptPart = z.union([
  z.object({ type: z.enum(['text', 'reasoning']), partId: id, text: z.string() }),
  z.object({
    type: z.literal('tool'),
    callId: id,
    name: z.string().min(1),
    input: z.unknown(),
    durable: z.boolean(),
    idempotencyKey: z.string().optional(),
    state: z.enum(['called', 'awaiting_approval', 'approved', 'denied', 'cancelled', 'running', 'succeeded', 'failed']),
    output: z.unknown().optional(),
    /** A result too large for the event, stored beside the log as JSON text (`output` is then absent). */
    outputBlob: BlobRefSchema.optional(),
    error: RecordedError.optional(),
    decision: z.object({ outcome: z.enum(['approved', 'denied', 'cancelled']), reason: z.string().optional() }).optional(),
  }),
]);
export const TranscriptItemSchema = z.union([
  z.object({
    type: z.literal('user'),
    inputId: id,
    executionId: id,
    text: z.string(),
    parts: z.array(PromptPart).optional(),
    delivery: Delivery.optional(),
    continues: Continuation.optional(),
  }),
  z.object({
    type: z.literal('assistant'),
    messageId: id,
    executionId: id,
    status: z.enum(['running', 'completed', 'failed', 'recovered']),
    parts: z.array(transcriptPart),
    finish: z.string().optional(),
    error: RecordedError.optional(),
    usage: Usage.optional(),
  }),
  z.object({ type: z.literal('summary'), messageId: id, executionId: id, summary: z.string() }),
]);

/** Turns a stored version-v payload into a version-v+1 one; `description` says how, for other languages' readers. */
export type Upcaster = ((payload: unknown) => unknown) & { readonly description: string };

function upcaster(description: string, up: (payload: Record<string, unknown>) => Record<string, unknown>): Upcaster {
  return Object.assign((payload: unknown) => up(payload as Record<string, unknown>), { description });
}

/**
 * An event type. `version` is the payload's current version; when it changes, `upcasters[v]` turns
 * a stored version-v payload into a version-v+1 one, so old logs keep reading (the codec applies
 * them in order before validating against `schema`). `durable: false` types are live-only.
 */
function event<const T extends string, S extends z.ZodType>(
  type: T,
  schema: S,
  options: { version?: number; durable?: boolean; writer?: Writer; upcasters?: Readonly<Record<number, Upcaster>> } = {},
) {
  return {
    type,
    schema,
    version: options.version ?? 1,
    durable: options.durable ?? true,
    writer: options.writer ?? 'engine',
    ...(options.upcasters ? { upcasters: options.upcasters } : {}),
  } as const;
}

/**
 * Who writes a type: `runner` through the run handle (`record`, under the owner's claim), `owner`
 * the claim's owner itself (start, renewals, settlement), `engine` anyone else's decisions (claims,
 * admissions, cancels, recoveries). The machine lets a runner write only `runner` types; the audit
 * checks `runner` and `owner` writes against the lease they were made under.
 */
export type Writer = 'runner' | 'owner' | 'engine';

export const catalog = {
  'execution.claimed': event(
    'execution.claimed',
    z.object({
      executionId: id,
      ownerId: id,
      expiresAt: time,
      leaseMs: z.number().int().positive(),
      assistantSeq: seq,
    }),
  ),
  'execution.renewed': event('execution.renewed', z.object({ executionId: id, expiresAt: time }), { writer: 'owner' }),
  /** `traceparent`: the turn's span (`invoke_agent`); `parentTraceparent`: its parent, the caller's (a continuation inherits it). */
  'execution.started': event(
    'execution.started',
    z.object({ executionId: id, traceparent: traceparent.optional(), parentTraceparent: traceparent.optional() }),
    { writer: 'owner' },
  ),
  'execution.phase': event('execution.phase', z.object({ executionId: id, phase: ExecutionPhase }), { writer: 'runner' }),
  /** `actor`: who cancelled. */
  'execution.cancelled': event('execution.cancelled', z.object({ executionId: id, reason: z.string().max(1000).optional(), actor: actor.optional() })),
  'execution.settled': event(
    'execution.settled',
    z.object({
      executionId: id,
      outcome: SettleOutcome,
      error: RecordedError.optional(),
    }),
    { writer: 'owner' },
  ),

  'input.admitted': event(
    'input.admitted',
    z.object({
      inputId: id,
      prompt: Prompt,
      delivery: Delivery,
      wake: z.boolean(),
      source: z.enum(['user', 'recovery']).default('user'),
      continues: Continuation.optional(),
      /** A scheduled prompt: no turn takes it before this time (ms since the epoch). */
      notBefore: z.number().int().nonnegative().optional(),
      /** Tags the admission gives its session (merged into those it has). */
      tags: Tags.optional(),
      /** The session's owner: only on the admission that created the session (its first event). */
      owner: Owner.optional(),
      /** The caller's trace context (W3C): the span of the turn that runs this input is its child. */
      traceparent: traceparent.optional(),
      /** The session whose turn admitted this input (`ctx.callSession`): the child's parent. */
      caller: id.optional(),
    }),
    {
      version: 2,
      upcasters: { 1: upcaster('none: a version-1 prompt is a string, which version 2 still reads (it adds prompts of parts)', (p) => p) },
    },
  ),
  'input.promoted': event('input.promoted', z.object({ inputId: id, executionId: id }), { writer: 'runner' }),
  /** Pending inputs dropped unrun by an operator (`sessiond cancel --pending`): they never run. */
  'input.dropped': event('input.dropped', z.object({ inputIds: z.array(id).min(1), reason: z.string().max(1000).optional(), actor: actor.optional() })),

  'step.started': event('step.started', z.object({ executionId: id, messageId: id, step: z.number().int().nonnegative() }), { writer: 'runner' }),
  'step.ended': event('step.ended', z.object({ executionId: id, messageId: id, finish: z.string().min(1), usage: Usage.optional() }), { writer: 'runner' }),
  'step.failed': event('step.failed', z.object({ executionId: id, messageId: id, error: RecordedError }), { writer: 'runner' }),
  'step.recovered': event('step.recovered', z.object({ executionId: id, messageId: id, reason: z.string() })),

  'text.delta': event('text.delta', z.object({ executionId: id, messageId: id, partId: id, delta: z.string() }), { durable: false }),
  /**
   * The text of a part as it streams, recorded (src/execution/run-context.ts): at most
   * `STREAM_RECORD_MS` after it streamed, and with any durable write of the turn before that. `text`
   * is what streamed since the last record of the part, appended to it; `restart: true` starts the
   * part's text again with it (the first record of a part, and the first after a retried model
   * request, which streams the part again). `text.completed` replaces it with the part's final text;
   * a part that never completes (its owner died) keeps what was recorded: the partial answer.
   */
  'text.streamed': event('text.streamed', z.object({ executionId: id, messageId: id, partId: id, text: z.string(), restart: z.boolean() }), {
    writer: 'runner',
  }),
  'text.completed': event('text.completed', z.object({ executionId: id, messageId: id, partId: id, text: z.string() }), { writer: 'runner' }),
  /** A model's reasoning text, where the server sends it (live deltas, then the final text of the part). */
  'reasoning.delta': event('reasoning.delta', z.object({ executionId: id, messageId: id, partId: id, delta: z.string() }), { durable: false }),
  'reasoning.completed': event('reasoning.completed', z.object({ executionId: id, messageId: id, partId: id, text: z.string() }), { writer: 'runner' }),
  /** A model request that failed and will be sent again after `delayMs` (live-only: every attempt is visible). */
  'model.retry_scheduled': event(
    'model.retry_scheduled',
    z.object({ executionId: id, messageId: id, attempt: z.number().int().positive(), delayMs: z.number().int().nonnegative(), error: RecordedError }),
    { durable: false },
  ),

  /**
   * A running tool's progress (`ctx.progress`, an MCP progress notification): live-only, at most one
   * per call every `PROGRESS_INTERVAL_MS` (the latest wins), never stored. `progress` counts up;
   * `total`, when known, is what it counts to.
   */
  'tool.progressed': event(
    'tool.progressed',
    z.object({
      executionId: id,
      messageId: id,
      callId: id,
      progress: z.number().nonnegative(),
      total: z.number().nonnegative().optional(),
      message: z.string().max(1000).optional(),
    }),
    { durable: false },
  ),

  /**
   * A tool call journaled. Version 2 adds `started`: true when the call starts in the same append
   * (the usual case: one event, where version 1 wrote `tool.called` then `tool.started`); false for
   * a call recorded before it may start, whose `tool.started` comes later. A version-1 payload reads
   * as `started: false` (its `tool.started` follows it in the log).
   */
  'tool.called': event(
    'tool.called',
    z.object({
      executionId: id,
      messageId: id,
      callId: id,
      name: z.string().min(1),
      input: z.unknown().optional(), // (undefined is stored as an absent key)
      durable: z.boolean(),
      idempotencyKey: z.string().optional(),
      started: z.boolean(),
    }),
    {
      writer: 'runner',
      version: 2,
      upcasters: { 1: upcaster('adds started: false (a version-1 call is followed by its tool.started)', (p) => ({ ...p, started: false })) },
    },
  ),
  /** A call recorded with `started: false` starts (and every call of a version-1 log). */
  'tool.started': event('tool.started', z.object({ executionId: id, messageId: id, callId: id }), { writer: 'runner' }),
  /** `outputBlob`: a result too large for the event, stored beside the log as its JSON text (`application/json`); `output` is then absent. */
  'tool.succeeded': event(
    'tool.succeeded',
    z.object({ executionId: id, messageId: id, callId: id, output: z.unknown().optional(), outputBlob: BlobRefSchema.optional() }),
    { writer: 'runner' },
  ),
  'tool.failed': event('tool.failed', z.object({ executionId: id, messageId: id, callId: id, error: RecordedError }), { writer: 'runner' }),

  /**
   * A turn waits (written before its execution settles `waiting`). `name` is the wait's key within
   * the turn: an approval's call id, a signal's name, a timer's `sleep-N`. `until`: when a timer
   * elapses or a signal times out. An approval carries the call (`callId`, `tool`, `input`), whose
   * `tool.called` (started: false) is in the same append. A session call names its `child`: the
   * session and the input admitted into it (whose turn's end is delivered as the wait's `data`).
   */
  'wait.started': event(
    'wait.started',
    z.object({
      executionId: id,
      kind: WaitKind,
      name: z.string().min(1).max(200),
      messageId: id.optional(),
      callId: id.optional(),
      tool: z.string().min(1).optional(),
      input: z.unknown().optional(),
      until: time.optional(),
      child: z.object({ sessionId: id, inputId: id }).optional(),
    }),
    { writer: 'runner' },
  ),
  /**
   * A wait ended (`executionId`: the execution that waited). `reason`: a person's words on an
   * approval or denial, or why it was cancelled; `data`: a delivered signal's value; `actor`: who.
   */
  'wait.resolved': event(
    'wait.resolved',
    z.object({
      executionId: id,
      kind: WaitKind,
      name: z.string().min(1).max(200),
      outcome: WaitOutcome,
      /** An approval's call and its assistant message (what the call's row shows). */
      messageId: id.optional(),
      callId: id.optional(),
      reason: z.string().max(1000).optional(),
      data: z.unknown().optional(),
      /** Who decided, delivered or cancelled (absent for a timer, a timeout, or a caller that did not say). */
      actor: actor.optional(),
    }),
  ),

  'compaction.started': event('compaction.started', z.object({ executionId: id, messageId: id, reason: z.string() }), { writer: 'runner' }),
  'compaction.completed': event('compaction.completed', z.object({ executionId: id, messageId: id, summary: z.string(), usage: Usage.optional() }), {
    writer: 'runner',
  }),

  /**
   * The session's budget set (`sessions.budget`, `sessiond budget`; the admin or a trusted caller):
   * its limits from now on (null: none), `reset` when its spend counts from this event on, `actor` who.
   */
  'budget.set': event(
    'budget.set',
    z.object({
      tokens: z.number().int().nonnegative().nullable(),
      costUsd: z.number().nonnegative().nullable(),
      reset: z.boolean(),
      actor: actor.optional(),
    }),
  ),
  /** A session's tags changed (`sessions.tag`): each key set to its value, or removed where null. */
  'session.tagged': event('session.tagged', z.object({ tags: z.record(tagKey, tagValue.nullable()) })),
  /**
   * The first event of a session forked from another: the source and the sequence it was forked at,
   * the source's conversation up to there (what the model runner and the projection's message rows
   * start from), and the tags the fork was given. After it the session lives its own life.
   */
  'session.forked': event(
    'session.forked',
    z.object({
      from: z.object({ sessionId: id, seq: z.number().int().positive() }),
      transcript: z.array(TranscriptItemSchema),
      tags: Tags.optional(),
      /** The fork's owner: the source's (or, for an ownerless source, the forking grant's). */
      owner: Owner.optional(),
    }),
  ),

  /**
   * Live-only: a turn's owner is gone and the turn is being recovered, published as soon as the log
   * knows (the recovery sweep's takeover, `lease_expired`; an owner that shut down and handed the
   * turn back, `handed_back`). What was streamed and not recorded is lost: of message `messageId`
   * (the step that was streaming, sealed; null when none was open) keep the first `length` UTF-16
   * code units (a JavaScript string's length) of each part in `recorded` and discard the rest and
   * any part not listed. The continuation (`continuationInputId`) answers next, in a new message.
   */
  'turn.interrupted': event(
    'turn.interrupted',
    z.object({
      executionId: id,
      ownerId: id,
      reason: z.enum(['lease_expired', 'handed_back']),
      messageId: id.nullable(),
      recorded: z.array(z.object({ partId: id, length: z.number().int().nonnegative() })),
      continuationInputId: id.nullable(),
    }),
    { durable: false },
  ),
  'recovery.started': event('recovery.started', z.object({ executionId: id })),
  'recovery.completed': event(
    'recovery.completed',
    z.object({
      executionId: id,
      assistantMessageId: id.nullable(),
      continuationInputId: id.nullable(),
      phase: ExecutionPhase,
      error: RecordedError.optional(),
    }),
  ),
  'recovery.wake_requested': event('recovery.wake_requested', z.object({ executionId: id, attempt: z.number().int().positive() })),
  'recovery.wake_delivered': event('recovery.wake_delivered', z.object({ executionId: id, byExecutionId: id })),
  'recovery.wake_failed': event(
    'recovery.wake_failed',
    z.object({
      executionId: id,
      attempt: z.number().int().positive(),
      error: RecordedError,
      parked: z.boolean(),
    }),
  ),
} as const;

export type Catalog = typeof catalog;
export type EventType = keyof Catalog;
export type PayloadOf<T extends EventType> = z.output<Catalog[T]['schema']>;
/** What a producer passes in: defaults (like `source`) may be left out. */
export type PayloadInputOf<T extends EventType> = z.input<Catalog[T]['schema']>;

export const eventTypes = Object.keys(catalog) as EventType[];
export const durableEventTypes = eventTypes.filter((t) => catalog[t].durable);
export const liveOnlyEventTypes = eventTypes.filter((t) => !catalog[t].durable);
/** Types a runner may write through its handle. */
export const runnerEventTypes: ReadonlySet<EventType> = new Set(eventTypes.filter((t) => catalog[t].writer === 'runner'));
/** Types written by a claim's owner (its runner's included): the audit checks them against the lease. */
export const ownerEventTypes: ReadonlySet<EventType> = new Set(eventTypes.filter((t) => catalog[t].writer !== 'engine'));

export function isEventType(value: unknown): value is EventType {
  return typeof value === 'string' && Object.hasOwn(catalog, value);
}
export function isDurable(type: EventType): boolean {
  return catalog[type].durable;
}
