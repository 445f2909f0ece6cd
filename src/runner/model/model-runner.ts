/**
 * A runner over any AI SDK `LanguageModel` (`openaiRunner`'s OpenAI-compatible one, or another
 * provider's): each turn runs model calls and tool calls until the model stops asking for tools, with
 * retries, compaction, continuations and approvals (why: docs/model-runner.md#design-notes).
 */
import { generateText, streamText, type LanguageModel, type LanguageModelUsage, type ModelMessage } from 'ai';
import type { RecordedError, Usage } from '../../events/catalog.ts';
import {
  SessiondError,
  ErrorCode,
  hasErrorCode,
  ModelRequestError,
  isSessiondError,
  StepLimitError,
  ToolInputError,
  type WaitingError,
  recordedError,
} from '../../errors.ts';
import type { RunContext, Runner } from '../types.ts';
import type { TranscriptItem, TranscriptPart } from '../../events/transcript.ts';
import { sleep } from '../../clock.ts';
import { partsWithBytes, withBlobBytes } from './blob-parts.ts';
import { SEND_REASONING, assistantMessages, estimateTokens, toModelMessages, userMessage, type SendReasoning } from './messages.ts';
import { backoff, classify, parseRetryPolicy, type Failure, type RetryPolicy } from './retry.ts';
import { checkTools, parseToolInput, sdkTools, type ToolRegistry } from './tools.ts';
import { toolSlots, type ToolSlots } from './tool-slots.ts';
import { genAiInput } from './genai-input.ts';
import { withMcpTools } from '../mcp/with-mcp.ts';
import { sessionToolSpec } from './session-tools.ts';
import { createHash } from 'node:crypto';
import type { McpServers } from '../mcp/servers.ts';

export interface ModelRunnerOptions {
  model: LanguageModel;
  /** The provider the deployment's limits on model calls name (`providers` in a limits file); default the model's provider id. `openaiRunner` gives its base URL. */
  provider?: string;
  tools?: ToolRegistry;
  /** MCP servers whose tools join `tools` (`mcpServers(loadMcpConfig(file))`; the caller closes them). */
  mcp?: McpServers;
  /** A system prompt sent first on every request. */
  system?: string;
  /** Model calls per turn at most (default 8): the turn ends after them even if the model wants more tools. */
  maxSteps?: number;
  /** Tool calls of one model response running at once, at most (default 8). */
  maxParallelTools?: number;
  /**
   * Which recorded reasoning goes back to the model (as the provider's `reasoning_content`):
   * `never` (the default), `within-turn` (the steps since the person's last prompt: thinking modes
   * with tools, e.g. DeepSeek's and Kimi's, refuse a tool loop without it) or `always`.
   */
  sendReasoning?: SendReasoning;
  retry?: Partial<RetryPolicy>;
  /** The model's context window in tokens: a request estimated beyond it is compacted first (default: only on the server's overflow error). */
  contextWindow?: number;
  maxOutputTokens?: number;
  temperature?: number;
  /** Jitter source (tests make it deterministic). */
  random?: () => number;
}

export const DEFAULT_MAX_STEPS = 8;
export const DEFAULT_MAX_PARALLEL_TOOLS = 8;
/** Compactions per step at most: a conversation that still overflows after them fails the step. */
const MAX_COMPACTIONS_PER_STEP = 2;
export const SUMMARIZE_PROMPT =
  "Summarize the conversation above for yourself, to continue it later without it: the user's goals, the facts and decisions so far, tool results that matter, and what is left to do. Answer with the summary only.";

interface StepOutput {
  text: string;
  reasoning: string;
  calls: { callId: string; name: string; input: unknown; error?: string }[];
  finish: string;
  usage: Usage | undefined;
}

