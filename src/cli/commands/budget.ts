/**
 * `sessiond budget SESSION | --tenant T | --tenants`: a session's or a tenant's budget and spend, in
 * plain words or `--json`; `--tokens N`, `--cost USD`, `--reset` and `--clear` change it first (as
 * the admin: embedded with `--db`; on NATS a session's as a trusted user, a tenant's as the admin,
 * who writes the KV bucket the workers read).
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { UsageError } from '../../errors.ts';
import { validateId } from '../../ids.ts';
import type { BudgetRequest, BudgetResult } from '../../sessions/budget.ts';
import type { CliContext } from '../context.ts';
import { isoTime, systemClock } from '../../clock.ts';
import { connectNats } from '../../nats/connection.ts';
import { natsConnectionOptions } from '../nats-options.ts';
import { openDatabase } from '../../storage/sqlite/database.ts';
import { migrate } from '../../storage/sqlite/migrate.ts';
import { sqliteTenantBudgetStore } from '../../budget/sqlite-tenant-budget-store.ts';
import { jetstreamTenantBudgetStore } from '../../budget/kv-tenant-budget-store.ts';
import type { TenantBudgetStore } from '../../budget/tenant-store.ts';
import { tenantBudget, tenantBudgets, type TenantBudgetResult } from '../../sessions/tenant-budget.ts';
import { addLogOptions, openExisting, type LogOptions } from '../log-options.ts';
import { withSessions } from '../open-sessions.ts';
import { nonNegativeInt } from '../options.ts';
import { BY_OPTION, whoAmI } from '../who.ts';

interface BudgetOptions extends LogOptions {
  tenant?: string;
  tenants?: boolean;
  tokens?: number;
  cost?: number;
  reset?: boolean;
  clear?: boolean;
  json?: boolean;
  by?: string;
}

/** A cost in US dollars >= 0 (`0.5`, `12`). */
function usd(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`--cost must be US dollars >= 0, e.g. 2.50 (got "${value}").`);
  return n;
}

/** What the options ask to change (undefined fields: keep). */
export function budgetRequestOf(opts: BudgetOptions): BudgetRequest {
  if (opts.clear && (opts.tokens !== undefined || opts.cost !== undefined))
    throw new UsageError('--clear removes both limits: give it alone (with --reset if you like), or give --tokens / --cost without it.');
  return {
    ...(opts.clear ? { tokens: null, costUsd: null } : {}),
    ...(opts.tokens === undefined ? {} : { tokens: opts.tokens }),
    ...(opts.cost === undefined ? {} : { costUsd: opts.cost }),
    ...(opts.reset ? { reset: true } : {}),
  };
}

/** The budget in plain words. */
export function describeBudget(r: BudgetResult): string[] {
  const lines: string[] = [];
  if (r.changed) lines.push(`budget of ${r.sessionId} set${r.seq === undefined ? '' : ` at sequence ${r.seq}`}`);
  const b = r.budget;
  if (b === null || (b.tokens === null && b.costUsd === null)) lines.push(`${r.sessionId}: no budget (sessiond budget ${r.sessionId} --tokens N sets one)`);
  else {
    const parts = [
      ...(b.tokens === null ? [] : [`${b.spent.tokens} of ${b.tokens} tokens`]),
      ...(b.costUsd === null ? [] : [`$${b.spent.costUsd} of $${b.costUsd}`]),
    ];
    const spent = (b.tokens !== null && b.spent.tokens >= b.tokens) || (b.costUsd !== null && b.spent.costUsd >= b.costUsd);
    lines.push(`${r.sessionId}: spent ${parts.join(', ')}${spent ? ' — spent: no model call until it is raised or reset' : ''}`);
  }
  const u = r.usage;
  lines.push(
    `  usage  ${u.inputTokens} in${u.cachedInputTokens ? ` (${u.cachedInputTokens} cached)` : ''}, ${u.outputTokens} out${u.reasoningTokens ? ` (${u.reasoningTokens} reasoning)` : ''}${u.costUsd === undefined ? '' : `, $${u.costUsd}`} in all`,
  );
  return lines;
}

