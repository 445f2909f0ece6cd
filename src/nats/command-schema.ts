/**
 * The command envelopes of docs/protocol.md ("Commands") as schemas: each verb's request, success and
 * error reply. Exported for other languages as clients/protocol/schema/commands.schema.json; the
 * types of command-protocol.ts are checked against them at compile time (the `Same` assertions).
 */
import { z } from 'zod';
import { ErrorCode } from '../errors.ts';
import { Prompt } from '../events/catalog.ts';
import {
  CommandFailureCode,
  EVENTS_PAGE,
  type AdmitCommand,
  type EventsCommand,
  type CancelCommand,
  type DropCommand,
  type ForkCommand,
  type ListCommand,
  type ResolveCommand,
  type TagCommand,
  type BudgetCommand,
  type StatusCommand,
  type WakeCommand,
  type UploadCommand,
  type BlobCommand,
} from './command-protocol.ts';

const id = z.string().regex(/^[A-Za-z0-9_\-:+=@]{1,128}$/);
const millis = z.number().int().nonnegative();
const recordedError = z.object({ type: z.string().min(1), message: z.string(), name: z.string().optional() });
const phase = z.enum(['safe', 'unknown']);
const tagKey = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$/);
const tagValue = z.string().min(1).max(256);
const tags = z.record(tagKey, tagValue);
/** Who did it (recorded in the event): what a trusted client says it acts for. */
const actor = z.string().min(1).max(200);
const state = z.enum(['idle', 'claimed', 'running', 'recovering', 'settled']);
const owner = z.string().regex(/^[A-Za-z0-9_.:@+=-]{1,128}$/);
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);
const blobRef = z.object({ sha256, size: z.number().int().nonnegative(), mediaType: z.string().min(1) });

export const requestSchemas = {
  admit: z.strictObject({
    sessionId: id,
    prompt: Prompt,
    id: id.optional(),
    delivery: z.enum(['queue', 'steer']).optional(),
    wake: z.boolean().optional(),
    notBefore: z.number().int().nonnegative().optional(),
    tags: tags.optional(),
    owner: owner.optional(),
    // a malformed trace context is ignored (and counted) by the admission, never refused
    traceparent: z.string().max(512).optional(),
  }),
  wake: z.strictObject({ sessionId: id }),
  cancel: z.strictObject({ sessionId: id, reason: z.string().max(1000).optional(), executionId: id.optional(), actor: actor.optional() }),
  status: z.strictObject({ sessionId: id, pendingFrom: z.number().int().nonnegative().optional() }),
  drop: z.strictObject({
    sessionId: id,
    inputIds: z.array(id).min(1).max(1000).optional(),
    reason: z.string().max(1000).optional(),
    actor: actor.optional(),
  }),
  resolve: z.strictObject({
    sessionId: id,
    kind: z.enum(['approval', 'signal']),
    name: z.string().min(1).max(200),
    outcome: z.enum(['approved', 'denied', 'delivered']),
    reason: z.string().max(1000).optional(),
    data: z.unknown().optional(),
    actor: actor.optional(),
  }),
  tag: z.strictObject({ sessionId: id, tags: z.record(tagKey, tagValue.nullable()) }),
  budget: z.strictObject({
    sessionId: id,
    tokens: z.number().int().nonnegative().nullable().optional(),
    costUsd: z.number().nonnegative().nullable().optional(),
    reset: z.boolean().optional(),
    actor: actor.optional(),
  }),
  fork: z.strictObject({ sessionId: id, source: id, at: z.number().int().positive().optional(), tags: tags.optional(), owner: owner.optional() }),
  events: z.strictObject({
    sessionId: id,
    afterSeq: z.number().int().nonnegative().optional(),
    limit: z.number().int().min(1).max(EVENTS_PAGE).optional(),
  }),
  list: z.strictObject({
    state: state.optional(),
    waiting: z.boolean().optional(),
    tags: tags.optional(),
    idPrefix: id.optional(),
    updatedSince: millis.optional(),
    reachableBy: owner.optional(),
    calledBy: id.optional(),
    limit: z.number().int().min(1).max(1000).optional(),
    after: z.string().max(256).optional(),
  }),
  upload: z.strictObject({
    uploadId: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/),
    offset: z.number().int().nonnegative(),
    data: z.string(),
    mediaType: z.string().min(1).max(255),
    size: z.number().int().nonnegative().optional(),
    sha256: sha256.optional(),
    owner: owner.optional(),
  }),
  blob: z.strictObject({ sessionId: id, sha256, offset: z.number().int().nonnegative().optional(), seq: z.number().int().positive().optional() }),
} as const;

const refusal = z.string().min(1);

const wakeResult = z.discriminatedUnion('status', [
  z.object({ status: z.literal('started'), executionId: id }),
  z.object({ status: z.literal('running_here'), executionId: id.nullable() }),
  z.object({ status: z.literal('nothing_pending') }),
  z.object({ status: z.literal('refused'), reason: refusal, message: z.string() }),
  z.object({ status: z.literal('failed'), code: z.string().min(1), message: z.string() }),
  z.object({ status: z.literal('closed') }),
  z.object({ status: z.literal('requested') }),
]);

