/**
 * Tenants' budgets in the SQLite file every worker of an embedded deployment shares: a row of
 * `tenant_budgets` (migration 016) per tenant, changed in an IMMEDIATE transaction, so processes on
 * one file serialize on SQLite's write lock and none loses another's count.
 */
import type Database from 'better-sqlite3';
import { type Clock, systemClock } from '../clock.ts';
import type { TenantBudget } from './tenant.ts';
import { decodeTenantBudget, encodeTenantBudget, type TenantBudgetStore } from './tenant-store.ts';

export function sqliteTenantBudgetStore(db: Database.Database, clock: Clock = systemClock): TenantBudgetStore {
  const select = db.prepare('SELECT budget FROM tenant_budgets WHERE tenant = ?').pluck();
  const all = db.prepare('SELECT tenant, budget FROM tenant_budgets ORDER BY tenant');
  const upsert = db.prepare(
    'INSERT INTO tenant_budgets (tenant, budget, time_updated) VALUES (?, ?, ?) ON CONFLICT (tenant) DO UPDATE SET budget = excluded.budget, time_updated = excluded.time_updated',
  );
  const remove = db.prepare('DELETE FROM tenant_budgets WHERE tenant = ?');
  const where = (tenant: string) => `row ${JSON.stringify(tenant)} of table tenant_budgets`;
  const read = (tenant: string): TenantBudget | null => {
    const text = select.get(tenant) as string | undefined;
    return text === undefined ? null : decodeTenantBudget(text, where(tenant));
  };
  let closed = false;
  return {
    read: async (tenant) => read(tenant),
    list: async () => {
      const rows = all.all() as { tenant: string; budget: string }[];
      return new Map(rows.map((r) => [r.tenant, decodeTenantBudget(r.budget, where(r.tenant))]));
    },
    update: async (tenant, change) => {
      if (closed) throw new Error('The tenant budget store is closed.');
      const run = db.transaction(() => {
        const before = read(tenant);
        const after = change(before);
        if (after === before) return after;
        if (after === null) remove.run(tenant);
        else upsert.run(tenant, encodeTenantBudget(after), clock.now());
        return after;
      });
      return run.immediate();
    },
    close: async () => {
      closed = true;
    },
  };
}
