/**
 * The inspector's HTTP API over a real engine (echo runner, temp SQLite file): the session list
 * with live state, a session's timeline, time travel (state, lease and projected rows as they were
 * at a sequence), the highlighted chart, server-sent events, and 400/404/405 errors.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import type { AtView, SessionView } from '../../src/inspector/views.ts';
import type { SessionSummary } from '../../src/inspector/store.ts';
import type { RowsView as SessionRows } from '../../src/inspector/rows.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../../src/testing/wait.ts';

const tmp = tempDir();
let engine: Engine;
let inspector: Inspector;

test.before(async () => {
  engine = await openEngine({ file: tmp.file('inspect.db'), runner: echoRunner({ steps: 2 }) });
  await engine.admit('ses_one', { prompt: 'hello inspector world' });
  await engine.awaitIdle('ses_one');
  inspector = await startInspector({ log: engine.log, port: 0 });
});

test.after(async () => {
  await inspector?.close();
  await engine?.close();
  tmp.remove();
});

async function get<T = unknown>(path: string, init?: RequestInit): Promise<{ status: number; body: T; type: string }> {
  const res = await fetch(new URL(path, inspector.url), init);
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, type, body: (type.startsWith('application/json') ? await res.json() : await res.text()) as T };
}

test('inspector - the state at a sequence shows the tokens the session used up to there', async () => {
  const metered = await openEngine({
    file: tmp.file('inspect.db'),
    runner: async (ctx) => {
      for (const tokens of [100, 50]) {
        const { messageId } = await ctx.startStep();
        await ctx.text(messageId, 'ok');
        await ctx.endStep(messageId, 'stop', { inputTokens: tokens, outputTokens: 2 });
      }
    },
  });
  try {
    await metered.admit('ses_tokens', { prompt: 'count me' });
    await metered.awaitIdle('ses_tokens');
    const events = await engine.log.readSession('ses_tokens');
    const firstEnd = events.find((e) => e.type === 'step.ended')!.seq;
    const at = (seq: number) => get<{ usage: unknown }>(`/api/sessions/ses_tokens/at/${seq}`).then((r) => r.body.usage);
    assert.equal(await at(firstEnd), { inputTokens: 100, outputTokens: 2 });
    assert.equal(await at(events.at(-1)!.seq), { inputTokens: 150, outputTokens: 4 });
    assert.match(await get<string>('/').then((r) => r.body), 'data-testid="at-usage"');
  } finally {
    await metered.close();
  }
});

test('inspector - the state at a sequence shows the session budget and its spend there', async () => {
  const metered = await openEngine({
    file: tmp.file('inspect.db'),
    runner: async (ctx) => {
      const { messageId } = await ctx.startStep();
      await ctx.endStep(messageId, 'stop', { inputTokens: 100, outputTokens: 20 });
    },
  });
  try {
    await metered.admit('ses_budget', { prompt: 'spend' });
    await metered.awaitIdle('ses_budget');
    await metered.budget('ses_budget', { tokens: 100 });
    const events = await engine.log.readSession('ses_budget');
    const at = (seq: number) => get<{ budget: unknown }>(`/api/sessions/ses_budget/at/${seq}`).then((r) => r.body.budget);
    assert.is(await at(events.at(-2)!.seq), null, 'none before budget.set');
    assert.equal(await at(events.at(-1)!.seq), { tokens: 100, costUsd: null, spent: { tokens: 120, costUsd: 0 } });
    assert.match(await get<string>('/').then((r) => r.body), 'data-testid="at-budget"');
  } finally {
    await metered.close();
  }
});

test('inspector - a waiting session: the list counts its open waits; the state at a sequence shows what it waits for, then the decision', async () => {
  const waiting = await openEngine({
    file: tmp.file('inspect.db'),
    runner: async (ctx) => {
      const { messageId } = await ctx.startStep();
      if (ctx.waits.length === 0) await ctx.requestApproval(messageId, { name: 'deploy', input: { to: 'prod' }, callId: 'call_deploy' });
      await ctx.endStep(messageId, 'stop');
    },
  });
  try {
    await waiting.admit('ses_waits', { prompt: 'deploy it' });
    await waiting.awaitIdle('ses_waits');
    const list = async () => (await get<{ sessions: SessionSummary[] }>('/api/sessions')).body.sessions.find((s) => s.sessionId === 'ses_waits');
    await waitFor(async () => (await list())?.waiting === 1, { what: 'the list shows one open wait' });
    const seqWaiting = (await waiting.status('ses_waits')).seq;
    await waiting.approve('ses_waits', 'call_deploy', { reason: 'go' });
    await waiting.awaitIdle('ses_waits');
    await waitFor(async () => (await list())?.waiting === 0, { what: 'no open wait once decided' });
    const then = (await get<AtView>(`/api/sessions/ses_waits/at/${seqWaiting}`)).body;
    assert.equal(
      then.waits.map((w) => [w.kind, w.name, w.tool, w.input, w.outcome]),
      [['approval', 'call_deploy', 'deploy', { to: 'prod' }, null]],
    );
    const decided = (await get<AtView>(`/api/sessions/ses_waits/at/${seqWaiting + 1}`)).body;
    assert.equal(
      decided.waits.map((w) => [w.outcome, w.reason]),
      [['approved', 'go']],
    );
    assert.match(await get<string>('/').then((r) => r.body), 'data-testid="at-waits"');
  } finally {
    await waiting.close();
  }
});

test('inspector - serves on 127.0.0.1 and the page is one self-contained document', async () => {
  assert.match(inspector.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  const page = await get<string>('/');
  assert.is(page.status, 200);
  assert.match(page.type, 'text/html');
  for (const id of ['sessions', 'seq-slider', 'chart', 'timeline', 'at-state', 'at-lease', 'at-rows']) assert.match(page.body, `data-testid="${id}"`);
  assert.match(page.body, /<script>[\s\S]*new EventSource\('\/api\/events'[\s\S]*<\/script>/);
  assert.not.match(page.body, /<script src=|<link /, 'nothing loaded from elsewhere');
});

test('inspector - /api/sessions lists sessions with the state folded by the machine', async () => {
  const { status, body } = await get<{ sessions: SessionSummary[]; complete: boolean; position: number }>('/api/sessions');
  assert.is(status, 200);
  assert.ok(body.complete);
  const one = body.sessions.find((s) => s.sessionId === 'ses_one')!;
  const truth = await engine.status('ses_one');
  assert.is(one.state, 'settled');
  assert.is(one.state, truth.state);
  assert.is(one.seq, truth.seq);
  assert.is(one.pending, 0);
  assert.is(one.owner, null, 'a settled session holds no lease');
  assert.is(one.executions, 1);
  assert.is(body.position, await engine.log.head());
});

test('inspector - /api/sessions/:id has the current state, context and the last page of the timeline', async () => {
  const { status, body } = await get<SessionView>('/api/sessions/ses_one');
  assert.is(status, 200);
  const events = await engine.log.readSession('ses_one');
  assert.is(body.state, 'settled');
  assert.is(body.seq, events.length);
  assert.is(body.lastSeq, events.length);
  assert.equal(
    body.timeline.events.map((r) => [r.seq, r.type]),
    events.map((e) => [e.seq, e.type]),
    'a short session fits on one page',
  );
  assert.equal(body.timeline.events[0]!.payload, events[0]!.payload);
  assert.is(body.timeline.events[0]!.time, events[0]!.time);
  assert.is((body.timeline.events[0] as { committedAt?: number }).committedAt, events[0]!.committedAt, 'each row carries when it was committed');
  assert.type(events[0]!.committedAt, 'number');
  assert.is(body.timeline.before, null);
  assert.is(body.timeline.after, null);
  assert.is(body.context.executions, 1);
  assert.is(body.lease!.status, 'ended');
});

test('inspector - time travel: at the claim the session was claimed, with the lease it held then and its rows', async () => {
  const events = await engine.log.readSession('ses_one');
  const claim = events.find((e) => e.type === 'execution.claimed')!;
  if (claim.type !== 'execution.claimed') throw new Error('no claim');
  const { status, body } = await get<AtView>(`/api/sessions/ses_one/at/${claim.seq}`);
  assert.is(status, 200);
  assert.is(body.seq, claim.seq);
  assert.is(body.state, 'claimed');
  assert.is(body.event!.type, 'execution.claimed');
  assert.is(body.owner, engine.ownerId);
  assert.equal(body.lease, {
    executionId: claim.payload.executionId,
    ownerId: engine.ownerId,
    leaseMs: claim.payload.leaseMs,
    expiresAt: claim.payload.expiresAt,
    status: 'live',
    asOf: claim.time,
    remainingMs: claim.payload.expiresAt - claim.time,
    ended: null,
  });
  assert.is(body.phase, 'safe');
  assert.is(body.pending.length, 1, 'the prompt was not promoted yet');
  const rows = body.rows as SessionRows;
  assert.is(rows.executions.length, 1);
  assert.is(rows.executions[0]!.owner_id, engine.ownerId);
  assert.is(rows.executions[0]!.expires_at, claim.payload.expiresAt);
  assert.is(rows.inputs.length, 1);
  assert.is(rows.inputs[0]!.promoted_seq, null);
  assert.is(rows.messages.length, 0);

  const later = await get<AtView>(`/api/sessions/ses_one/at/${events.length}`);
  assert.is(later.body.state, 'settled');
  assert.is(later.body.lease!.status, 'ended');
  const laterRows = later.body.rows as SessionRows;
  assert.is(laterRows.executions.length, 0, 'settlement removes the execution row');
  assert.ok(laterRows.messages.length >= 2, 'user and assistant messages');
  assert.is(laterRows.inputs[0]!.promoted_seq !== null, true);

  const before = await get<AtView>('/api/sessions/ses_one/at/0');
  assert.is(before.body.state, 'idle');
  assert.is(before.body.event, null);
  assert.is(before.body.lease, null);
});

test('inspector - the chart highlights the session state now and at an earlier sequence', async () => {
  const plain = await get<string>('/api/chart.svg');
  assert.is(plain.status, 200);
  assert.match(plain.type, 'image/svg+xml');
  assert.not.match(plain.body, 'node current');
  const now = await get<string>('/api/chart.svg?session=ses_one');
  assert.match(now.body, /<g id="state_settled" class="node current">/);
  const events = await engine.log.readSession('ses_one');
  const started = events.find((e) => e.type === 'execution.started')!;
  const then = await get<string>(`/api/chart.svg?session=ses_one&seq=${started.seq}`);
  assert.match(then.body, /<g id="state_running" class="node current">/);
  assert.match(then.body, /<g id="move_claimed_execution\.started" class="edge move taken">/, 'the move just taken is highlighted');
  assert.is(then.body.match(/move taken/g)!.length, 1);
  assert.not.match(then.body, 'commands_claimed', 'commands and refusals are hidden by default');
  const withCommands = await get<string>(`/api/chart.svg?session=ses_one&seq=${started.seq}&commands=1`);
  assert.match(withCommands.body, /<g id="commands_claimed" class="edge commands">/);
  assert.match(withCommands.body, 'refuse own_lease_live');
  const next = await get<string>(`/api/chart.svg?session=ses_one&seq=${started.seq + 1}`);
  assert.match(next.body, /<g id="state_running" class="node current">/);
  assert.not.match(next.body, 'move taken', 'an event that folds without moving the state highlights no move');
});

test('inspector - /api/events streams each committed event as it is committed, with the session state', async () => {
  await get('/api/sessions'); // the inspector has caught up with the log: the stream carries only new commits
  const abort = new AbortController();
  const res = await fetch(new URL('/api/events', inspector.url), { signal: abort.signal });
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type')!, 'text/event-stream');
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const messages: { event: { type: string; seq: number }; sessionId: string; session: SessionSummary }[] = [];
  let buffer = '';
  const until = async (done: () => boolean) => {
    const deadline = AbortSignal.timeout(10_000);
    while (!done()) {
      if (deadline.aborted) throw new Error(`no matching server-sent event; got ${JSON.stringify(messages.map((m) => m.event.type))}`);
      const { value, done: ended } = await reader.read();
      if (ended) throw new Error('the event stream ended');
      buffer += value;
      let at: number;
      while ((at = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const data = block.split('\n').find((l) => l.startsWith('data: '));
        if (block.includes('event: committed') && data) messages.push(JSON.parse(data.slice(6)));
      }
    }
  };
  try {
    await engine.admit('ses_two', { prompt: 'live' });
    await until(() => messages.some((m) => m.sessionId === 'ses_two' && m.event.type === 'input.admitted'));
    const admitted = messages.find((m) => m.event.type === 'input.admitted')!;
    assert.is(admitted.event.seq, 1);
    await until(() => messages.some((m) => m.sessionId === 'ses_two' && m.event.type === 'execution.settled'));
    const last = messages[messages.length - 1]!;
    assert.is(last.session.state, 'settled');
    assert.ok(
      messages.every((m) => m.sessionId === 'ses_two'),
      'only new commits, no replay of ses_one',
    );
    const seqs = messages.map((m) => m.event.seq);
    assert.equal(
      seqs,
      seqs.map((_, i) => i + 1),
      'in order, none missing',
    );
  } finally {
    abort.abort();
    await reader.cancel().catch(() => {});
  }
  const list = await get<{ sessions: SessionSummary[] }>('/api/sessions');
  assert.is(list.body.sessions.find((s) => s.sessionId === 'ses_two')!.state, 'settled');
});

test('inspector - bad ids and sequences are 400, unknown sessions, sequences and routes 404, writes 405', async () => {
  const cases: [string, number, string, RegExp][] = [
    ['/api/sessions/ses.bad', 400, 'invalid_id', /Invalid session id "ses\.bad": it contains "\."/],
    ['/api/sessions/%E0%A4%A', 400, 'invalid_id', /not valid URL encoding/],
    ['/api/sessions/ses_nobody', 404, 'session_not_found', /Session ses_nobody has no events/],
    ['/api/sessions/ses_one/at/abc', 400, 'invalid_seq', /use a whole number >= 0/],
    ['/api/sessions/ses_one/at/-1', 400, 'invalid_seq', /whole number/],
    ['/api/sessions/ses_one/at/9999', 404, 'seq_not_found', /pick a sequence from 0 to \d+ \(asked for 9999\)/],
    ['/api/sessions/ses_nobody/at/1', 404, 'session_not_found', /no events/],
    ['/api/chart.svg?session=ses.bad', 400, 'invalid_id', /Invalid session id/],
    ['/api/chart.svg?session=ses_one&seq=x', 400, 'invalid_seq', /whole number/],
    ['/api/chart.svg?seq=1', 400, 'invalid_query', /seq needs a session/],
    ['/api/chart.svg?commands=yes', 400, 'invalid_query', /Invalid commands "yes": use commands=1/],
    ['/api/sessions/ses_one/events?limit=0', 400, 'invalid_query', /Invalid limit "0": use a whole number of events from 1 to 500/],
    ['/api/sessions/ses_one/events?before=1&after=2', 400, 'invalid_query', /Use one of before, after, around or time, not before and after/],
    [
      '/api/sessions/ses_one/events?page=2',
      400,
      'invalid_query',
      /Unknown query parameter "page": the events route takes before, after, around, time, limit, type, q/,
    ],
    ['/api/sessions/ses_one/events?type=tool.nope', 400, 'invalid_query', /Unknown event type "tool\.nope": use one of .*execution\.claimed/],
    ['/api/sessions/ses_one/events?time=yesterday', 400, 'invalid_time', /use milliseconds since the epoch or an ISO 8601 time/],
    ['/api/sessions/ses_one/events?q=x&around=3', 400, 'invalid_query', /A text search \(q\) pages with before=SEQ or after=SEQ/],
    ['/api/sessions/ses_one/events?before=x', 400, 'invalid_seq', /Invalid before "x"/],
    ['/api/sessions/ses_nobody/events', 404, 'session_not_found', /no events/],
    ['/api/chart.svg?session=ses_nobody', 404, 'session_not_found', /no events/],
    ['/api/nothing', 404, 'not_found', /No route \/api\/nothing\. Routes:/],
  ];
  for (const [path, status, code, message] of cases) {
    const res = await get<{ error: { code: string; message: string } }>(path);
    assert.is(res.status, status, path);
    assert.match(res.type, 'application/json', path);
    assert.is(res.body.error.code, code, path);
    assert.match(res.body.error.message, message, path);
  }
  const post = await get<{ error: { code: string } }>('/api/sessions', { method: 'POST' });
  assert.is(post.status, 405);
  assert.is(post.body.error.code, 'method_not_allowed');
});

test('inspector - rowsAt can be injected (or turned off); the port in use is a clear error', async () => {
  const custom = await startInspector({ log: engine.log, port: 0, rowsAt: (sessionId, seq) => ({ sessionId, folded: seq }) });
  const off = await startInspector({ log: engine.log, port: 0, rowsAt: null });
  try {
    const at = (await fetch(new URL('/api/sessions/ses_one/at/3', custom.url)).then((r) => r.json())) as AtView;
    assert.equal(at.rows, { sessionId: 'ses_one', folded: 3 });
    const none = (await fetch(new URL('/api/sessions/ses_one/at/3', off.url)).then((r) => r.json())) as AtView;
    assert.is(none.rows, null);
    try {
      await startInspector({ log: engine.log, port: custom.port });
      assert.unreachable('the port is taken');
    } catch (err) {
      assert.match((err as Error).message, `Cannot serve the inspector on 127.0.0.1:${custom.port}: the address is in use. Pick another port`);
    }
  } finally {
    await custom.close();
    await off.close();
  }
});

test.run();
