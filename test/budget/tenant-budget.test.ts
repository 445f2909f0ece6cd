/**
 * Tenants' budgets: what all of a tenant's sessions spend together, counted once per model call into
 * a store the workers share, and checked before each model call of the tenant's sessions. A turn of
 * a tenant that has spent its budget stops before its next model call, failed `budget_exceeded`,
 * naming the tenant; other tenants' sessions and sessions without a tenant go on.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sqliteTenantBudgetStore } from '../../src/budget/sqlite-tenant-budget-store.ts';
import { changeTenantBudget, COUNTED_KEPT, countCall, tenantExceeded } from '../../src/budget/tenant.ts';
import { openEngine } from '../../src/engine.ts';
import { ErrorCode } from '../../src/errors.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { fixture } from '../support/fixture.ts';
import { settled, steps, stepsRunner as stepsOf } from './steps.ts';
import { tempDir } from '../support/tmp.ts';

/** A runner of `n` model steps, each reporting 100 input and 50 output tokens. */
const stepsRunner = (n: number) => stepsOf(n, { inputTokens: 100, outputTokens: 50 });

test('tenant budget - set, kept, reset and cleared as a change says; counted once per call; passed once spend reaches a limit', () => {
  const set = changeTenantBudget(null, { tokens: 300 }, 10)!;
  assert.equal(set, { tokens: 300, costUsd: null, spent: { tokens: 0, costUsd: 0 }, since: 10, counted: [] });
  const one = countCall(set, 'msg_1', { inputTokens: 100, outputTokens: 50, costUsd: 0.25 })!;
  assert.equal(one.spent, { tokens: 150, costUsd: 0.25 });
  assert.is(countCall(one, 'msg_1', { inputTokens: 100, outputTokens: 50 }), one, 'a call counted again counts once');
  const cost = changeTenantBudget(one, { costUsd: 1 }, 20)!;
  assert.equal([cost.tokens, cost.costUsd, cost.spent, cost.since], [300, 1, { tokens: 150, costUsd: 0.25 }, 10], 'a raise keeps the spend');
  assert.is(tenantExceeded('acme', cost), undefined);
  const two = countCall(cost, 'msg_2', { inputTokens: 150, outputTokens: 0 })!;
  assert.equal(tenantExceeded('acme', two), { scope: 'tenant', tenant: 'acme', kind: 'tokens', limit: 300, spent: 300 });
  const reset = changeTenantBudget(two, { reset: true }, 30)!;
  assert.equal([reset.spent, reset.since, reset.counted], [{ tokens: 0, costUsd: 0 }, 30, []]);
  assert.is(changeTenantBudget(two, { tokens: null, costUsd: null }, 40), null, 'no limit left: no budget');
  assert.is(countCall(null, 'msg_3', { inputTokens: 1, outputTokens: 1 }), null, 'a tenant without a budget is not counted');
  let many = set;
  for (let i = 0; i < COUNTED_KEPT + 10; i++) many = countCall(many, `msg_${i}`, { inputTokens: 1, outputTokens: 0 })!;
  assert.is(many.counted.length, COUNTED_KEPT, 'only the latest calls are kept');
  assert.is(many.counted.at(-1), `msg_${COUNTED_KEPT + 9}`);
});