export function registerBudget(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('budget')
      .description("show a session's or a tenant's token and cost budget and its spend; --tokens, --cost, --reset, --clear change it (the admin)")
      .argument('[session]', 'session id')
      .option('--tenant <name>', "a tenant's budget instead: what all of its sessions may spend together")
      .option('--tenants', 'list every tenant with a budget')
      .option('--tokens <n>', 'tokens (input + output) it may spend', nonNegativeInt('--tokens'))
      .option('--cost <usd>', 'US dollars it may spend (the workers need --prices)', usd)
      .option('--reset', 'count the spend from now on')
      .option('--clear', 'remove both limits')
      .option('--json', 'print the result as JSON')
      .option(BY_OPTION[0], BY_OPTION[1]),
    ctx,
  ).action(async (session: string | undefined, opts: BudgetOptions) => {
    const request = budgetRequestOf(opts);
    const changes = Object.keys(request).length > 0;
    const asked = [session !== undefined, opts.tenant !== undefined, opts.tenants === true].filter(Boolean).length;
    if (asked !== 1)
      throw new UsageError('Name one: a session (sessiond budget SESSION), a tenant (sessiond budget --tenant T) or every tenant (sessiond budget --tenants).');
    if (opts.tenants) {
      if (changes) throw new UsageError('--tenants only lists: change one tenant with sessiond budget --tenant T --tokens N.');
      const all = await withTenantBudgets(opts, ctx, tenantBudgets);
      if (opts.json) ctx.out(JSON.stringify(all));
      else if (all.length === 0) ctx.out('no tenant has a budget (sessiond budget --tenant T --tokens N sets one)');
      else for (const r of all) ctx.out(describeTenantBudget(r)[0]!);
      return;
    }
    if (opts.tenant !== undefined) {
      const tenant = opts.tenant;
      const r = await withTenantBudgets(opts, ctx, (store) => tenantBudget(store, systemClock, tenant, request));
      if (opts.json) ctx.out(JSON.stringify(r));
      else for (const line of describeTenantBudget(r)) ctx.out(line);
      return;
    }
    validateId(session!, 'session id');
    await withSessions(opts, ctx, 'sessiond-budget', async ({ sessions }) => {
      const r = await sessions.budget(session!, changes ? { ...request, actor: opts.by ?? whoAmI() } : {});
      if (opts.json) ctx.out(JSON.stringify(r));
      else for (const line of describeBudget(r)) ctx.out(line);
    });
  });
}

/** A tenant's budget in plain words. */
export function describeTenantBudget(r: TenantBudgetResult): string[] {
  const b = r.budget;
  if (b === null) return [`tenant ${r.tenant}: no budget${r.changed ? ' (removed)' : ''} (sessiond budget --tenant ${r.tenant} --tokens N sets one)`];
  const parts = [
    ...(b.tokens === null ? [] : [`${b.spent.tokens} of ${b.tokens} tokens`]),
    ...(b.costUsd === null ? [] : [`$${b.spent.costUsd} of $${b.costUsd}`]),
  ];
  const spent = (b.tokens !== null && b.spent.tokens >= b.tokens) || (b.costUsd !== null && b.spent.costUsd >= b.costUsd);
  return [
    `tenant ${r.tenant}${r.changed ? ' (budget set)' : ''}: spent ${parts.join(', ')} since ${isoTime(b.since)}${spent ? ' — spent: its sessions make no model call until it is raised or reset' : ''}`,
  ];
}

/** The store of tenants' budgets the command's flags name: the NATS bucket (as the admin), or the SQLite file. */
async function withTenantBudgets<T>(opts: BudgetOptions, ctx: CliContext, use: (store: TenantBudgetStore) => Promise<T>): Promise<T> {
  const nats = natsConnectionOptions(opts, ctx, 'sessiond-budget');
  if (nats) {
    const nc = await connectNats(nats);
    try {
      return await use(await jetstreamTenantBudgetStore(nc));
    } finally {
      await nc.close();
    }
  }
  openExisting(opts.db).close(); // a sessiond database, not a new file a typo names
  const db = openDatabase(opts.db);
  try {
    migrate(db);
    return await use(sqliteTenantBudgetStore(db));
  } finally {
    db.close();
  }
}
