/**
 * The `--mcp` file: the hosts' `mcpServers` JSON with sessiond's own fields, bad input refused
 * with the file, the entry and what to fix; the model-facing tool names.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseMcpConfig, repeatedKey } from '../../src/runner/mcp/config.ts';
import { mcpToolName } from '../../src/runner/mcp/names.ts';

const parse = (v: unknown) => parseMcpConfig(typeof v === 'string' ? v : JSON.stringify(v), 'mcp.json');
const refused = (v: unknown, message: RegExp) => {
  try {
    parse(v);
  } catch (err) {
    assert.match((err as Error).message, message);
    return;
  }
  assert.unreachable(`accepted: ${JSON.stringify(v)}`);
};

test('mcp config - stdio and Streamable HTTP servers, with the settings of each tool', () => {
  const c = parse({
    mcpServers: {
      files: { command: 'npx', args: ['-y', 'server'], env: { A: '1' }, cwd: '/tmp' },
      search: { url: 'http://127.0.0.1:3001/mcp', headers: { Authorization: 'Bearer x' }, needsApproval: ['delete'], durable: false, timeoutMs: 500 },
      pay: { type: 'stdio', command: 'pay', needsApproval: true, tools: { refund: { needsApproval: false, durable: false, timeoutMs: 9 } } },
    },
  });
  assert.equal(
    c.servers.map((s) => [s.name, s.transport.type]),
    [
      ['files', 'stdio'],
      ['search', 'http'],
      ['pay', 'stdio'],
    ],
  );
  assert.equal(c.servers[0]!.transport, { type: 'stdio', command: 'npx', args: ['-y', 'server'], env: { A: '1' }, cwd: '/tmp' });
  assert.equal(c.servers[0]!.settings('read'), { needsApproval: false, durable: true, timeoutMs: 60_000 }, 'durable by default, 60 s');
  assert.equal(c.servers[1]!.settings('delete'), { needsApproval: true, durable: false, timeoutMs: 500 });
  assert.equal(c.servers[1]!.settings('find'), { needsApproval: false, durable: false, timeoutMs: 500 });
  assert.equal(c.servers[2]!.settings('charge'), { needsApproval: true, durable: true, timeoutMs: 60_000 });
  assert.equal(c.servers[2]!.settings('refund'), { needsApproval: false, durable: false, timeoutMs: 9 });
});

test('mcp config - bad input is refused with the file, the entry and what to fix', () => {
  refused('{"mcpServers": {', /^mcp\.json is not valid JSON \(.+\): write \{"mcpServers"/);
  refused('{"mcpServers": {"a": {"command": "x"}, "a": {"url": "http://h/mcp"}}}', /mcp\.json: "a" appears twice in mcpServers: give each entry its own name/);
  refused({ servers: {} }, /mcp\.json: servers: unknown field: the file holds only "mcpServers"/);
  refused({ mcpServers: [] }, /mcpServers: expected an object of servers by name/);
  refused({ mcpServers: { a: { type: 'sse', url: 'http://h/sse' } } }, /mcpServers\.a: the SSE transport .* is not supported/);
  refused({ mcpServers: { a: { type: 'websocket', url: 'ws://h' } } }, /mcpServers\.a: unknown transport type "websocket": use "stdio" .* or "http"/);
  refused({ mcpServers: { a: { args: ['x'] } } }, /mcpServers\.a: names no transport: give "command" .* or "url"/);
  refused({ mcpServers: { a: { command: 'x', url: 'http://h/mcp' } } }, /mcpServers\.a: has both stdio and HTTP fields \("url"\)/);
  refused({ mcpServers: { a: { command: 'x', disabled: true } } }, /mcpServers\.a: unknown field "disabled": the fields are command, args, env, cwd, type/);
  refused({ mcpServers: { a: { command: 'x', args: 'y' } } }, /mcpServers\.a: "args" must be a list of strings/);
  refused({ mcpServers: { a: { command: 'x', env: { N: 1 } } } }, /"env" must be an object of string values/);
  refused({ mcpServers: { a: { url: 'ftp://h' } } }, /mcpServers\.a: "url" must be the server's http:\/\/ or https:\/\/ endpoint/);
  refused({ mcpServers: { a: { command: 'x', timeoutMs: 0 } } }, /"timeoutMs" must be a whole number of milliseconds >= 1/);
  refused({ mcpServers: { a: { command: 'x', durable: 'yes' } } }, /"durable" must be true or false/);
  refused({ mcpServers: { a: { command: 'x', needsApproval: 'all' } } }, /"needsApproval" must be true, false or a list of tool names/);
  refused({ mcpServers: { a: { command: 'x', tools: { t: { retries: 1 } } } } }, /mcpServers\.a: tools\.t: unknown field "retries"/);
  for (const name of ['my server', 'a__b', 'x'.repeat(41), '', 'ü'])
    refused({ mcpServers: { [name]: { command: 'x' } } }, /a server name must make tool names \(<server>__<tool>\): use 1 to 40 letters/);
});

test('mcp config - a repeated key is found at any depth, never inside strings', () => {
  assert.is(repeatedKey('{"a": {"b": 1, "c": {"b": 2}}, "d": "\\"a\\": 1, \\"a\\""}'), undefined);
  assert.equal(repeatedKey('{"s": {"x": {"env": {"K": "1", "K": "2"}}}}'), { key: 'K', path: 's.x.env' });
  assert.equal(repeatedKey('{"a": 1, "a": 2}'), { key: 'a', path: 'the file' });
});

test('mcp names - <server>__<tool>, sanitized, at most 64 characters, stable and without collisions', () => {
  const taken = new Set<string>();
  assert.is(mcpToolName('fs', 'read_file', taken), 'fs__read_file');
  assert.is(mcpToolName('fs', 'get-sum', taken), 'fs__get-sum');
  assert.match(mcpToolName('fs', 'read.file', taken), /^fs__read_file_[0-9a-f]{8}$/, 'read_file took the plain name');
  const long = mcpToolName('server', 'x'.repeat(100), new Set());
  assert.is(long.length, 64);
  assert.match(long, /^server__x+_[0-9a-f]{8}$/);
  assert.is(mcpToolName('server', 'x'.repeat(100), new Set()), long, 'stable');
  const names = ['a b', 'a.b', 'a/b'].map((t) => mcpToolName('s', t, taken));
  assert.is(new Set(names).size, 3, `no two tools share a name: ${names.join(', ')}`);
  for (const n of [...taken]) assert.match(n, /^[A-Za-z0-9_-]{1,64}$/);
});

test.run();
