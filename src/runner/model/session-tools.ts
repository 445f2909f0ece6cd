/**
 * Session tools (`defineSessionTool`): a tool whose work is a turn of another session; the parent's
 * turn waits holding nothing and the child's answer is the call's result. Journaled before the child
 * is admitted (why: docs/model-runner.md, "Session tools through a crash").
 */
import type { z } from 'zod';
import type { Prompt } from '../../events/catalog.ts';
import { ErrorCode, SessiondError } from '../../errors.ts';
import type { Tags } from '../../events/tags.ts';
import type { RunContext } from '../types.ts';
import type { ModelTool } from './tools.ts';

/** What a session tool adds to a tool: the child session and the prompt it gets. */
export interface SessionToolSpec<I = unknown> {
  /** The child session that runs the call: a fixed id (one sub-agent with one history), or one per input or per parent. */
  sessionId: string | ((input: I, ctx: RunContext) => string);
  /** The child's prompt from the call's input (default: the input as JSON text). */
  prompt?: (input: I) => Prompt;
  /** End the wait after this many ms: the call fails `timed_out` (the child's turn goes on). */
  timeoutMs?: number;
  /** Tags for the child session (e.g. which sub-agent it is, for a runner that picks by session). */
  tags?: Tags;
}

export const SESSION_TOOL = Symbol.for('sessiond.sessionTool');

/** A tool whose calls run as turns of another session. */
export type SessionTool<I = unknown> = ModelTool<I, string> & { readonly [SESSION_TOOL]: SessionToolSpec<I> };

/**
 * Types a session tool from its schema: the model calls it like any tool; the child session's
 * answer (its turn's final text) is the result; a child's turn that failed, was cancelled or did
 * not answer within `timeoutMs` is the call's failure, saying so.
 */
export function defineSessionTool<S extends z.ZodType>(tool: {
  description: string;
  inputSchema: S;
  sessionId: string | ((input: z.output<S>, ctx: RunContext) => string);
  prompt?: (input: z.output<S>) => Prompt;
  timeoutMs?: number;
  tags?: Tags;
}): ModelTool {
  const { sessionId, prompt, timeoutMs, tags, ...rest } = tool;
  if (typeof sessionId !== 'string' && typeof sessionId !== 'function')
    throw new SessiondError(ErrorCode.InvalidOption, 'defineSessionTool: sessionId must be a session id or a function (input, ctx) => session id.');
  const spec: SessionToolSpec<z.output<S>> = {
    sessionId,
    ...(prompt ? { prompt } : {}),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(tags ? { tags } : {}),
  };
  return {
    ...rest,
    execute: () => {
      throw new SessiondError(ErrorCode.InvalidOption, 'A session tool runs through the model runner (ctx.callSession), not by execute().');
    },
    [SESSION_TOOL]: spec,
  } as unknown as ModelTool;
}

/** The session spec of a tool, when it is a session tool. */
export function sessionToolSpec(tool: ModelTool | undefined): SessionToolSpec | undefined {
  return (tool as Partial<SessionTool> | undefined)?.[SESSION_TOOL];
}
