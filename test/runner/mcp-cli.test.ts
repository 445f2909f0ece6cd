/**
 * `sessiond start --runner openai --mcp FILE` as a real process: MCP tools in a conversation (the
 * fixture server and server-everything over stdio), the servers closed with the worker (no orphan
 * processes), a worker SIGKILLed while MCP calls run (the durable one retried once with its key,
 * the other answered interrupted), a server that cannot start, and a bad file refused at start.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { childrenOf, everythingStdio, fixtureEntry } from '../support/mcp.ts';
import { startFakeOpenAI, messageText } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
const said = (messages: { role: string }[]) => messages.map((m) => `${m.role}: ${messageText(m as never)}`);

/** The MCP servers `pid` runs: its children running the fixture or server-everything. */
const serversOf = (pid: number) => childrenOf(pid, /mcp-server\.ts|server-everything/);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '); // a zombie has exited
  } catch {
    return false;
  }
};

function mcpFile(dir: ReturnType<typeof tempDir>, name: string, servers: Record<string, unknown>): string {
  const file = dir.file(name);
  writeFileSync(file, JSON.stringify({ mcpServers: servers }, null, 2));
  return file;
}

const workerFlags = (db: string, url: string, mcp: string, extra: string[] = []) => [
  'start',
  '--db',
  db,
  '--runner',
  'openai',
  '--model',
  'fake-model',
  '--base-url',
  url,
  '--mcp',
  mcp,
  ...extra,
];

test('cli - start --mcp: MCP tools in a conversation; SIGTERM closes the servers (no orphan processes)', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  const log = tmp.file('calls.log');
  // STAY_ALIVE: the fixture outlives its stdin's end, so only the worker's close stops it
  const mcp = mcpFile(tmp, 'mcp.json', { fx: fixtureEntry({ LOG_FILE: log, STAY_ALIVE: '1' }), every: everythingStdio() });
  const db = tmp.file('mcp.db');
  server.script(
    {
      kind: 'toolCalls',
      calls: [
        { id: 'call_sum', name: 'every__get-sum', arguments: { a: 2, b: 3 } },
        { id: 'call_charge', name: 'fx__charge', arguments: { cents: 250 } },
      ],
    },
    { kind: 'text', text: 'Charged 2.50; 2 + 3 = 5.' },
  );
  const worker = startCli(workerFlags(db, server.url, mcp));
  try {
    await worker.waitFor('send it a prompt');
    assert.is(serversOf(worker.child.pid!).length, 0, 'no server starts before a turn needs one');
    await runCli(['prompt', 'ses_mcp', 'charge 2.50 and add 2 and 3', '--db', db]);
    await worker.waitFor('ses_mcp  turn succeeded');
    assert.match(worker.output(), 'mcp server "fx" started: 5 tools');
    assert.match(worker.output(), /mcp server "every" started: \d+ tools/);
    const names = server.requests[0]!.chat!.tools!.map((t) => t.function.name);
    assert.ok(names.includes('fx__charge') && names.includes('every__get-sum'), names.join(', '));
    const results = said(server.requests[1]!.chat!.messages).filter((m) => m.startsWith('tool: '));
    assert.ok(
      results.some((m) => m.includes('The sum of 2 and 3 is 5.')),
      results.join(' | '),
    );
    assert.ok(
      results.some((m) => m.includes('"structuredContent":{"charged":250}')),
      results.join(' | '),
    );
    assert.match(lines(log)[0]!, /^charge \S+ \{"cents":250\}$/);
    const children = serversOf(worker.child.pid!);
    assert.is(children.length, 2, "both servers run as the worker's children");
    worker.child.kill('SIGTERM');
    assert.is(await worker.exited, 0);
    await waitFor(() => children.every((pid) => !alive(pid)), { timeoutMs: 10_000, what: 'the servers to exit with the worker' });
  } finally {
    worker.child.kill('SIGKILL');
    await server.close();
    tmp.remove();
  }
});

