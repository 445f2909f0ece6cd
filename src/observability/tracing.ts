/**
 * Spans by OpenTelemetry's generative-AI semantic conventions (`invoke_agent`, `chat`,
 * `execute_tool`, and sessiond's own), on `@opentelemetry/api` only: no-ops unless an SDK is
 * registered (otel-sdk.ts). The spans and attributes: docs/operating.md#traces.
 */
import {
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import type { RecordedError, Usage } from '../events/catalog.ts';
import { traceCounts } from './trace-counts.ts';

/** The tracer's name (the instrumentation scope a backend shows). */
export const TRACER_NAME = 'sessiond';

/** The attribute names used, the conventions' and sessiond's own. */
export const Attr = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  conversation: 'gen_ai.conversation.id',
  agentName: 'gen_ai.agent.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  errorType: 'error.type',
  sessionId: 'sessiond.session.id',
  executionId: 'sessiond.execution.id',
  ownerId: 'sessiond.owner.id',
  seq: 'sessiond.seq',
  step: 'sessiond.step',
  outcome: 'sessiond.outcome',
  inputIds: 'sessiond.input.ids',
  continues: 'sessiond.continues.execution_id',
  durable: 'sessiond.tool.durable',
  waitKind: 'sessiond.wait.kind',
  waitName: 'sessiond.wait.name',
  continuationInput: 'sessiond.continuation.input_id',
  // contents, only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT opts in (`contentCaptured`)
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  systemInstructions: 'gen_ai.system_instructions',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  link: 'sessiond.link',
} as const;

/** The agent name on `invoke_agent` spans (one engine, many sessions: the session is the conversation). */
export const AGENT_NAME = 'sessiond';

const tracer = () => trace.getTracer(TRACER_NAME);

/**
 * When spans are made: `auto` (the default) when a tracer provider is registered (an SDK: the
 * worker's when `OTEL_*` asks, or an embedding application's), so a worker with none builds no
 * span, attribute or context at all; `always` makes every call through the API even with none (its
 * no-ops: what tracing cost before `auto`); `never` makes none. The bench's A/B sets it.
 */
export type SpanMode = 'auto' | 'always' | 'never';
let mode: SpanMode = 'auto';

/** Sets when spans are made (see `SpanMode`); returns the previous mode. */
export function setSpanMode(next: SpanMode): SpanMode {
  const previous = mode;
  mode = next;
  return previous;
}

/** The conventions' switch for prompt and completion contents on spans (off unless set). */
export const CAPTURE_CONTENT_ENV = 'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT';

/**
 * Whether spans carry contents (messages, system instructions, tool arguments and results): only
 * when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is `true` (or `span_only`,
 * `span_and_event`, the newer spellings; sessiond records contents on spans, not events).
 */
export function contentCaptured(env: Record<string, string | undefined> = process.env): boolean {
  const v = env[CAPTURE_CONTENT_ENV]?.trim().toLowerCase();
  return v === 'true' || v === 'span_only' || v === 'span_and_event';
}

/** A value as a content attribute: a string as is, anything else as JSON (attributes hold no structures). */
export function contentValue(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Whether a turn starting now makes spans: a tracer provider is registered (or the mode says). */
export function spansOn(): boolean {
  if (mode !== 'auto') return mode === 'always';
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer(TRACER_NAME) !== undefined;
}

/**
 * Where a turn's span goes: its parent is the first of its inputs that came with a caller's trace
 * context (a continuation inherits the one of the turn it continues); the others', and the turn a
 * continuation continues, are links.
 */
export function turnTrace(inputs: readonly { traceparent?: string; continues?: { traceparent?: string } }[]): {
  parent: string | undefined;
  context: Context;
  links: Link[];
} {
  const parent = inputs.find((i) => i.traceparent)?.traceparent;
  const links: Link[] = [];
  for (const i of inputs) {
    const linked = i.traceparent && i.traceparent !== parent ? parseTraceparent(i.traceparent) : undefined;
    if (linked) links.push({ context: linked, attributes: { [Attr.link]: 'input' } });
    const continued = i.continues?.traceparent ? parseTraceparent(i.continues.traceparent) : undefined;
    if (continued) links.push({ context: continued, attributes: { [Attr.link]: 'continues' } });
  }
  const remote = parent ? parseTraceparent(parent) : undefined;
  return { parent, context: remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT, links };
}

/** The turn's span: `invoke_agent`, in the trace `turnTrace` says; the claim's sequence and inputs are said once it landed. */
export function startTurnSpan(
  a: { sessionId: string; executionId: string; ownerId: string },
  where: { context: Context; links: Link[] },
  startTime: number,
): Span {
  const attributes: Attributes = {
    [Attr.operation]: 'invoke_agent',
    [Attr.agentName]: AGENT_NAME,
    [Attr.conversation]: a.sessionId,
    [Attr.sessionId]: a.sessionId,
    [Attr.executionId]: a.executionId,
    [Attr.ownerId]: a.ownerId,
  };
  return tracer().startSpan(`invoke_agent ${AGENT_NAME}`, { kind: SpanKind.INTERNAL, attributes, links: where.links, startTime }, where.context);
}

/** Ends a turn's span with how it settled (`succeeded`, `waiting`, `failed`, `released`, `claim_lost`, `cancelled`). */
export function endTurnSpan(span: Span, outcome: string, error?: unknown): void {
  span.setAttribute(Attr.outcome, outcome);
  if (outcome === 'failed') failed(span, error);
  span.end();
}

/** A `sessiond.claim` span, from `startTime` to now: the decision and append that took (or were refused) the session's next turn; child of the turn when it was taken. */
export function claimSpan(a: { sessionId: string; executionId: string; ownerId: string }, startTime: number, attributes: Attributes, turn?: Span): Span {
  return tracer().startSpan(
    'sessiond.claim',
    { startTime, attributes: { [Attr.sessionId]: a.sessionId, [Attr.executionId]: a.executionId, [Attr.ownerId]: a.ownerId, ...attributes } },
    turn ? trace.setSpan(ROOT_CONTEXT, turn) : ROOT_CONTEXT,
  );
}

/** A model call: `chat`, child of its turn. The model and provider come when the runner names them. */
export function startChatSpan(turn: Span, a: { sessionId: string; executionId: string; messageId: string; step: number }): Span {
  return tracer().startSpan(
    'chat',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [Attr.operation]: 'chat',
        [Attr.conversation]: a.sessionId,
        [Attr.sessionId]: a.sessionId,
        [Attr.executionId]: a.executionId,
        [Attr.responseId]: a.messageId,
        [Attr.step]: a.step,
      },
    },
    trace.setSpan(context.active(), turn),
  );
}

