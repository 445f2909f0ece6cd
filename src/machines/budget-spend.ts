/**
 * A session's budget and what it has spent, as data folded from its log, and the pure check a turn
 * runs before each model call. Tokens counted: input (cached included) plus output (reasoning
 * included), as the servers reported them; cost: the sum of the calls' `costUsd` (priced when they
 * ended, `sessiond start --prices`).
 */
import type { BudgetChange, Usage } from '../events/catalog.ts';

/** A session's limits and where its spend is counted from (the usage totals at its latest reset). */
export interface SessionBudget {
  /** Tokens the session may spend (null: no token limit). */
  tokens: number | null;
  /** US dollars the session may spend (null: no cost limit). */
  costUsd: number | null;
  /** The session's totals when the budget was last reset (spend is counted from there). */
  base: { tokens: number; costUsd: number };
}

/** What a session has spent against its budget (since its latest reset). */
export interface Spend {
  tokens: number;
  costUsd: number;
}

/** Tokens a usage counts: input (cached input is part of it) plus output (reasoning is part of it). */
export function tokensOf(u: Usage): number {
  return u.inputTokens + u.outputTokens;
}

/** Adds two usages (the optional parts present when either has them). */
export function addUsage(a: Usage, b: Usage): Usage {
  const sum = (k: 'cachedInputTokens' | 'reasoningTokens' | 'costUsd') => (a[k] === undefined && b[k] === undefined ? {} : { [k]: (a[k] ?? 0) + (b[k] ?? 0) });
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    ...sum('cachedInputTokens'),
    ...sum('reasoningTokens'),
    ...sum('costUsd'),
  };
}

/** The limits a change leaves (what `budget.set` records): a number sets a limit, null removes it, absent keeps it. */
export function budgetAfter(
  budget: { tokens: number | null; costUsd: number | null } | null,
  change: BudgetChange,
): { tokens: number | null; costUsd: number | null; reset: boolean } {
  return {
    tokens: change.tokens === undefined ? (budget?.tokens ?? null) : change.tokens,
    costUsd: change.costUsd === undefined ? (budget?.costUsd ?? null) : change.costUsd,
    reset: change.reset === true,
  };
}

/** A budget after a `budget.set` (given the session's usage totals at that event). Null when no limit is left and it was never reset. */
export function applyBudgetSet(
  budget: SessionBudget | null,
  set: { tokens: number | null; costUsd: number | null; reset: boolean },
  usage: Usage,
): SessionBudget | null {
  const base = set.reset ? { tokens: tokensOf(usage), costUsd: usage.costUsd ?? 0 } : (budget?.base ?? { tokens: 0, costUsd: 0 });
  if (set.tokens === null && set.costUsd === null && base.tokens === 0 && base.costUsd === 0) return null;
  return { tokens: set.tokens, costUsd: set.costUsd, base };
}

/** What a session has spent since its budget's latest reset, from its usage totals (plus `extra`: usage not yet in the log). */
export function spendOf(budget: SessionBudget | null, usage: Usage, extra?: Usage): Spend {
  const total = extra ? addUsage(usage, extra) : usage;
  const base = budget?.base ?? { tokens: 0, costUsd: 0 };
  return { tokens: tokensOf(total) - base.tokens, costUsd: roundUsd((total.costUsd ?? 0) - base.costUsd) };
}

/** A budget a turn may not pass: which one, its limit, and what was spent. */
export interface Exceeded {
  /** `session` or `tenant` (then `tenant` names it). */
  scope: 'session' | 'tenant';
  tenant?: string;
  kind: 'tokens' | 'cost';
  limit: number;
  spent: number;
}

/** Has this spend reached a limit (a limit is spent once spend >= limit)? The first one reached, tokens first. */
export function exceeded(limits: { tokens: number | null; costUsd: number | null }, spend: Spend): Pick<Exceeded, 'kind' | 'limit' | 'spent'> | undefined {
  if (limits.tokens !== null && spend.tokens >= limits.tokens) return { kind: 'tokens', limit: limits.tokens, spent: spend.tokens };
  if (limits.costUsd !== null && spend.costUsd >= limits.costUsd) return { kind: 'cost', limit: limits.costUsd, spent: spend.costUsd };
  return undefined;
}

/** Dollars kept to a millionth of a cent (sums of prices stay readable). */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e8) / 1e8;
}
