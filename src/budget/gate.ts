/**
 * The check a turn runs before each model call (src/execution/run-context.ts: `startStep` and
 * `compact`): the session's spend, from its log plus what the turn has recorded and not yet
 * appended, against its budget; then the tenant's, when a tenant budget store is given.
 */
import type { SessionContext } from '../machines/session-context.ts';
import type { Usage } from '../events/catalog.ts';
import { exceeded, spendOf, type Exceeded } from '../machines/budget-spend.ts';

/** The session's budget passed, or undefined (nothing to check when no budget was set). */
export function sessionExceeded(ctx: SessionContext, unrecorded: Usage): Exceeded | undefined {
  const budget = ctx.budget ?? null;
  if (budget === null) return undefined;
  const over = exceeded(budget, spendOf(budget, ctx.usage, unrecorded));
  return over && { scope: 'session', ...over };
}
