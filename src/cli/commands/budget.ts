/**
 * `sessiond budget SESSION`: a session's budget and spend, in plain words or `--json`; `--tokens N`,
 * `--cost USD`, `--reset` and `--clear` change it first (as the admin: embedded with `--db`, or
 * on NATS as a trusted user).
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { UsageError } from '../../errors.ts';
import { validateId } from '../../ids.ts';
import type { BudgetRequest, BudgetResult } from '../../sessions/budget.ts';
import type { CliContext } from '../context.ts';
import { addLogOptions, type LogOptions } from '../log-options.ts';
import { withSessions } from '../open-sessions.ts';
import { nonNegativeInt } from '../options.ts';
import { BY_OPTION, whoAmI } from '../who.ts';

interface BudgetOptions extends LogOptions {
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
      .description("show a session's token and cost budget and its spend; --tokens, --cost, --reset, --clear change it (the admin)")
      .argument('<session>', 'session id')
      .option('--tokens <n>', 'tokens (input + output) the session may spend', nonNegativeInt('--tokens'))
      .option('--cost <usd>', 'US dollars the session may spend (the workers need --prices)', usd)
      .option('--reset', 'count the spend from now on')
      .option('--clear', 'remove both limits')
      .option('--json', 'print the result as JSON')
      .option(BY_OPTION[0], BY_OPTION[1]),
    ctx,
  ).action(async (session: string, opts: BudgetOptions) => {
    validateId(session, 'session id');
    const request = budgetRequestOf(opts);
    const changes = Object.keys(request).length > 0;
    await withSessions(opts, ctx, 'sessiond-budget', async ({ sessions }) => {
      const r = await sessions.budget(session, changes ? { ...request, actor: opts.by ?? whoAmI() } : {});
      if (opts.json) ctx.out(JSON.stringify(r));
      else for (const line of describeBudget(r)) ctx.out(line);
    });
  });
}
