/**
 * A tenant's budget, shown and changed (`engine.tenantBudget`, `sessiond budget --tenant T`): what
 * all of the tenant's sessions may spend together, and what they spent since it was set or reset.
 * A request with nothing to change only shows it.
 */
import type { Clock } from '../clock.ts';
import type { Spend } from '../machines/budget-spend.ts';
import { changeTenantBudget, type TenantBudget } from '../budget/tenant.ts';
import type { TenantBudgetStore } from '../budget/tenant-store.ts';
import { checkBudgetRequest, type BudgetRequest } from './budget.ts';
import { checkOwner } from './owner.ts';

/** A change to a tenant's budget: a number sets a limit, null removes it (both removed: no budget, nothing counted); `reset` counts from now on. */
export type TenantBudgetRequest = Omit<BudgetRequest, 'actor'>;

export interface TenantBudgetView {
  /** Tokens (input + output) the tenant's sessions may spend together (null: no token limit). */
  tokens: number | null;
  /** US dollars they may spend together (null: no cost limit). */
  costUsd: number | null;
  /** What they spent since `since`. */
  spent: Spend;
  /** When counting started: the budget set first, or its latest reset (ms since the epoch). */
  since: number;
}

export interface TenantBudgetResult {
  tenant: string;
  /** The budget after the request (null: none; the tenant's calls are not counted). */
  budget: TenantBudgetView | null;
  /** The request changed the stored budget. */
  changed: boolean;
}

export const tenantBudgetView = (b: TenantBudget | null): TenantBudgetView | null =>
  b && { tokens: b.tokens, costUsd: b.costUsd, spent: b.spent, since: b.since };

export async function tenantBudget(store: TenantBudgetStore, clock: Clock, tenant: string, request?: TenantBudgetRequest): Promise<TenantBudgetResult> {
  checkOwner(tenant);
  const change = checkBudgetRequest(request);
  if (change === undefined) return { tenant, budget: tenantBudgetView(await store.read(tenant)), changed: false };
  let changed = false;
  const after = await store.update(tenant, (b) => {
    const next = changeTenantBudget(b, change, clock.now());
    changed = JSON.stringify(next) !== JSON.stringify(b);
    return changed ? next : b;
  });
  return { tenant, budget: tenantBudgetView(after), changed };
}

/** Every tenant with a budget, by name. */
export async function tenantBudgets(store: TenantBudgetStore): Promise<TenantBudgetResult[]> {
  return [...(await store.list())].map(([tenant, b]) => ({ tenant, budget: tenantBudgetView(b), changed: false }));
}

/** A status with its tenant's budget added, when the session has a tenant with a budget in `store`. */
export async function withTenantBudget<S extends { ownedBy: string | null }>(
  status: S,
  store: TenantBudgetStore | undefined,
): Promise<S & { tenantBudget?: TenantBudgetView }> {
  if (!store || status.ownedBy === null) return status;
  const budget = tenantBudgetView(await store.read(status.ownedBy));
  return budget ? { ...status, tenantBudget: budget } : status;
}