export function modelRunner(options: ModelRunnerOptions): Runner {
  if (options.mcp) {
    const { mcp, ...rest } = options;
    const local = checkTools(rest.tools ?? {});
    modelRunner(rest); // the options checked now, not at the first turn
    return withMcpTools(mcp, local, (tools) => modelRunner({ ...rest, tools }));
  }
  const tools = checkTools(options.tools ?? {});
  const toolSet = sdkTools(tools);
  const hasTools = Object.keys(tools).length > 0;
  const policy = parseRetryPolicy(options.retry);
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  if (!Number.isInteger(maxSteps) || maxSteps < 1)
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid maxSteps ${String(maxSteps)}: use a whole number of model calls >= 1 (default ${DEFAULT_MAX_STEPS}).`,
    );
  const parallel = options.maxParallelTools ?? DEFAULT_MAX_PARALLEL_TOOLS;
  if (!Number.isInteger(parallel) || parallel < 1)
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid maxParallelTools ${String(parallel)}: use a whole number of tool calls >= 1 (default ${DEFAULT_MAX_PARALLEL_TOOLS}; 1 runs them one at a time).`,
    );
  const sendReasoning = options.sendReasoning ?? 'never';
  if (!SEND_REASONING.includes(sendReasoning))
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid sendReasoning ${JSON.stringify(sendReasoning)}: use ${SEND_REASONING.join(', ')}.`);
  /** The conversation as the model's messages, blob parts read in (src/runner/model/blob-parts.ts). */
  const history = async (ctx: RunContext, items: readonly TranscriptItem[]) => toModelMessages(await withBlobBytes(items, ctx), sendReasoning);
  const window = options.contextWindow;
  if (window !== undefined && (!Number.isInteger(window) || window < 1))
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid contextWindow ${String(window)}: use the model's context window in tokens.`);
  const random = options.random ?? Math.random;
  const call = callName(options.model, options.provider);
  /** The model's id: what a price table names (a call's cost is recorded with its usage). */
  const modelId = call.model;
  const common = {
    model: options.model,
    maxRetries: 0,
    ...(options.system ? { system: options.system } : {}),
    ...(options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
  };

  /**
   * Runs `attempt` until it succeeds, retrying what may be retried; each request waits for room under
   * the deployment's limits (`ctx.modelCall`), then phase `unknown` before it goes out.
   */
  const withRetries = async <T>(ctx: RunContext, messageId: string, attempt: () => Promise<T>, sent?: () => ModelMessage[]): Promise<T> => {
    for (let n = 1; ; n++) {
      const slot = await ctx.modelCall(sent ? { ...call, input: () => genAiInput(sent(), options.system) } : call);
      let failure: Failure;
      try {
        await ctx.phase('unknown');
        return await attempt();
      } catch (err) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        if (isSessiondError(err)) throw err; // the turn's own write failed, not the request
        failure = classify(err, ctx.clock.now());
        if (failure.kind === 'retry' && failure.status === 429) await slot.throttled(failure.retryAfterMs);
      } finally {
        await slot.release();
      }
      if (failure.kind !== 'retry') throw new ModelRequestError(failure, n);
      const delay = backoff(policy, n, failure, random);
      if (delay === undefined) throw new ModelRequestError(failure, n);
      ctx.retrying(messageId, n, delay, {
        type: 'model_request',
        name: failure.status === undefined ? 'NetworkError' : `HTTP ${failure.status}`,
        message: failure.message,
      });
      await sleep(ctx.clock, delay, ctx.signal); // a cancel or a lost claim ends the wait at once
      ctx.signal.throwIfAborted();
    }
  };

  /** One streamed request: deltas go out live as they arrive. */
  const stream = async (ctx: RunContext, messageId: string, messages: ModelMessage[]): Promise<StepOutput> => {
    const out: StepOutput = { text: '', reasoning: '', calls: [], finish: 'stop', usage: undefined };
    const { textPart, reasoningPart } = partIds(messageId);
    // an HTTP error arrives as an `error` part; a stream cut throws from the loop (an APICallError, retryable)
    const result = streamText({ ...common, messages, ...(hasTools ? { tools: toolSet } : {}), abortSignal: ctx.signal, onError: () => {} });
    for await (const part of result.fullStream) {
      switch (part.type) {
        case 'text-delta':
          out.text += part.text;
          ctx.delta(messageId, textPart, part.text);
          break;
        case 'reasoning-delta':
          out.reasoning += part.text;
          ctx.delta(messageId, reasoningPart, part.text, 'reasoning');
          break;
        case 'tool-call':
          out.calls.push({
            callId: part.toolCallId,
            name: part.toolName,
            input: part.input,
            ...('invalid' in part && part.invalid
              ? { error: `invalid input for ${part.toolName}: ${String((part as { error?: unknown }).error ?? "it does not match the tool's schema")}` }
              : {}),
          });
          break;
        case 'tool-error': {
          // an invalid call comes as a tool-call (marked invalid) and then this
          const error = `invalid call of ${part.toolName}: ${part.error instanceof Error ? part.error.message : String(part.error)}`;
          const known = out.calls.find((c) => c.callId === part.toolCallId);
          if (known) known.error = error;
          else out.calls.push({ callId: part.toolCallId, name: part.toolName, input: part.input, error });
          break;
        }
        case 'finish-step':
          out.finish = part.finishReason;
          out.usage = usageOf(part.usage);
          break;
        case 'error':
          throw part.error;
        case 'abort':
          throw ctx.signal.aborted ? ctx.signal.reason : new Error('the model stream was aborted');
        default:
          break;
      }
    }
    return out;
  };

  /** Summarizes everything but this turn's prompts with the model; the transcript then reads [summary, prompts]. */
  const compact = async (ctx: RunContext, messageId: string, reason: string): Promise<ModelMessage[]> => {
    const items = await ctx.history();
    const olderItems = items.filter((i) => !(i.type === 'user' && i.executionId === ctx.executionId));
    if (olderItems.length === 0) {
      throw new ModelRequestError(
        { kind: 'fatal', status: undefined, message: `the context overflows with this turn's prompt alone (${reason}); nothing older to compact` },
        1,
      );
    }
    const older = toModelMessages(await withBlobBytes(olderItems, ctx));
    await ctx.compact(reason, async () => {
      const r = await withRetries(ctx, messageId, () =>
        generateText({ ...common, messages: [...older, { role: 'user', content: SUMMARIZE_PROMPT }], abortSignal: ctx.signal }),
      );
      const usage = usageOf(r.usage);
      return { summary: r.text, model: modelId, ...(usage ? { usage } : {}) };
    });
    return history(ctx, await ctx.history());
  };

  return async (ctx) => {
    const slots = toolSlots(parallel); // one bound per turn
    const items = await ctx.history();
    let messages = await history(ctx, items);
    const answered = await childAnswers(ctx);
    const approved = await runApprovedCalls(ctx, tools, slots);
    if ((await retryDurableCalls(ctx, tools, items, slots)) || approved || answered) messages = await history(ctx, await ctx.history());
    for (let step = 0, compactions = 0; step < maxSteps; ) {
      const { messageId, steered } = await ctx.startStep();
      for (const s of steered) messages.push(userMessage({ text: s.prompt, parts: await partsWithBytes(s.parts, ctx) }));
      let output: StepOutput;
      try {
        if (window !== undefined && estimateTokens(messages) > window) {
          throw new ModelRequestError(
            { kind: 'overflow', message: `the conversation is estimated at ${estimateTokens(messages)} tokens, beyond the context window of ${window}` },
            0,
          );
        }
        output = await withRetries(
          ctx,
          messageId,
          () => stream(ctx, messageId, messages),
          () => messages,
        );
      } catch (err) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        if (!(err instanceof ModelRequestError)) throw err;
        const error: RecordedError = { type: err.failure.kind === 'overflow' ? 'context_overflow' : 'model_error', name: err.name, message: err.message };
        await ctx.failStep(messageId, error);
        if (err.failure.kind !== 'overflow' || compactions >= MAX_COMPACTIONS_PER_STEP) throw err;
        compactions++;
        messages = await compact(ctx, messageId, err.failure.message);
        continue; // the interrupted step runs again on the compacted conversation
      }
      const { textPart, reasoningPart } = partIds(messageId);
      if (output.reasoning) await ctx.reasoning(messageId, output.reasoning, reasoningPart);
      if (output.text) await ctx.text(messageId, output.text, textPart);
      const parts: TranscriptPart[] = [
        ...(output.reasoning ? [{ type: 'reasoning' as const, partId: reasoningPart, text: output.reasoning }] : []),
        ...(output.text ? [{ type: 'text' as const, partId: textPart, text: output.text }] : []),
      ];
      // every call recorded in the model's order in one append (a gated one as a wait), then the others run at once
      const asks = output.calls.map((call) => gated(tools, call));
      const delegated = output.calls.map((call) => delegates(tools, call));
      const asked = asks.includes(true);
      const results: (TranscriptPart | undefined)[] = await Promise.all(
        output.calls.map((call, i) =>
          delegated[i] ? undefined : asks[i] ? askApproval(ctx, tools, messageId, call) : runCall(ctx, tools, slots, messageId, call),
        ),
      );
      // session tool calls: each admits into its child (recorded as the call); the turn waits for their answers, holding nothing
      const delegation = delegated.includes(true)
        ? await delegate(
            ctx,
            tools,
            messageId,
            output.calls.map((call, i) =>
              delegated[i] ? { ...call, callId: safeCallId(call.callId), wait: sessionCallName(messageId, safeCallId(call.callId)) } : undefined,
            ),
          )
        : undefined;
      await ctx.endStep(messageId, output.finish, output.usage, modelId);
      if (delegation?.waiting) throw delegation.waiting; // the turn resumes with the children's answers
      for (const [i, part] of delegation?.refused ?? []) results[i] = part;
      step++;
      compactions = 0;
      parts.push(...(results as TranscriptPart[]));
      // a call waits for a person: the turn ends its execution here and resumes with the decision
      if (output.calls.length === 0 || asked) return;
      messages.push(...assistantMessages(parts, sendReasoning !== 'never')); // as the transcript will read this step
    }
    // the model still called tools after its last allowed call: the turn says so (settles failed, step_limit)
    throw new StepLimitError(maxSteps);
  };
}

