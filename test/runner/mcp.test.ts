/**
 * MCP servers as tool sources, with real servers: `@modelcontextprotocol/server-everything` over
 * stdio and over Streamable HTTP, and the fixture server (test/runner/fixtures/mcp-server.ts) in
 * model turns on the embedded engine against the local OpenAI-compatible server: schemas reach the
 * model, calls go through the journal with their idempotency key in `_meta`, error results, bad
 * arguments, timeouts and cancels are tool errors; servers that cannot start or die.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { ManualClock } from '../../src/clock.ts';
import { z } from 'zod';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { defineTool } from '../../src/runner/model/tools.ts';
import { mcpServers, type McpServers } from '../../src/runner/mcp/servers.ts';
import type { ToolContext } from '../../src/runner/types.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';
import { childrenOf, everythingStdio, fixtureEntry, startEverythingHttp } from '../support/mcp.ts';

type Ctx = { tmp: ReturnType<typeof tempDir>; servers: McpServers[]; engines: Engine[]; openai: FakeOpenAI | undefined };
const s = suite<Ctx>('mcp');
s.before.each((ctx) => {
  ctx.tmp = tempDir('sessiond-mcp-');
  ctx.servers = [];
  ctx.engines = [];
  ctx.openai = undefined;
});
s.after.each(async (ctx) => {
  for (const e of ctx.engines.splice(0)) await e.close();
  for (const m of ctx.servers.splice(0)) await m.close();
  await ctx.openai?.close();
  ctx.tmp.remove();
});

const call = (signal = new AbortController().signal): ToolContext => ({ callId: 'call_1', idempotencyKey: 'key-1', signal, progress: () => {} });
const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
function servers(ctx: Ctx, config: Record<string, unknown>, options: Parameters<typeof mcpServers>[1] = {}) {
  const said: string[] = [];
  const m = mcpServers({ mcpServers: config }, { log: (l) => said.push(l), ...options });
  ctx.servers.push(m);
  return { m, said };
}

s('server-everything over stdio: its tools with their schemas; text, an image, structured content and resource links as outputs', async (ctx) => {
  const { m, said } = servers(ctx, { every: everythingStdio() });
  const tools = await m.tools();
  for (const name of ['every__echo', 'every__get-sum', 'every__get-tiny-image', 'every__get-structured-content', 'every__get-resource-links'])
    assert.ok(tools[name], `${name} listed: ${Object.keys(tools).join(', ')}`);
  assert.equal(said, ['mcp server "every" started: 13 tools'.replace('13', String(Object.keys(tools).length))]);
  const sum = tools['every__get-sum']!;
  assert.equal((sum.inputSchema as { jsonSchema: { required?: string[] } }).jsonSchema.required, ['a', 'b']);
  assert.is(sum.durable, true, 'MCP tools are durable by default');
  assert.is(await sum.execute({ a: 2, b: 3 }, call()), 'The sum of 2 and 3 is 5.');
  assert.is(await tools['every__echo']!.execute({ message: 'hi' }, call()), 'Echo: hi');
  const image = (await tools['every__get-tiny-image']!.execute({}, call())) as { content: unknown[] };
  assert.equal(image.content[1], {
    type: 'image',
    mimeType: 'image/png',
    bytes: (image.content[1] as { bytes: number }).bytes,
    note: 'image data not shown to the model',
  });
  assert.ok((image.content[1] as { bytes: number }).bytes > 100);
  const weather = (await tools['every__get-structured-content']!.execute({ location: 'Chicago' }, call())) as { structuredContent: Record<string, unknown> };
  assert.equal(Object.keys(weather.structuredContent).sort(), ['conditions', 'humidity', 'temperature']);
  const links = (await tools['every__get-resource-links']!.execute({ count: 1 }, call())) as { content: unknown[] };
  assert.equal(links.content[1], {
    type: 'resource_link',
    uri: 'demo://resource/dynamic/blob/1',
    name: 'Blob Resource 1',
    description: 'Resource 1: plaintext resource',
    mimeType: 'text/plain',
  });
  assert.is(await m.tools(), tools, 'the same registry while no listing changed');
});

s("an MCP server's progress notifications reach the call's ctx.progress", async (ctx) => {
  const { m } = servers(ctx, { every: everythingStdio() });
  const tools = await m.tools();
  const reports: { progress: number; total?: number }[] = [];
  const tc: ToolContext = { ...call(), progress: (p) => reports.push(p) };
  await tools['every__trigger-long-running-operation']!.execute({ duration: 0.3, steps: 3 }, tc);
  // one a step, 100 ms apart; the last may cross the result on the wire and be left out
  assert.equal(
    reports.slice(0, 2).map((r) => [r.progress, r.total]),
    [
      [1, 3],
      [2, 3],
    ],
  );
  assert.ok(reports.length <= 3);
});

s('server-everything over Streamable HTTP: listed and called', async (ctx) => {
  const http = await startEverythingHttp();
  try {
    const { m, said } = servers(ctx, { web: { url: http.url } });
    const tools = await m.tools();
    assert.ok(tools['web__get-sum'] && tools['web__echo'], Object.keys(tools).join(', '));
    assert.is(await tools['web__get-sum']!.execute({ a: 40, b: 2 }, call()), 'The sum of 40 and 2 is 42.');
    assert.is(await tools['web__echo']!.execute({ message: 'over http' }, call()), 'Echo: over http');
    await http.stop();
    try {
      await tools['web__echo']!.execute({ message: 'gone' }, call());
      assert.unreachable('answered by a stopped server');
    } catch (err) {
      assert.match((err as Error).message, /^mcp server "web" failed on echo: /);
    }
    assert.ok(
      said.some((l) => /^mcp server "web" stopped \(.+\); it is started again at its next use, in 1 s at the earliest$/.test(l)),
      said.join('\n'),
    );
  } finally {
    await ctx.servers.pop()?.close();
    await http.stop();
  }
});

s('a Streamable HTTP server gets the headers of the file; one that refuses says so in the log', async (ctx) => {
  const seen: (string | undefined)[] = [];
  const endpoint = createServer((req, res) => {
    seen.push(req.headers.authorization);
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad token"}');
  });
  await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(endpoint.address() as { port: number }).port}/mcp`;
    const { m, said } = servers(ctx, { auth: { url, headers: { Authorization: 'Bearer s3cret' } } });
    assert.equal(await m.tools(), {});
    assert.is(seen[0], 'Bearer s3cret');
    assert.match(
      said[0]!,
      new RegExp(
        `^mcp server "auth" could not start \\(Streamable HTTP: ${url}\\): Streamable HTTP error: Error POSTing to endpoint: {"error":"bad token"} \\(HTTP 401\\); its tools are unavailable`,
      ),
    );
  } finally {
    await ctx.servers.pop()?.close();
    await new Promise((r) => endpoint.close(r));
  }
});

/** The tool results the model's `i`-th request carried: call id -> content. */
function toolResults(server: FakeOpenAI, i: number): Record<string, string> {
  const chat = server.requests.filter((r) => r.path.endsWith('/chat/completions'))[i]!.chat!;
  return Object.fromEntries(
    chat.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id!, typeof m.content === 'string' ? m.content : JSON.stringify(m.content)]),
  );
}

