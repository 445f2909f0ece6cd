/**
 * A tenant's NATS commands reach its sessions' budgets only to look: a change sent on a tenant's
 * subject is refused `permission_denied` before the engine sees it (only the admin or a trusted
 * caller changes a budget).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/errors.ts';
import { tenantTarget } from '../../src/nats/tenant-target.ts';
import type { BudgetRequest, BudgetResult } from '../../src/sessions/budget.ts';
import type { Sessions } from '../../src/sessions/sessions.ts';

test('tenant budget - a tenant sees its session budget; a change is permission_denied and never reaches the engine', async () => {
  const asked: (BudgetRequest | undefined)[] = [];
  const result: BudgetResult = {
    sessionId: 'ses_t',
    budget: null,
    spent: { tokens: 0, costUsd: 0 },
    usage: { inputTokens: 0, outputTokens: 0 },
    changed: false,
  };
  const target = {
    status: async () => ({ ownedBy: 'acme' }),
    budget: async (_id: string, request?: BudgetRequest) => {
      asked.push(request);
      return result;
    },
  } as unknown as Sessions;
  const acme = tenantTarget(target, 'acme');
  assert.equal(await acme.budget('ses_t'), result);
  for (const change of [{ tokens: 5 }, { costUsd: null }, { reset: true }] as BudgetRequest[]) {
    const err = (await acme.budget('ses_t', change).catch((e: unknown) => e)) as { code: string; message: string };
    assert.is(err.code, ErrorCode.PermissionDenied, JSON.stringify(change));
    assert.match(err.message, 'A tenant cannot change a budget');
  }
  assert.equal(asked, [undefined], 'only the look reached the engine');
});

test.run();