const pending = z.object({
  inputId: id,
  delivery: z.enum(['queue', 'steer']),
  seq: z.number().int().positive(),
  wake: z.boolean(),
  source: z.enum(['user', 'recovery']),
  continues: z
    .object({
      executionId: id,
      reason: z.enum(['interrupted', 'handed_back', 'resumed']),
      phase,
      inputIds: z.array(id),
      assistantMessageId: id.nullable(),
      retryTools: z.array(z.object({ callId: id, messageId: id, name: z.string().min(1), idempotencyKey: z.string() })),
    })
    .optional(),
  notBefore: z.number().int().nonnegative().optional(),
  tags: tags.optional(),
  admittedBy: z.object({ id, position: z.number().int().nullable() }).optional(),
});

const execution = z.object({
  id,
  ownerId: id,
  leaseMs: z.number().int().positive(),
  expiresAt: millis,
  assistantSeq: z.number().int().min(-1),
  claimedSeq: z.number().int().nonnegative(),
  phase,
  started: z.boolean(),
  cancelled: z.boolean(),
  outcome: z.enum(['succeeded', 'failed', 'released', 'waiting', 'cancelled']).nullable(),
  error: recordedError.nullable(),
  openStep: id.nullable(),
  lastMessage: id.nullable(),
  openTools: z.array(z.object({ callId: id, messageId: id, name: z.string().min(1), durable: z.boolean(), idempotencyKey: z.string().nullable() })),
  inputIds: z.array(id),
  inputCount: z.number().int().nonnegative(),
  usage: z
    .object({
      inputTokens: z.number().int().nonnegative(),
      outputTokens: z.number().int().nonnegative(),
      cachedInputTokens: z.number().int().nonnegative().optional(),
      reasoningTokens: z.number().int().nonnegative().optional(),
      costUsd: z.number().nonnegative().optional(),
    })
    .optional(),
});

const wait = z.object({
  kind: z.enum(['approval', 'signal', 'timer', 'session']),
  name: z.string().min(1),
  executionId: id,
  since: millis,
  until: millis.nullable(),
  messageId: id.nullable(),
  callId: id.nullable(),
  tool: z.string().min(1).nullable(),
  input: z.unknown().optional(),
  durable: z.boolean(),
  idempotencyKey: z.string().nullable(),
  outcome: z.enum(['approved', 'denied', 'delivered', 'timed_out', 'elapsed', 'cancelled']).nullable(),
  resolvedAt: millis.nullable(),
  reason: z.string().nullable(),
  data: z.unknown().optional(),
  started: z.boolean(),
  child: z.object({ sessionId: id, inputId: id }).optional(),
});

const usage = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cachedInputTokens: z.number().int().nonnegative().optional(),
  reasoningTokens: z.number().int().nonnegative().optional(),
  costUsd: z.number().nonnegative().optional(),
});
/** Spend since a budget's latest reset (a reset may leave it below 0 only if the log was edited: not checked). */
const spent = z.object({ tokens: z.number().int(), costUsd: z.number() });
const budgetView = z.object({ tokens: z.number().int().nonnegative().nullable(), costUsd: z.number().nonnegative().nullable(), spent });
const tenantBudgetView = budgetView.extend({ since: millis });

const ok = <T extends z.ZodRawShape>(shape: T) => z.object({ ok: z.literal(true), ...shape });