async function engineWith(ctx: Ctx, mcp: McpServers): Promise<Engine> {
  ctx.openai = await startFakeOpenAI();
  const file = ctx.tmp.file('mcp.db');
  const e = await openEngine({ file, runner: openaiRunner({ model: 'fake-model', baseURL: ctx.openai.url, mcp }) });
  ctx.engines.push(e);
  return e;
}

s(
  'a model turn: the tools reach the model with their schemas; calls are journaled with their key in _meta; errors, bad arguments and a timeout are tool errors',
  async (ctx) => {
    const log = ctx.tmp.file('calls.log');
    const { m } = servers(ctx, { fx: fixtureEntry({ LOG_FILE: log }, { tools: { hang: { timeoutMs: 300 } } }) });
    const e = await engineWith(ctx, m);
    ctx.openai!.script(
      {
        kind: 'toolCalls',
        calls: [
          { id: 'call_ok', name: 'fx__charge', arguments: { cents: 250 } },
          { id: 'call_declined', name: 'fx__decline', arguments: {} },
          { id: 'call_bad', name: 'fx__charge', arguments: { cents: 'lots' } },
          { id: 'call_hang', name: 'fx__hang', arguments: {} },
        ],
      },
      { kind: 'text', text: 'Done.' },
    );
    await e.admit('ses_mcp', { prompt: 'charge 2.50' });
    await e.awaitIdle('ses_mcp');
    assert.is((await e.status('ses_mcp')).outcome, 'succeeded');
    const offered = ctx.openai!.requests[0]!.chat!.tools!.map((t) => t.function);
    assert.equal(
      offered.map((t) => t.name),
      ['fx__charge', 'fx__note', 'fx__decline', 'fx__hang', 'fx__grow'],
    );
    assert.equal((offered[0]!.parameters as { properties: unknown }).properties, {
      cents: { type: 'integer', exclusiveMinimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    });
    const results = toolResults(ctx.openai!, 1);
    assert.equal(JSON.parse(results['call_ok']!), { content: ['{"charged":250}'], structuredContent: { charged: 250 } });
    assert.match(results['call_declined']!, /mcp tool decline of server "fx" answered with an error: the card was declined/);
    assert.match(results['call_bad']!, /invalid .*fx__charge.*data\/cents must be integer/s);
    assert.match(results['call_hang']!, /mcp server "fx" did not answer hang within 300 ms \(its timeoutMs\): the call was cancelled/);
    const events = await e.log.readSession('ses_mcp');
    const called = events.filter((x) => x.type === 'tool.called').map((x) => (x as SessionEvent<'tool.called'>).payload);
    const charge = called.find((c) => c.callId === 'call_ok')!;
    assert.ok(charge.durable && charge.idempotencyKey, 'durable, with a key');
    await waitFor(() => lines(log).includes('hang cancelled'), { what: 'the server to see the timed-out call cancelled' });
    const charges = lines(log).filter((l) => l.startsWith('charge '));
    assert.equal(charges, [`charge ${charge.idempotencyKey} {"cents":250}`], 'the key in _meta; the bad call never reached the server');
  },
);

s('a cancel aborts a running MCP call (the server sees it cancelled)', async (ctx) => {
  const log = ctx.tmp.file('calls.log');
  const { m } = servers(ctx, { fx: fixtureEntry({ LOG_FILE: log }) });
  const e = await engineWith(ctx, m);
  ctx.openai!.script({ kind: 'toolCalls', calls: [{ id: 'call_h', name: 'fx__hang', arguments: {} }] });
  await e.admit('ses_cancel', { prompt: 'hang' });
  await waitFor(() => lines(log).some((l) => l.startsWith('hang ')), { what: 'the call to reach the server' });
  await e.cancel('ses_cancel', 'stop');
  await e.awaitIdle('ses_cancel');
  assert.is((await e.status('ses_cancel')).outcome, 'cancelled');
  await waitFor(() => lines(log).includes('hang cancelled'), { what: 'the server to see the call cancelled' });
});

s('a server that says its tools changed is listed again: the new tool reaches the registry', async (ctx) => {
  const { m, said } = servers(ctx, { fx: fixtureEntry({}) });
  const before = await m.tools();
  assert.not.ok(before['fx__extra']);
  assert.is(await before['fx__grow']!.execute({}, call()), 'grown');
  await waitFor(() => said.includes('mcp server "fx" changed its tools: 6 tools'), { what: 'the new listing' });
  const after = await m.tools();
  assert.is.not(after, before, 'a new registry');
  assert.is(await after['fx__extra']!.execute({}, call()), 'extra ran');
});

s('a server started again later holds no turn: the listing goes on without it while it starts', async (ctx) => {
  // fails at once the first time; the second time it starts but never answers
  const marker = ctx.tmp.file('tried');
  const script = `const fs = require('fs'); if (!fs.existsSync(${JSON.stringify(marker)})) { fs.writeFileSync(${JSON.stringify(marker)}, ''); process.exit(1); } setInterval(() => {}, 1000);`;
  const clock = new ManualClock(0);
  const { m, said } = servers(ctx, { flaky: { command: process.execPath, args: ['-e', script] }, fx: fixtureEntry({}) }, { clock, connectTimeoutMs: 20_000 });
  await m.tools();
  assert.match(said.join('\n'), /mcp server "flaky" could not start/);
  clock.set(1_000);
  const started = Date.now();
  const tools = await m.tools();
  assert.ok(Date.now() - started < 5_000, `listed in ${Date.now() - started} ms, not after the restart's 20 s start timeout`);
  assert.ok(tools['fx__note'], "the other server's tools");
  await m.close();
});

s('close() ends a server still starting (one that never answers) at once, not after its start timeout', async (ctx) => {
  const { m, said } = servers(ctx, { mute: { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000) // mute server'] } });
  const listing = m.tools();
  const started = Date.now();
  await waitFor(() => childrenOf(process.pid, /mute server/).length === 1, { what: 'the server to be started' });
  await m.close();
  assert.equal(await listing, {}, 'no tools');
  assert.ok(Date.now() - started < 10_000, `closed in ${Date.now() - started} ms, not after the 30 s start timeout`);
  assert.equal(said, [], 'a stop is no failure to report');
});

s("a local tool named like a server's tools is refused when the runner is made; a bad mcp option is refused with what to fix", () => {
  const m = mcpServers({ mcpServers: { fx: fixtureEntry({}) } });
  const local = { fx__charge: defineTool({ description: 'mine', inputSchema: z.object({}), execute: () => 'local' }) };
  assert.throws(
    () => openaiRunner({ model: 'm', baseURL: 'http://127.0.0.1:1/v1', tools: local, mcp: m }),
    /The tool "fx__charge" clashes with the tools of the MCP server "fx" in the mcp option \(named fx__<tool>\): rename the tool or the server/,
  );
  assert.ok(openaiRunner({ model: 'm', baseURL: 'http://127.0.0.1:1/v1', tools: { fx_charge: local.fx__charge }, mcp: m }), 'one _ is no clash');
  assert.throws(() => openaiRunner({ model: 'm', baseURL: 'http://127.0.0.1:1/v1', maxSteps: 0, mcp: m }), /Invalid maxSteps 0/, 'options checked at once');
  assert.throws(() => mcpServers({ mcpServers: { fx: { command: 'x', port: 1 } } }), /^the mcp option: mcpServers\.fx: unknown field "port"/);
});

s('needsApproval from the file: the gated MCP call waits for a person, the others run; approved, it runs once with its key', async (ctx) => {
  const log = ctx.tmp.file('calls.log');
  const { m } = servers(ctx, { fx: fixtureEntry({ LOG_FILE: log }, { needsApproval: ['charge'] }) });
  const e = await engineWith(ctx, m);
  ctx.openai!.script(
    {
      kind: 'toolCalls',
      calls: [
        { id: 'call_c', name: 'fx__charge', arguments: { cents: 900 } },
        { id: 'call_n', name: 'fx__note', arguments: { text: 'asked' } },
      ],
    },
    { kind: 'text', text: 'Charged.' },
  );
  await e.admit('ses_gate', { prompt: 'charge 9' });
  await e.awaitIdle('ses_gate');
  const waiting = await e.status('ses_gate');
  assert.is(waiting.outcome, 'waiting');
  assert.equal(
    waiting.waits.map((w) => [w.kind, w.tool, w.input]),
    [['approval', 'fx__charge', { cents: 900 }]],
  );
  assert.equal(
    lines(log).map((l) => l.split(' ')[0]),
    ['note'],
    'only the ungated call ran',
  );
  await e.approve('ses_gate', 'call_c');
  await e.awaitIdle('ses_gate');
  assert.is((await e.status('ses_gate')).outcome, 'succeeded');
  const charges = lines(log).filter((l) => l.startsWith('charge '));
  assert.is(charges.length, 1);
  assert.match(charges[0]!, /^charge ses_gate:exe_\S+:call_c \{"cents":900\}$/, 'with the key of its call');
});

s('a server that cannot start is said (which, why), the others work; one that dies starts again at its next use after its backoff', async (ctx) => {
  const log = ctx.tmp.file('calls.log');
  const pids = ctx.tmp.file('pids');
  const clock = new ManualClock(1_000_000);
  const { m, said } = servers(
    ctx,
    { broken: { command: '/no/such/mcp-server', args: ['--x'] }, fx: fixtureEntry({ LOG_FILE: log, PID_FILE: pids }) },
    { clock },
  );
  const tools = await m.tools();
  assert.equal(Object.keys(tools), ['fx__charge', 'fx__note', 'fx__decline', 'fx__hang', 'fx__grow']);
  assert.ok(
    said.some((l) =>
      /^mcp server "broken" could not start \(stdio: \/no\/such\/mcp-server --x\): .*ENOENT.*; its tools are unavailable, next attempt in 1 s/.test(l),
    ),
    said.join('\n'),
  );
  assert.is(await tools['fx__note']!.execute({ text: 'a' }, call()), 'noted: a');
  // the fixture dies
  process.kill(Number(lines(pids)[0]), 'SIGKILL');
  await waitFor(() => said.some((l) => l.startsWith('mcp server "fx" stopped (it closed')), { what: 'the death to be said' });
  const during = await m.tools();
  assert.is(during, tools, 'its tools stay listed during the backoff');
  assert.is(lines(pids).length, 1, 'not started again during its backoff');
  // a call during the backoff waits for it (its timeout, 60 s, allows), then starts the server
  const waiting = during['fx__note']!.execute({ text: 'c' }, call());
  await waitFor(() => clock.pendingTimers > 0, { what: 'the call to wait for the backoff' });
  await clock.advance(1_000);
  assert.is(await waiting, 'noted: c');
  assert.is(lines(pids).length, 2, 'started again');
  assert.ok(said.includes('mcp server "fx" started: 5 tools') && said.filter((l) => l.startsWith('mcp server "fx" started')).length === 2);
  await m.tools();
  await waitFor(() => said.filter((l) => l.startsWith('mcp server "broken" could not start')).length === 2, {
    what: 'the broken one to be tried again after its backoff too',
  });
});

s.run();
