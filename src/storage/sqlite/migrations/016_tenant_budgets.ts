import type { Migration } from '../migration.ts';

/**
 * Tenants' budgets (src/budget/tenant.ts): one row per tenant, its limits and spend as JSON,
 * written by every worker of the file in IMMEDIATE transactions. Not part of the log or the projection.
 */
export const migration016: Migration = {
  version: 16,
  name: 'tenant_budgets',
  up: `
    CREATE TABLE tenant_budgets (
      tenant       TEXT PRIMARY KEY,
      budget       TEXT NOT NULL,
      time_updated INTEGER NOT NULL
    );
  `,
};
