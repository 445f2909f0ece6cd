/**
 * A tenant's budget over NATS, real processes: two `sessiond start --nats` workers count a tenant's
 * model calls into the deployment's KV bucket (SESSIOND_BUDGETS), which the admin sets with
 * `sessiond budget --tenant`. The worker running the tenant's turn is SIGKILLed while its second
 * model request hangs: the other worker's continuation, and the tenant's next session, are refused
 * before any model call, and the spend is counted once. (On one SQLite file: test/budget/crash.test.ts.)
 */
import * as assert from 'uvu/assert';
import { fileURLToPath } from 'node:url';
import { as, cliSuite, natsWorker, type CliCtx } from './cli-suite.ts';
import { SessiondClient } from '../../src/client/client.ts';
import { ADMIN, CLIENT } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { startFakeOpenAI } from '../../src/testing/fake-openai.ts';
import { runCli, type LongRunning } from '../support/cli.ts';

const TOOLS = fileURLToPath(new URL('../runner/fixtures/tools.ts', import.meta.url));
const s = cliSuite("tenants' budgets over NATS");

s("tenant budget (NATS) - a worker SIGKILLed mid-turn: the other worker refuses the continuation and the tenant's next session", async (ctx: CliCtx) => {
  const llm = await startFakeOpenAI();
  llm.script(
    { kind: 'toolCalls', calls: [{ id: 'call_n1', name: 'note', arguments: { text: 'one' } }], usage: { prompt_tokens: 200, completion_tokens: 50 } },
    { kind: 'hang' },
  );
  const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
  const admin = [...as(ADMIN), '--nats', ctx.server.url];
  const flags = ['--runner', 'openai', '--model', 'fake-model', '--base-url', llm.url, '--tools', TOOLS];
  const fast = ['--lease-ms', '1500', '--heartbeat-ms', '500', '--sweep-ms', '300'];
  const workers: LongRunning[] = [];
  try {
    const set = await runCli(['budget', '--tenant', 'acme', '--tokens', '400', ...admin]);
    assert.is(set.code, 0, set.stderr);
    assert.match(set.stdout, 'tenant acme (budget set): spent 0 of 400 tokens');
    process.env.NOTES_FILE = ctx.tmp.file('notes.log');
    const first = await natsWorker(ctx, 'a.db', 0, [...flags, ...fast]);
    workers.push(first);
    await client.admit('ses_tn1', { prompt: 'take notes', owner: 'acme' });
    await llm.waitForRequest(2, 20_000);
    const second = await natsWorker(ctx, 'b.db', 0, [...flags, ...fast]);
    workers.push(second);
    const lowered = await runCli(['budget', '--tenant', 'acme', '--tokens', '200', ...admin]);
    assert.is(lowered.code, 0, lowered.stderr);
    assert.match(lowered.stdout, 'spent 250 of 200 tokens');
    first.child.kill('SIGKILL');
    await first.exited;
    await waitFor(async () => (await client.status('ses_tn1')).outcome === 'failed', { what: 'the continuation to fail', timeoutMs: 30_000, intervalMs: 100 });
    const status = await client.status('ses_tn1');
    assert.is(status.execution?.error?.type, 'budget_exceeded');
    assert.match(status.execution!.error!.message, 'Tenant acme (the owner of session ses_tn1) has spent its budget: 250 tokens spent');
    assert.equal([status.tenantBudget?.tokens, status.tenantBudget?.spent], [200, { tokens: 250, costUsd: 0 }], "status shows the tenant's budget");
    await client.admit('ses_tn2', { prompt: 'another', owner: 'acme' });
    await waitFor(async () => (await client.status('ses_tn2')).outcome === 'failed', {
      what: "the tenant's next session to fail",
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    assert.is((await client.status('ses_tn2')).execution?.error?.type, 'budget_exceeded');
    assert.is(llm.requests.length, 2, 'neither the continuation nor the next session sent a model request');
    const shown = await runCli(['budget', '--tenants', '--json', ...admin]);
    assert.equal(
      JSON.parse(shown.stdout).map((t: { tenant: string; budget: { spent: unknown } }) => [t.tenant, t.budget.spent]),
      [['acme', { tokens: 250, costUsd: 0 }]],
      'the spend counted once',
    );
  } finally {
    delete process.env.NOTES_FILE;
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
    for (const w of workers) await w.exited;
    await client.close();
    await llm.close();
  }
});

s.run();