test("tenant budget - one session spends the tenant's budget: another of its sessions stops at once; other tenants go on", async () => {
  const fx = fixture();
  const db = openDatabase(fx.file);
  migrate(db);
  const budgets = sqliteTenantBudgetStore(db);
  const a = fx.service({ runner: stepsRunner(3), tenantBudgets: budgets });
  await budgets.update('acme', (b) => changeTenantBudget(b, { tokens: 300 }, 0));
  for (const [id, owner] of [
    ['ses_a1', 'acme'],
    ['ses_a2', 'acme'],
    ['ses_g', 'globex'],
    ['ses_none', undefined],
  ] as const)
    await fx.admit(a, id, { prompt: 'go', wake: false, ...(owner ? { owner } : {}) });

  await a.resume('ses_a1');
  await a.awaitIdle('ses_a1');
  let events = await fx.events('ses_a1');
  assert.is(steps(events), 2, 'two calls of 150 tokens spend the 300: the third never starts');
  assert.is(settled(events)[0]!.payload.error?.type, ErrorCode.BudgetExceeded);
  assert.equal((await budgets.read('acme'))?.spent, { tokens: 300, costUsd: 0 });

  await a.resume('ses_a2');
  await a.awaitIdle('ses_a2');
  events = await fx.events('ses_a2');
  assert.is(steps(events), 0, "acme's other session makes no model call");
  const error = settled(events)[0]!.payload.error!;
  assert.is(error.type, ErrorCode.BudgetExceeded);
  assert.match(error.message, 'Tenant acme (the owner of session ses_a2) has spent its budget: 300 tokens spent of a tokens budget of 300 tokens');
  assert.match(error.message, 'sessiond budget --tenant acme --tokens N');

  for (const id of ['ses_g', 'ses_none']) {
    await a.resume(id);
    await a.awaitIdle(id);
    const e = await fx.events(id);
    assert.is(steps(e), 3, `${id} is not acme's`);
    assert.is(settled(e)[0]!.payload.outcome, 'succeeded');
  }
  assert.is(await budgets.read('globex'), null, 'a tenant without a budget is not counted');

  await budgets.update('acme', (b) => changeTenantBudget(b, { tokens: 600 }, 1));
  await fx.admit(a, 'ses_a2', { prompt: 'again', wake: false, owner: 'acme' });
  await a.resume('ses_a2');
  await a.awaitIdle('ses_a2');
  events = await fx.events('ses_a2');
  assert.is(steps(events), 2, 'raised by 300: two more calls');
  assert.equal((await budgets.read('acme'))?.spent, { tokens: 600, costUsd: 0 });
  await budgets.close();
  db.close();
  await fx.close();
});

test("tenant budget - the engine keeps tenants' budgets in its file; bad names and values are refused saying what to give", async () => {
  const tmp = tempDir();
  const engine = await openEngine({ file: tmp.file('e.db'), runner: echoRunner() });
  try {
    assert.equal(await engine.tenantBudget('acme'), { tenant: 'acme', budget: null, changed: false });
    const set = await engine.tenantBudget('acme', { tokens: 1_000, costUsd: 2.5 });
    assert.is(set.changed, true);
    assert.equal(set.budget?.spent, { tokens: 0, costUsd: 0 });
    assert.is((await engine.tenantBudget('acme', { tokens: 1_000 })).changed, false, 'the same limit again changes nothing');
    await engine.tenantBudget('token:ops', { tokens: 5 });
    assert.equal(
      (await engine.tenantBudgets()).map((t) => [t.tenant, t.budget?.tokens]),
      [
        ['acme', 1_000],
        ['token:ops', 5],
      ],
    );
    const badName = await engine.tenantBudget('no spaces', { tokens: 1 }).catch((e: Error) => e);
    assert.match((badName as Error).message, 'Invalid owner "no spaces"');
    const badValue = await engine.tenantBudget('acme', { tokens: -1 }).catch((e: Error) => e);
    assert.match((badValue as Error).message, 'tokens must be a whole number >= 0');
    assert.is((await engine.tenantBudget('acme', { tokens: null, costUsd: null })).budget, null);
  } finally {
    await engine.close();
  }
  const logDb = openDatabase(tmp.file('log.db'));
  migrate(logDb);
  const other = await openEngine({ file: tmp.file('f.db'), runner: echoRunner(), log: new SqliteEventLog(logDb) });
  try {
    const err = await other.tenantBudget('acme').catch((e: Error) => e);
    assert.match((err as Error).message, "keeps no tenants' budgets");
  } finally {
    await other.close();
    logDb.close();
    tmp.remove();
  }
});

test.run();
