/**
 * Where tenants' budgets live: one small record per tenant, shared by every worker of a deployment
 * (a row of the SQLite file, or a key of a JetStream KV bucket). Every change goes through `update`,
 * atomically, so two workers counting calls of one tenant never lose one another's.
 */
import { CorruptDataError } from '../errors.ts';
import type { TenantBudget } from './tenant.ts';

export interface TenantBudgetStore {
  /** The tenant's budget (null: none set). */
  read(tenant: string): Promise<TenantBudget | null>;
  /** Every tenant's budget, by tenant name. */
  list(): Promise<Map<string, TenantBudget>>;
  /** Applies `change` atomically (again on a concurrent write) and returns the budget it left. */
  update(tenant: string, change: (budget: TenantBudget | null) => TenantBudget | null): Promise<TenantBudget | null>;
  close(): Promise<void>;
}

export function encodeTenantBudget(budget: TenantBudget): string {
  return JSON.stringify(budget);
}

/** The stored text as a budget, or CorruptDataError saying where and what to do. */
export function decodeTenantBudget(text: string, where: string): TenantBudget {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CorruptDataError(
      `${where} does not hold a tenant budget (not JSON: ${(err as Error).message}). Set the budget again: sessiond budget --tenant T --tokens N.`,
      {
        cause: err,
      },
    );
  }
  const b = json as Partial<TenantBudget> | null;
  const limit = (v: unknown) => v === null || (typeof v === 'number' && v >= 0);
  if (
    b === null ||
    typeof b !== 'object' ||
    !limit(b.tokens) ||
    !limit(b.costUsd) ||
    typeof b.spent?.tokens !== 'number' ||
    typeof b.spent.costUsd !== 'number' ||
    typeof b.since !== 'number' ||
    !Array.isArray(b.counted)
  )
    throw new CorruptDataError(
      `${where} does not hold a tenant budget (fields missing or of the wrong type). Set the budget again: sessiond budget --tenant T --tokens N.`,
    );
  return b as TenantBudget;
}