export const replySchemas = {
  admit: ok({
    receipt: z.object({ sessionId: id, inputId: id, admittedSeq: z.number().int().positive(), created: z.boolean(), wake: z.boolean() }),
  }),
  wake: ok({ result: wakeResult }),
  cancel: ok({
    result: z.discriminatedUnion('cancelled', [
      z.object({ cancelled: z.literal(true), executionId: id }),
      z.object({ cancelled: z.literal(false), reason: refusal, message: z.string() }),
    ]),
  }),
  status: ok({
    sessionId: id,
    state,
    seq: z.number().int().nonnegative(),
    executionId: id.nullable(),
    owner: id.nullable(),
    leaseExpiresAt: millis.nullable(),
    leaseLive: z.boolean(),
    leaseLeftMs: z.number().int().nonnegative(),
    phase: phase.nullable(),
    outcome: z.enum(['succeeded', 'failed', 'released', 'waiting', 'cancelled']).nullable(),
    pending: z.array(pending),
    pendingFrom: z.number().int().nonnegative(),
    pendingCount: z.number().int().nonnegative(),
    pendingBytes: z.number().int().nonnegative(),
    pendingBlobBytes: z.number().int().nonnegative(),
    recovery: z
      .object({
        executionId: id,
        continuationInputId: id.nullable(),
        wakePending: z.boolean(),
        attempts: z.number().int().nonnegative(),
        parked: z.boolean(),
        lastAttemptAt: millis,
        lastError: recordedError.nullable(),
      })
      .nullable(),
    waits: z.array(wait),
    executions: z.number().int().nonnegative(),
    usage: z.object({
      inputTokens: z.number().int().nonnegative(),
      outputTokens: z.number().int().nonnegative(),
      cachedInputTokens: z.number().int().nonnegative().optional(),
      reasoningTokens: z.number().int().nonnegative().optional(),
      costUsd: z.number().nonnegative().optional(),
    }),
    budget: budgetView.nullable(),
    tags,
    forkedFrom: z.object({ sessionId: id, seq: z.number().int().positive() }).nullable(),
    ownedBy: owner.nullable(),
    calledBy: id.nullable(),
    children: z.array(id),
    execution: execution.nullable(),
    capacity: z
      .object({
        since: millis,
        limits: z.array(
          z.object({
            scope: z.string().min(1),
            limit: z.number().int().positive(),
            inFlight: z.number().int().nonnegative(),
            waiting: z.number().int().nonnegative(),
          }),
        ),
      })
      .optional(),
    tenantBudget: tenantBudgetView.optional(),
  }),
  drop: ok({ result: z.object({ sessionId: id, dropped: z.array(id), seq: z.number().int().positive().optional() }) }),
  resolve: ok({
    result: z.object({
      sessionId: id,
      kind: z.enum(['approval', 'signal', 'timer']),
      name: z.string().min(1),
      outcome: z.enum(['approved', 'denied', 'delivered', 'timed_out', 'elapsed']),
      resolved: z.boolean(),
      resumeInputId: id.optional(),
      seq: z.number().int().positive().optional(),
    }),
  }),
  tag: ok({ result: z.object({ sessionId: id, tags, changed: z.boolean(), seq: z.number().int().positive().optional() }) }),
  budget: ok({
    result: z.object({
      sessionId: id,
      budget: budgetView.nullable(),
      spent,
      usage,
      changed: z.boolean(),
      seq: z.number().int().positive().optional(),
    }),
  }),
  fork: ok({
    result: z.object({
      sessionId: id,
      from: z.object({ sessionId: id, seq: z.number().int().positive() }),
      seq: z.number().int().positive(),
      created: z.boolean(),
      items: z.number().int().nonnegative(),
    }),
  }),
  events: ok({
    events: z.array(
      z.object({
        id,
        type: z.string().min(1),
        version: z.number().int().positive(),
        sessionId: id,
        seq: z.number().int().positive(),
        time: millis,
        payload: z.unknown(),
        position: z.number().int().positive().optional(),
        committedAt: millis.optional(),
      }),
    ),
    more: z.boolean(),
  }),
  list: ok({
    sessions: z.array(
      z.object({
        sessionId: id,
        state,
        waiting: z.boolean(),
        pendingInputs: z.number().int().nonnegative(),
        seq: z.number().int().nonnegative(),
        createdAt: millis,
        updatedAt: millis,
        tags,
        forkedFrom: z.object({ sessionId: id, seq: z.number().int().nonnegative() }).nullable(),
        ownedBy: owner.nullable(),
        calledBy: id.nullable(),
        childCount: z.number().int().nonnegative(),
      }),
    ),
    next: z.string().nullable(),
  }),
  upload: ok({ received: z.number().int().nonnegative(), blob: blobRef.optional() }),
  blob: ok({
    sha256,
    size: z.number().int().nonnegative(),
    mediaType: z.string().min(1),
    offset: z.number().int().nonnegative(),
    data: z.string(),
    more: z.boolean(),
    seq: z.number().int().positive().optional(),
  }),
} as const;

/** Every code an error reply may carry, and the three a client reports for a request that got none. */
export const replyErrorCodes = [
  ...Object.values(ErrorCode),
  CommandFailureCode.BadRequest,
  CommandFailureCode.UnknownSession,
  CommandFailureCode.UnknownCommand,
  CommandFailureCode.Internal,
] as const;
export const clientErrorCodes = [CommandFailureCode.NoWorker, CommandFailureCode.Timeout, CommandFailureCode.PermissionDenied] as const;

export const errorReplySchema = z.object({
  ok: z.literal(false),
  error: z.object({
    code: z.enum([...new Set(replyErrorCodes)] as [string, ...string[]]),
    message: z.string().max(1000),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});

// compile-time: the request schemas and the request types of commands.ts are the same shape
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const sameRequests: [
  Same<z.input<typeof requestSchemas.admit>, AdmitCommand>,
  Same<z.input<typeof requestSchemas.wake>, WakeCommand>,
  Same<z.input<typeof requestSchemas.cancel>, CancelCommand>,
  Same<z.input<typeof requestSchemas.status>, StatusCommand>,
  Same<z.input<typeof requestSchemas.drop>, DropCommand>,
  Same<z.input<typeof requestSchemas.resolve>, ResolveCommand>,
  Same<z.input<typeof requestSchemas.tag>, TagCommand>,
  Same<z.input<typeof requestSchemas.budget>, BudgetCommand>,
  Same<z.input<typeof requestSchemas.list>, ListCommand>,
  Same<z.input<typeof requestSchemas.fork>, ForkCommand>,
  Same<z.input<typeof requestSchemas.events>, EventsCommand>,
  Same<z.input<typeof requestSchemas.upload>, UploadCommand>,
  Same<z.input<typeof requestSchemas.blob>, BlobCommand>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true];
void sameRequests;
