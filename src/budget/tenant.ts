/**
 * A tenant's budget: limits on what all of its sessions spend together, and that spend, as one
 * small record per tenant in a store every worker shares (src/budget/tenant-store.ts). Pure.
 * Spend is counted from when the budget was set (or last reset): each model call adds its usage
 * once, under its message id, so a write retried after a lost answer never counts it twice.
 */
import type { BudgetChange, Usage } from '../events/catalog.ts';
import { budgetAfter, exceeded, roundUsd, tokensOf, type Exceeded, type Spend } from '../machines/budget-spend.ts';

/** The message ids of a tenant's latest counted calls kept, to know a retried count. */
export const COUNTED_KEPT = 256;

export interface TenantBudget {
  /** Tokens the tenant's sessions may spend together (null: no token limit). */
  tokens: number | null;
  /** US dollars they may spend together (null: no cost limit). */
  costUsd: number | null;
  /** What they spent since `since`. */
  spent: Spend;
  /** When counting started (the budget set first, or its latest reset), ms since the epoch. */
  since: number;
  /** The latest calls counted (message ids), newest last, at most COUNTED_KEPT. */
  counted: string[];
}

/** The budget after a change (`sessiond budget --tenant`); null when no limit is left (the tenant stops being counted). */
export function changeTenantBudget(budget: TenantBudget | null, change: BudgetChange, now: number): TenantBudget | null {
  const set = budgetAfter(budget, change);
  if (set.tokens === null && set.costUsd === null) return null;
  const fresh = budget === null || set.reset;
  return {
    tokens: set.tokens,
    costUsd: set.costUsd,
    spent: fresh ? { tokens: 0, costUsd: 0 } : budget.spent,
    since: fresh ? now : budget.since,
    counted: fresh ? [] : budget.counted,
  };
}

/** The budget with one model call's usage added (unchanged when it was counted already, or has no budget). */
export function countCall(budget: TenantBudget | null, callId: string, usage: Usage): TenantBudget | null {
  if (budget === null || budget.counted.includes(callId)) return budget;
  return {
    ...budget,
    spent: { tokens: budget.spent.tokens + tokensOf(usage), costUsd: roundUsd(budget.spent.costUsd + (usage.costUsd ?? 0)) },
    counted: [...budget.counted.slice(-(COUNTED_KEPT - 1)), callId],
  };
}

/** The tenant's budget passed, or undefined. */
export function tenantExceeded(tenant: string, budget: TenantBudget | null): Exceeded | undefined {
  if (budget === null) return undefined;
  const over = exceeded(budget, budget.spent);
  return over && { scope: 'tenant', tenant, ...over };
}