test('cli - a worker SIGKILLed while MCP calls run: the durable one runs again once with its key (in _meta), the other is answered interrupted', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  const log = tmp.file('calls.log');
  const settings = { tools: { note: { durable: false } } };
  const hanging = mcpFile(tmp, 'a.json', { fx: fixtureEntry({ LOG_FILE: log, HANG: '1' }, settings) });
  const healthy = mcpFile(tmp, 'b.json', { fx: fixtureEntry({ LOG_FILE: log }, settings) });
  const db = tmp.file('crash.db');
  const leases = ['--lease-ms', '1500', '--heartbeat-ms', '500', '--sweep-ms', '300'];
  server.script({
    kind: 'toolCalls',
    calls: [
      { id: 'call_c', name: 'fx__charge', arguments: { cents: 500 } },
      { id: 'call_n', name: 'fx__note', arguments: { text: 'charged' } },
    ],
  });
  const a = startCli(workerFlags(db, server.url, hanging, leases));
  let b: ReturnType<typeof startCli> | undefined;
  try {
    await a.waitFor('send it a prompt');
    await runCli(['prompt', 'ses_crash', 'charge 5 dollars and note it', '--db', db]);
    await waitFor(() => lines(log).length === 2, { timeoutMs: 20_000, what: 'both calls to reach the server' });
    const orphans = serversOf(a.child.pid!);
    a.child.kill('SIGKILL');
    await a.exited;
    await waitFor(() => orphans.every((pid) => !alive(pid)), { timeoutMs: 10_000, what: "the killed worker's server to exit (its stdin closed)" });
    server.script({ kind: 'text', text: 'Charged 5 dollars.' });
    b = startCli(workerFlags(db, server.url, healthy, leases));
    await b.waitFor('ses_crash  turn succeeded', 30_000);
    const charges = lines(log).filter((l) => l.startsWith('charge '));
    assert.is(charges.length, 2, `the durable call ran again once: ${lines(log).join(' | ')}`);
    const key = charges[0]!.split(' ')[1]!;
    assert.ok(key !== '-', 'the key reached the server in _meta');
    assert.equal(charges, [`charge ${key} {"cents":500}`, `charge ${key} {"cents":500}`], 'with the same key');
    assert.is(lines(log).filter((l) => l.startsWith('note ')).length, 1, 'the non-durable call was not run again');
    const resumed = said(server.requests[1]!.chat!.messages);
    assert.ok(
      resumed.some((m) => m.includes('"structuredContent":{"charged":500}')),
      resumed.join(' | '),
    );
    assert.ok(
      resumed.some((m) => m.startsWith('tool: interrupted: the call was cut off') && m.includes('it was not run again')),
      resumed.join(' | '),
    );
  } finally {
    a.child.kill('SIGKILL');
    b?.child.kill('SIGTERM');
    await b?.exited;
    await server.close();
    tmp.remove();
  }
});

test('cli - a server that cannot start is said in the log (which, why); the worker runs the turn with the other tools', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  const mcp = mcpFile(tmp, 'mcp.json', {
    broken: { command: process.execPath, args: ['-e', 'console.error("missing API_KEY"); process.exit(3)'] },
    every: everythingStdio(),
  });
  const db = tmp.file('broken.db');
  server.script({ kind: 'text', text: 'Hello without the broken tools.' });
  const worker = startCli(workerFlags(db, server.url, mcp));
  try {
    await worker.waitFor('send it a prompt');
    await runCli(['prompt', 'ses_b', 'hello', '--db', db]);
    await worker.waitFor('ses_b  turn succeeded');
    assert.match(worker.output(), /mcp server "broken" could not start \(stdio: .*\): .*its stderr ended: missing API_KEY; its tools are unavailable/);
    const names = server.requests[0]!.chat!.tools!.map((t) => t.function.name);
    assert.ok(names.length > 0 && names.every((n) => n.startsWith('every__')), names.join(', '));
  } finally {
    worker.child.kill('SIGTERM');
    await worker.exited;
    await server.close();
    tmp.remove();
  }
});

test('cli - a bad --mcp file is refused at start with the file, the entry and what to fix', async () => {
  const tmp = tempDir();
  const db = tmp.file('bad.db');
  const cases: [string, RegExp][] = [
    ['{"mcpServers": {"a": ', /bad\.json is not valid JSON/],
    ['{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', /bad\.json: "a" appears twice in mcpServers: give each entry its own name/],
    ['{"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}', /bad\.json: mcpServers\.a: the SSE transport/],
    ['{"mcpServers": {"my server": {"command": "x"}}}', /bad\.json: mcpServers\.my server: a server name must make tool names/],
  ];
  try {
    for (const [text, message] of cases) {
      writeFileSync(tmp.file('bad.json'), text);
      const r = await runCli(['start', '--db', db, '--runner', 'openai', '--model', 'm', '--mcp', tmp.file('bad.json')]);
      assert.is.not(r.code, 0, text);
      assert.match(r.stderr, message);
    }
    const r = await runCli(['start', '--db', db, '--mcp', tmp.file('bad.json')]);
    assert.match(r.stderr, /--mcp, --system.* apply to --runner openai only/);
  } finally {
    tmp.remove();
  }
});

test.run();