/** The model a call asks for (`RunContext.modelCall`): the span is renamed `chat {model}`. */
export function chatModel(span: Span, provider: string, model: string): void {
  span.setAttributes({ [Attr.provider]: provider, [Attr.requestModel]: model });
  span.updateName(`chat ${model}`);
}

/** Ends a model call's span with its finish reason, model and token usage; at `endTime` (`performance.now()`): when its request ended. */
export function endChatSpan(span: Span, finish: string, usage?: Usage, model?: string, endTime?: number): void {
  const attributes: Attributes = { [Attr.finishReasons]: [finish] };
  if (model) attributes[Attr.responseModel] = model;
  if (usage) {
    attributes[Attr.inputTokens] = usage.inputTokens;
    attributes[Attr.outputTokens] = usage.outputTokens;
  }
  span.setAttributes(attributes);
  span.end(endTime);
}

/** Ends a model call's span that failed. */
export function failChatSpan(span: Span, error: RecordedError, endTime?: number): void {
  span.setAttribute(Attr.errorType, error.type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  span.end(endTime);
}

/** A tool call: `execute_tool {name}`, child of its turn (parallel calls are siblings). */
export function startToolSpan(turn: Span, a: { sessionId: string; executionId: string; name: string; callId: string; durable: boolean }): Span {
  return tracer().startSpan(
    `execute_tool ${a.name}`,
    {
      attributes: {
        [Attr.operation]: 'execute_tool',
        [Attr.toolName]: a.name,
        [Attr.toolCallId]: a.callId,
        [Attr.toolType]: 'function',
        [Attr.durable]: a.durable,
        [Attr.conversation]: a.sessionId,
        [Attr.sessionId]: a.sessionId,
        [Attr.executionId]: a.executionId,
      },
    },
    trace.setSpan(context.active(), turn),
  );
}

/** Ends a tool call's span: `succeeded`, or `failed` with its error. */
export function endToolSpan(span: Span, error?: unknown): void {
  if (error === undefined) span.setAttribute(Attr.outcome, 'succeeded');
  else {
    span.setAttribute(Attr.outcome, 'failed');
    failed(span, error);
  }
  span.end();
}

/** A wait the turn records (an approval, a signal, a timer): the turn ends waiting; the span marks where. */
export function waitSpan(turn: Span, a: { sessionId: string; executionId: string; kind: string; name: string; tool?: string }): void {
  const attributes: Attributes = {
    [Attr.sessionId]: a.sessionId,
    [Attr.executionId]: a.executionId,
    [Attr.waitKind]: a.kind,
    [Attr.waitName]: a.name,
  };
  if (a.tool) attributes[Attr.toolName] = a.tool;
  tracer().startSpan(`sessiond.wait ${a.kind}`, { attributes }, trace.setSpan(context.active(), turn)).end();
}

/** The recovery of an execution whose owner is gone (the sweep): a root span of its own. */
export function startRecoverSpan(sessionId: string): Span {
  return tracer().startSpan('sessiond.recover', { attributes: { [Attr.sessionId]: sessionId } });
}

/** Says on a sessiond span what its append did: the execution, the sequence, anything else. */
export function appended(span: Span, attributes: Attributes): void {
  span.setAttributes(attributes);
}

/** Marks a span failed with `error` (its message and type). */
export function failed(span: Span, error: unknown): void {
  const type = (error as { code?: unknown })?.code;
  span.setAttribute(Attr.errorType, typeof type === 'string' ? type : error instanceof Error ? error.name : 'unknown');
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** Runs `fn` with `span` as the active span (a registered context manager carries it into the runner's own calls). */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * A W3C `traceparent` (`00-<trace id>-<parent id>-<flags>`) as a remote span context; anything
 * else given is ignored (never an error to the caller) and counted (`sessiond_traceparent_invalid_total`).
 */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const m = typeof value === 'string' ? TRACEPARENT.exec(value.trim()) : null;
  const [, version, traceId, spanId, flags, rest] = m ?? [];
  const valid = m !== null && version !== 'ff' && !(version === '00' && rest !== undefined) && !/^0+$/.test(traceId!) && !/^0+$/.test(spanId!);
  if (!valid) {
    traceCounts.invalidTraceparent++;
    return undefined;
  }
  return { traceId: traceId!, spanId: spanId!, traceFlags: Number.parseInt(flags!, 16) & 1, isRemote: true };
}

/** The `traceparent` of a span (W3C, version 00): what is stored with an input or passed on. */
export function traceparentOf(span: Span): string {
  const c = span.spanContext();
  return `00-${c.traceId}-${c.spanId}-0${c.traceFlags & 1}`;
}
