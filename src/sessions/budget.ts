/**
 * A session's budget, shown and changed (`sessions.budget`, `sessiond budget`): a change is one
 * `budget.set` event (the admin's or a trusted caller's; the gateway asks for `admin`). A request
 * with nothing to change only shows it.
 */
import { InvalidInputError, isRefusal } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { BudgetChange, Usage } from '../events/catalog.ts';
import type { CommandHandler } from '../execution/command-handler.ts';
import { budgetView, type BudgetView } from '../machines/budget-view.ts';
import { spendOf } from '../machines/budget-spend.ts';
import { unknownSession } from './unknown-session.ts';
import { actorOf, type ActorOptions } from './actor.ts';
import type { SessionBudget } from '../machines/budget-spend.ts';

/** A change to a session's budget: a number sets a limit, null removes it; `reset` counts spend from now on. Nothing given: only shows it. */
export interface BudgetRequest extends ActorOptions {
  /** Tokens (input + output) the session may spend; null removes the limit. */
  tokens?: number | null;
  /** US dollars the session may spend (needs a price table on the workers: `--prices`); null removes the limit. */
  costUsd?: number | null;
  /** Count the session's spend from now on. */
  reset?: boolean;
}

export interface BudgetResult {
  sessionId: string;
  /** The budget after the request (null: none set). */
  budget: BudgetView | null;
  /** Spend since the latest reset (all of the session's usage when it has no budget). */
  spent: BudgetView['spent'];
  /** The session's usage totals, every model call. */
  usage: Usage;
  /** A `budget.set` was written (false: the request only showed it). */
  changed: boolean;
  /** Seq of the `budget.set` event, when one was written. */
  seq?: number;
}

/** The request checked, as the event's change (undefined: nothing to change). Bad values are refused saying what to give. */
export function checkBudgetRequest(request: BudgetRequest | undefined): BudgetChange | undefined {
  const r = request ?? {};
  if (typeof r !== 'object' || r === null) throw new InvalidInputError('Invalid budget request: give an object such as { "tokens": 100000 }.');
  const unknown = Object.keys(r).find((k) => !['tokens', 'costUsd', 'reset', 'actor'].includes(k));
  if (unknown !== undefined) throw new InvalidInputError(`Invalid budget request: unknown key "${unknown}" (known: tokens, costUsd, reset, actor).`);
  const { tokens, costUsd, reset } = r;
  if (tokens !== undefined && tokens !== null && (typeof tokens !== 'number' || !Number.isSafeInteger(tokens) || tokens < 0))
    throw new InvalidInputError(`Invalid budget: tokens must be a whole number >= 0 (or null to remove the limit), got ${JSON.stringify(tokens)}.`);
  if (costUsd !== undefined && costUsd !== null && (typeof costUsd !== 'number' || !Number.isFinite(costUsd) || costUsd < 0))
    throw new InvalidInputError(`Invalid budget: costUsd must be a number of US dollars >= 0 (or null to remove the limit), got ${JSON.stringify(costUsd)}.`);
  if (reset !== undefined && typeof reset !== 'boolean')
    throw new InvalidInputError(`Invalid budget: reset must be true or false, got ${JSON.stringify(reset)}.`);
  if (tokens === undefined && costUsd === undefined && reset !== true) return undefined;
  return { ...(tokens === undefined ? {} : { tokens }), ...(costUsd === undefined ? {} : { costUsd }), ...(reset ? { reset: true } : {}) };
}

export async function sessionBudget(handler: CommandHandler, sessionId: string, request?: BudgetRequest): Promise<BudgetResult> {
  validateId(sessionId, 'session id');
  const change = checkBudgetRequest(request);
  const by = actorOf(request?.actor);
  if (change === undefined) {
    const ctx = (await handler.load(sessionId)).context;
    if (ctx.seq === 0) throw unknownSession(sessionId, 'budget');
    return resultOf(sessionId, ctx, false);
  }
  try {
    const { events, snapshot } = await handler.execute(sessionId, (now) => ({ type: 'budget', now, change, ...by }));
    return { ...resultOf(sessionId, snapshot.context, true), seq: events[0]!.seq };
  } catch (err) {
    if (isRefusal(err, 'no_events')) throw unknownSession(sessionId, 'budget');
    throw err;
  }
}

function resultOf(sessionId: string, ctx: { budget?: SessionBudget | null; usage: Usage }, changed: boolean): BudgetResult {
  return { sessionId, budget: budgetView(ctx.budget, ctx.usage), spent: spendOf(ctx.budget ?? null, ctx.usage), usage: ctx.usage, changed };
}
