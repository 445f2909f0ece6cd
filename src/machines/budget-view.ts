/**
 * What a session's budget looks like to those who ask (status, `sessiond budget`, the inspector):
 * its limits and what it has spent since its latest reset. Types only outside `budgetView`, so the
 * NATS client can name them.
 */
import type { Usage } from '../events/catalog.ts';
import { spendOf, type SessionBudget, type Spend } from './budget-spend.ts';

export interface BudgetView {
  /** Tokens the session may spend (null: no token limit). */
  tokens: number | null;
  /** US dollars the session may spend (null: no cost limit). */
  costUsd: number | null;
  /** Spent since the budget's latest reset: tokens (input + output) and US dollars (priced calls only). */
  spent: Spend;
}

/** The budget of a session, null when none was ever set. */
export function budgetView(budget: SessionBudget | null | undefined, usage: Usage): BudgetView | null {
  if (!budget) return null;
  return { tokens: budget.tokens, costUsd: budget.costUsd, spent: spendOf(budget, usage) };
}