/** Runs one tool call through the journal; an unknown tool, bad input or a throw becomes an error result the model sees. */
async function runCall(ctx: RunContext, tools: ToolRegistry, slots: ToolSlots, messageId: string, call: StepOutput['calls'][number]): Promise<TranscriptPart> {
  const tool = tools[call.name];
  const callId = safeCallId(call.callId);
  const part = { type: 'tool' as const, callId, name: call.name, input: call.input ?? null, durable: tool?.durable === true };
  try {
    const output = await ctx.tool(messageId, { name: call.name, input: part.input, durable: part.durable, callId }, async (tc) => {
      if (call.error) throw new ToolInputError(call.error);
      if (!tool) throw new ToolInputError(`no tool named ${call.name}: the tools are ${Object.keys(tools).join(', ') || 'none'}`);
      const parsed = parseToolInput(tool, call.input);
      if (!parsed.success) throw new ToolInputError(`invalid input for ${call.name}: ${parsed.message}`);
      return await slots.run(tc.signal, async () => await tool.execute(parsed.data, tc));
    });
    return { ...part, state: 'succeeded', output };
  } catch (err) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    return { ...part, state: 'failed', error: recordedError(err, 'tool') };
  }
}

/** Whether a call is a session tool's (a valid call only: a bad one fails as usual). */
function delegates(tools: ToolRegistry, call: StepOutput['calls'][number]): boolean {
  const tool = tools[call.name];
  return sessionToolSpec(tool) !== undefined && !call.error && parseToolInput(tool!, call.input).success;
}

