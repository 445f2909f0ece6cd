/**
 * Metrics and health: what a worker counts (from the events it commits and its notices), the
 * operations port's answers, and `sessiond start --metrics PORT` scraped for real.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { observeAppends } from '../../src/events/observed-log.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { admitInput } from '../../src/input/admit.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { Runner } from '../../src/runner/types.ts';
import { createWorkerMetrics } from '../../src/observability/metrics.ts';
import { startOpsServer } from '../../src/observability/http.ts';
import { freePort } from '../../src/testing/nats-server.ts';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { draft, ev } from '../../src/testing/fixtures.ts';
import { sessionBudget } from '../../src/sessions/budget.ts';
import { sqliteTenantBudgetStore } from '../../src/budget/sqlite-tenant-budget-store.ts';
import { changeTenantBudget } from '../../src/budget/tenant.ts';
import { ManualClock } from '../../src/clock.ts';

/** The value of one sample line of Prometheus text (`name{labels} value`), undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('metrics - turns, appends, conflicts and renewals are counted from what the worker commits', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('m.db'));
  migrate(db);
  const metrics = createWorkerMetrics({ log: 'sqlite', defaultMetrics: false });
  const log = observeAppends(new SqliteEventLog(db), metrics.appends);
  const execution = new SessionExecution({ log, runner: echoRunner({ steps: 2 }), onNotice: metrics.notice });
  metrics.watch({ liveSessions: () => 0, pendingInputs: () => 7, projectorLag: async () => 3, quarantined: () => 0 });
  for (const s of ['ses_m1', 'ses_m2']) {
    await admitInput(execution.handler, s, { prompt: 'count me', wake: false });
    await execution.resume(s);
    await execution.awaitIdle(s);
  }
  await log
    .append('ses_m1', 1, [draft(ev('input.admitted', { inputId: 'inp_x', prompt: 'p', delivery: 'queue', wake: false }), { id: 'evt_stale', time: 1 })])
    .catch(() => undefined);
  const text = await metrics.registry.metrics();
  assert.is(sample(text, 'sessiond_turns_started_total{log="sqlite"}'), 2);
  assert.is(sample(text, 'sessiond_turns_settled_total{outcome="succeeded",log="sqlite"}'), 2);
  assert.is(sample(text, 'sessiond_log_appends_total{result="conflict",log="sqlite"}'), 1, 'the stale append is a conflict');
  assert.ok((sample(text, 'sessiond_log_appends_total{result="committed",log="sqlite"}') ?? 0) >= 10, 'every append of the two turns');
  assert.is(sample(text, 'sessiond_turn_seconds_count{log="sqlite"}'), 2, 'one duration per turn claimed and settled here');
  assert.is(sample(text, 'sessiond_inputs_pending{log="sqlite"}'), 7, 'gauges read their source when scraped');
  assert.is(sample(text, 'sessiond_projector_lag_positions{log="sqlite"}'), 3);
  await execution.close();
  db.close();
  tmp.remove();
});

test('metrics - model tokens by kind (and per call, by the GenAI conventions) and the cost of priced calls are counted from the steps the worker commits', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('t.db'));
  migrate(db);
  const metrics = createWorkerMetrics({ log: 'sqlite', defaultMetrics: false });
  const log = observeAppends(new SqliteEventLog(db), metrics.appends);
  const runner: Runner = async (ctx) => {
    for (let i = 0; i < 2; i++) {
      const { messageId } = await ctx.startStep();
      await ctx.endStep(messageId, 'stop', { inputTokens: 100, outputTokens: 30, cachedInputTokens: 60, reasoningTokens: 10 }, 'm-1');
    }
  };
  const execution = new SessionExecution({ log, runner, prices: { 'm-1': { input: 1, output: 10 } } });
  await admitInput(execution.handler, 'ses_t', { prompt: 'count my tokens', wake: false });
  await execution.resume('ses_t');
  await execution.awaitIdle('ses_t');
  const text = await metrics.registry.metrics();
  assert.is(sample(text, 'sessiond_model_tokens_total{kind="input",log="sqlite"}'), 200);
  assert.is(sample(text, 'sessiond_model_tokens_total{kind="cached_input",log="sqlite"}'), 120);
  assert.is(sample(text, 'sessiond_model_tokens_total{kind="output",log="sqlite"}'), 60);
  assert.is(sample(text, 'sessiond_model_tokens_total{kind="reasoning",log="sqlite"}'), 20);
  assert.is(sample(text, 'sessiond_model_cost_usd_total{log="sqlite"}'), 0.0008, '2 x (100 x $1 + 30 x $10) per million');
  // the GenAI client metric beside them: one observation per call and token type
  assert.is(sample(text, 'gen_ai_client_token_usage_count{log="sqlite",gen_ai_operation_name="chat",gen_ai_token_type="input"}'), 2);
  assert.is(sample(text, 'gen_ai_client_token_usage_sum{log="sqlite",gen_ai_operation_name="chat",gen_ai_token_type="input"}'), 200);
  assert.is(sample(text, 'gen_ai_client_token_usage_bucket{le="64",log="sqlite",gen_ai_operation_name="chat",gen_ai_token_type="output"}'), 2);
  await execution.close();
  db.close();
  tmp.remove();
});

test("metrics - each model call's duration, by the GenAI conventions: provider, models, error type; a step with no model call has none", async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('d.db'));
  migrate(db);
  const metrics = createWorkerMetrics({ log: 'sqlite', defaultMetrics: false });
  const clock = new ManualClock(1_000_000);
  const runner: Runner = async (ctx) => {
    const first = await ctx.startStep();
    const attempt = async (ms: number) => {
      const slot = await ctx.modelCall({ provider: 'openai', model: 'gpt-4o' });
      clock.set(clock.now() + ms); // the request takes this long
      await slot.release();
    };
    await attempt(700); // a retry asks again: the call counts from its first request to its last one's end
    await attempt(500);
    clock.set(clock.now() + 2_000); // its tools run before the step ends: not the model call's time
    await ctx.endStep(first.messageId, 'tool-calls', { inputTokens: 10, outputTokens: 2 }, 'gpt-4o-2024-08-06');
    const second = await ctx.startStep();
    await attempt(30);
    await ctx.failStep(second.messageId, { type: 'model_error', name: 'ModelRequestError', message: 'HTTP 500' });
    const third = await ctx.startStep(); // no model asked: not a model call
    await ctx.endStep(third.messageId, 'stop');
  };
  const execution = new SessionExecution({ log: new SqliteEventLog(db), runner, clock, onNotice: metrics.notice });
  await admitInput(execution.handler, 'ses_d', { prompt: 'time my calls', wake: false });
  await execution.resume('ses_d');
  await execution.awaitIdle('ses_d');
  const text = await metrics.registry.metrics();
  const ok = 'gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4o",gen_ai_response_model="gpt-4o-2024-08-06"';
  assert.is(sample(text, `gen_ai_client_operation_duration_seconds_count{log="sqlite",${ok}}`), 1);
  assert.is(
    sample(text, `gen_ai_client_operation_duration_seconds_sum{log="sqlite",${ok}}`),
    1.2,
    'from the first request to the end of the last, without the tools after it',
  );
  assert.is(sample(text, `gen_ai_client_operation_duration_seconds_bucket{le="1.28",log="sqlite",${ok}}`), 1, "the conventions' buckets");
  assert.is(sample(text, `gen_ai_client_operation_duration_seconds_bucket{le="0.64",log="sqlite",${ok}}`), 0);
  const failed = 'gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="gpt-4o",error_type="model_error"';
  assert.is(sample(text, `gen_ai_client_operation_duration_seconds_sum{log="sqlite",${failed}}`), 0.03);
  const all = text.split('\n').filter((l) => l.startsWith('gen_ai_client_operation_duration_seconds_count'));
  assert.is(all.length, 2, `the two model calls, and not the step that asked no model: ${all.join('; ')}`);
  await execution.close();
  db.close();
  tmp.remove();
});

test("metrics - turns a budget stopped are counted by scope: the session's, or its tenant's", async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('b.db'));
  migrate(db);
  const metrics = createWorkerMetrics({ log: 'sqlite', defaultMetrics: false });
  const log = observeAppends(new SqliteEventLog(db), metrics.appends);
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    await ctx.endStep(messageId, 'stop', { inputTokens: 100, outputTokens: 0 }, 'm-1');
  };
  const tenantBudgets = sqliteTenantBudgetStore(db);
  await tenantBudgets.update('acme', (b) => changeTenantBudget(b, { tokens: 0 }, 0));
  const execution = new SessionExecution({ log, runner, tenantBudgets });
  await admitInput(execution.handler, 'ses_s', { prompt: 'one', wake: false });
  await sessionBudget(execution.handler, 'ses_s', { tokens: 0 });
  await admitInput(execution.handler, 'ses_t', { prompt: 'two', wake: false, owner: 'acme' });
  for (const id of ['ses_s', 'ses_t']) {
    await execution.resume(id);
    await execution.awaitIdle(id);
  }
  const text = await metrics.registry.metrics();
  assert.is(sample(text, 'sessiond_budget_stops_total{scope="session",log="sqlite"}'), 1);
  assert.is(sample(text, 'sessiond_budget_stops_total{scope="tenant",log="sqlite"}'), 1);
  await execution.close();
  db.close();
  tmp.remove();
});

test('ops server - /healthz answers, /readyz says why not, /metrics is Prometheus text, anything else is 404', async () => {
  const metrics = createWorkerMetrics({ defaultMetrics: false });
  let reasons: string[] = ['the projection is 5000 log positions behind the log'];
  const ops = await startOpsServer({ port: 0, registry: metrics.registry, readiness: async () => reasons });
  try {
    assert.is(await fetch(`${ops.url}/healthz`).then((r) => r.text()), 'ok\n');
    const notReady = await fetch(`${ops.url}/readyz`);
    assert.is(notReady.status, 503);
    assert.match(await notReady.text(), '- the projection is 5000 log positions behind the log');
    reasons = [];
    assert.is((await fetch(`${ops.url}/readyz`)).status, 200);
    const scrape = await fetch(`${ops.url}/metrics`);
    assert.match(scrape.headers.get('content-type') ?? '', 'text/plain');
    assert.match(await scrape.text(), '# TYPE sessiond_turns_started_total counter');
    assert.is((await fetch(`${ops.url}/nope`)).status, 404);
  } finally {
    await ops.close();
  }
});

test('cli start --metrics - a real worker is scraped: its turn counted, healthy and ready; a bad port is a usage error', async () => {
  const tmp = tempDir();
  const db = tmp.file('ops.db');
  const port = await freePort();
  const worker = startCli(['start', '--db', db, '--metrics', String(port)]);
  try {
    await worker.waitFor(`metrics: http://127.0.0.1:${port}/metrics`);
    const admitted = await runCli(['prompt', 'ses_ops', 'measure me', '--db', db]);
    assert.is(admitted.code, 0, admitted.stderr);
    await worker.waitFor('ses_ops  turn succeeded');
    const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
    assert.is(sample(text, 'sessiond_turns_settled_total{outcome="succeeded",log="sqlite"}'), 1);
    assert.is(sample(text, 'sessiond_live_sessions{log="sqlite"}'), 0);
    assert.ok(text.includes('sessiond_process_resident_memory_bytes'), 'process metrics too');
    assert.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    assert.is(await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.text()), 'ready\n');
  } finally {
    worker.child.kill('SIGTERM');
    assert.is(await worker.exited, 0, worker.output());
    tmp.remove();
  }
  const bad = await runCli(['start', '--metrics', '0']);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, '--metrics must be a port from 1 to 65535 (got "0")');
});

test.run();