/** A session tool call to admit: the call as the step records it, and its wait's name (what its child input id derives from). */
interface Delegation {
  callId: string;
  name: string;
  input: unknown;
  wait: string;
}

/**
 * Admits each session tool call of a step into its child (`ctx.callSession`, the call journaled
 * first): when any waits, `waiting` is the `WaitingError` to end the execution with (after the step
 * ends). A call refused (a cycle, a bad session id) is recorded as the call's failure: returned by index.
 */
async function delegate(
  ctx: RunContext,
  tools: ToolRegistry,
  messageId: string,
  calls: (Delegation | undefined)[],
): Promise<{ refused: Map<number, TranscriptPart>; waiting?: WaitingError }> {
  const refused = new Map<number, TranscriptPart>();
  let waiting: WaitingError | undefined;
  await Promise.all(
    calls.map(async (call, i) => {
      if (!call) return;
      const tool = tools[call.name]!;
      const spec = sessionToolSpec(tool)!;
      const input = parseToolInput(tool, call.input);
      const data = input.success ? input.data : call.input;
      const part = { type: 'tool' as const, callId: call.callId, name: call.name, input: call.input ?? null, durable: true };
      try {
        const sessionId = typeof spec.sessionId === 'function' ? spec.sessionId(data, ctx) : spec.sessionId;
        await ctx.callSession(call.wait, {
          sessionId,
          prompt: spec.prompt ? spec.prompt(data) : defaultPrompt(data),
          ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
          ...(spec.tags ? { tags: spec.tags } : {}),
          asToolCall: { messageId, callId: call.callId, tool: call.name, input: part.input },
        });
      } catch (err) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        if (hasErrorCode(err, ErrorCode.Waiting)) waiting = err as WaitingError;
        else refused.set(i, { ...part, state: 'failed', error: recordedError(err, 'tool') });
      }
    }),
  );
  return { refused, ...(waiting ? { waiting } : {}) };
}

/** A session tool call's wait name: unique in the turn (a step's message id and the model's call id). */
function sessionCallName(messageId: string, callId: string): string {
  return `tool:${createHash('sha256').update(`${messageId}\n${callId}`).digest('hex').slice(0, 32)}`;
}

/** A child's prompt when the tool gives no `prompt`: a string input, an input's `prompt` string, or the input as JSON. */
function defaultPrompt(input: unknown): string {
  if (typeof input === 'string') return input;
  const p = (input as { prompt?: unknown } | null)?.prompt;
  return typeof p === 'string' ? p : JSON.stringify(input);
}

/** The answers of the session tool calls whose children ended while the turn waited, recorded as the calls' results (once); true when there were any. */
async function childAnswers(ctx: RunContext): Promise<boolean> {
  const ended = ctx.waits.filter(
    (w) =>
      w.kind === 'session' && w.callId !== null && w.messageId !== null && w.child && !w.started && (w.outcome === 'delivered' || w.outcome === 'timed_out'),
  );
  for (const w of ended)
    await ctx.callSession(w.name, {
      sessionId: w.child!.sessionId,
      prompt: '',
      asToolCall: { messageId: w.messageId!, callId: w.callId!, tool: w.tool ?? 'session', input: w.input ?? null },
    });
  return ended.length > 0;
}

/** A recorded call's input checked again before it runs (approved, or retried by a continuation). */
function checkedInput(tool: ToolRegistry[string], name: string, input: unknown): unknown {
  const parsed = parseToolInput(tool, input);
  if (!parsed.success) throw new ToolInputError(`invalid input for ${name}: ${parsed.message}`);
  return parsed.data;
}

/** Whether a call waits for a person: its tool needs approval for this input (a valid call only: a bad one fails as usual). */
function gated(tools: ToolRegistry, call: StepOutput['calls'][number]): boolean {
  const tool = tools[call.name];
  if (!tool?.needsApproval || call.error) return false;
  const parsed = parseToolInput(tool, call.input);
  return parsed.success && (typeof tool.needsApproval !== 'function' || tool.needsApproval(parsed.data));
}

/** Records a gated call: it waits for a person's decision. */
async function askApproval(ctx: RunContext, tools: ToolRegistry, messageId: string, call: StepOutput['calls'][number]): Promise<TranscriptPart> {
  const durable = tools[call.name]?.durable === true;
  const input = call.input ?? null;
  const callId = await ctx.requestApproval(messageId, { name: call.name, input, durable, callId: safeCallId(call.callId) });
  return { type: 'tool', callId, name: call.name, input, durable, state: 'awaiting_approval' };
}

/** The calls a person approved while the turn waited, run once each (in the step they were called in); true when there were any. */
async function runApprovedCalls(ctx: RunContext, tools: ToolRegistry, slots: ToolSlots): Promise<boolean> {
  const approved = ctx.waits.filter((w) => w.kind === 'approval' && w.outcome === 'approved' && !w.started && w.callId !== null);
  await Promise.all(
    approved.map((w) => {
      const tool = w.tool === null ? undefined : tools[w.tool];
      return ctx
        .runApproved(w.callId!, async (tc) => {
          if (!tool) throw new ToolInputError(`no tool named ${w.tool} here: the tools are ${Object.keys(tools).join(', ') || 'none'}`);
          const input = checkedInput(tool, w.tool!, w.input);
          return await slots.run(tc.signal, async () => await tool.execute(input, tc));
        })
        .catch(toolFailureOnly(ctx));
    }),
  );
  return approved.length > 0;
}

/** A tool's own failure is its recorded result; a stopped turn's is rethrown. */
const toolFailureOnly =
  (ctx: RunContext) =>
  (_err: unknown): void => {
    if (ctx.signal.aborted) throw ctx.signal.reason;
  };

/**
 * A continuation's durable calls, run again with their original keys in a step of their own; true
 * when there were any. A session tool call's key is its wait's name: called again under it, it
 * awaits the child its interrupted call admitted (the same child input: its prompt runs once), and
 * the turn waits for the answers.
 */
async function retryDurableCalls(ctx: RunContext, tools: ToolRegistry, items: readonly TranscriptItem[], slots: ToolSlots): Promise<boolean> {
  const retry = ctx.inputs.flatMap((i) => i.continues?.retryTools ?? []);
  if (retry.length === 0) return false;
  const { messageId } = await ctx.startStep();
  const awaited = retry.map((r) => {
    const original = findCall(items, r.messageId, r.callId);
    if (!original || !sessionToolSpec(tools[r.name])) return undefined;
    return { callId: safeCallId(`${r.callId}_retry`), name: r.name, input: original.input, wait: r.idempotencyKey };
  });
  const [delegation] = await Promise.all([
    awaited.some((a) => a !== undefined) ? delegate(ctx, tools, messageId, awaited) : undefined,
    ...retry.map((r, i) => {
      if (awaited[i]) return undefined;
      const original = findCall(items, r.messageId, r.callId);
      const tool = tools[r.name];
      return ctx
        .tool(
          messageId,
          { name: r.name, input: original?.input ?? null, durable: true, callId: safeCallId(`${r.callId}_retry`), idempotencyKey: r.idempotencyKey },
          async (tc) => {
            if (!tool || !original) throw new ToolInputError(`cannot retry ${r.name}: ${tool ? 'its call is not in the history' : 'no such tool here'}`);
            const input = checkedInput(tool, r.name, original.input);
            return await slots.run(tc.signal, async () => await tool.execute(input, tc));
          },
        )
        .catch(toolFailureOnly(ctx));
    }),
  ]);
  await ctx.endStep(messageId, 'tool-retry');
  if (delegation?.waiting) throw delegation.waiting; // the turn resumes with the children's answers
  return true;
}

function findCall(items: readonly TranscriptItem[], messageId: string, callId: string): { input: unknown } | undefined {
  for (const item of items) {
    if (item.type !== 'assistant' || item.messageId !== messageId) continue;
    for (const p of item.parts) if (p.type === 'tool' && p.callId === callId) return { input: p.input };
  }
  return undefined;
}

/** The ids of a step's text and reasoning parts (streamed under them, recorded under them). */
function partIds(messageId: string): { textPart: string; reasoningPart: string } {
  return { textPart: `prt_${messageId.slice(4)}_t`, reasoningPart: `prt_${messageId.slice(4)}_r` };
}

/** A call id as the log takes it (1 to 128 characters). */
function safeCallId(id: string): string {
  const trimmed = id.slice(0, 128);
  return trimmed.length > 0 ? trimmed : 'call';
}

/** What the limits on model calls know a request by: the provider (`options.provider`, else the model's) and the model's id. */
function callName(model: LanguageModel, provider: string | undefined): { provider: string; model: string } {
  if (typeof model === 'string') return { provider: provider ?? model.split('/')[0] ?? model, model };
  return { provider: provider ?? model.provider, model: model.modelId };
}

function usageOf(u: LanguageModelUsage | undefined): Usage | undefined {
  if (!u || (u.inputTokens === undefined && u.outputTokens === undefined)) return undefined;
  // a part the server did not report comes as 0 (or undefined) from the compatible provider: recorded only when above it
  const cached = u.inputTokenDetails?.cacheReadTokens ?? u.cachedInputTokens;
  const reasoning = u.outputTokenDetails?.reasoningTokens ?? u.reasoningTokens;
  return {
    inputTokens: u.inputTokens ?? 0,
    outputTokens: u.outputTokens ?? 0,
    ...(cached ? { cachedInputTokens: cached } : {}),
    ...(reasoning ? { reasoningTokens: reasoning } : {}),
  };
}
