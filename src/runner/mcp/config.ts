/**
 * The `--mcp FILE`: the `mcpServers` JSON MCP hosts use, with sessiond's own fields (`needsApproval`,
 * `durable`, `timeoutMs`, per server and per tool), checked whole before anything starts; anything
 * else is refused with the file, the entry and what to fix. The format: docs/model-runner.md#mcp-servers.
 */
import { readFileSync } from 'node:fs';
import { SessiondError, ErrorCode } from '../../errors.ts';
import { SERVER_NAME } from './names.ts';

export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

export type McpTransport =
  | { type: 'stdio'; command: string; args: string[]; env?: Record<string, string>; cwd?: string }
  | { type: 'http'; url: string; headers?: Record<string, string> };

export interface McpToolSettings {
  needsApproval: boolean;
  durable: boolean;
  timeoutMs: number;
}

export interface McpServerConfig {
  name: string;
  transport: McpTransport;
  /** The settings of each tool of this server (server-wide, with the per-tool overrides). */
  settings(tool: string): McpToolSettings;
}

export interface McpConfig {
  /** Where it came from (the file, or `mcp option` for the API). */
  source: string;
  servers: McpServerConfig[];
}

const STDIO = ['command', 'args', 'env', 'cwd'];
const HTTP = ['url', 'headers'];
const OWN = ['type', 'needsApproval', 'durable', 'timeoutMs', 'tools'];
const TOOL_FIELDS = ['needsApproval', 'durable', 'timeoutMs'];
const TYPES: Record<string, 'stdio' | 'http'> = { stdio: 'stdio', http: 'http', 'streamable-http': 'http', streamableHttp: 'http' };

/** Reads and checks an `--mcp` file. */
export function loadMcpConfig(path: string): McpConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SessiondError(ErrorCode.InvalidOption, `--mcp ${path}: cannot read it (${(err as Error).message}).`);
  }
  return parseMcpConfig(text, path);
}

/** Checks the text of an `mcpServers` file (`source` names it in every error). */
export function parseMcpConfig(text: string, source: string): McpConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `${source} is not valid JSON (${(err as Error).message}): write {"mcpServers": {"name": {"command": "...", "args": [...]}}}.`,
    );
  }
  const repeated = repeatedKey(text);
  if (repeated)
    throw new SessiondError(ErrorCode.InvalidOption, `${source}: "${repeated.key}" appears twice in ${repeated.path}: give each entry its own name.`);
  return checkMcpConfig(raw, source);
}

/** Checks an `mcpServers` object (the file's content, or the API's `mcp` option). */
export function checkMcpConfig(raw: unknown, source: string): McpConfig {
  const fail = (where: string, what: string) => new SessiondError(ErrorCode.InvalidOption, `${source}: ${where}: ${what}.`);
  if (!isObject(raw)) throw fail('the file', 'expected an object {"mcpServers": {...}}');
  for (const key of Object.keys(raw)) if (key !== 'mcpServers') throw fail(key, 'unknown field: the file holds only "mcpServers"');
  const entries = raw['mcpServers'];
  if (!isObject(entries)) throw fail('mcpServers', 'expected an object of servers by name');
  const servers = Object.entries(entries).map(([name, entry]) => checkServer(name, entry, (what) => fail(`mcpServers.${name}`, what)));
  return { source, servers };
}

function checkServer(name: string, entry: unknown, fail: (what: string) => SessiondError): McpServerConfig {
  if (!SERVER_NAME.test(name)) throw fail('a server name must make tool names (<server>__<tool>): use 1 to 40 letters, digits, _ or -, with no "__"');
  if (!isObject(entry)) throw fail('expected an object with "command" (stdio) or "url" (Streamable HTTP)');
  const type = entry['type'];
  if (type === 'sse')
    throw fail('the SSE transport (deprecated by MCP) is not supported: use the server\'s Streamable HTTP endpoint ("url") or stdio ("command")');
  if (type !== undefined && (typeof type !== 'string' || !(type in TYPES)))
    throw fail(`unknown transport type ${JSON.stringify(type)}: use "stdio" (with "command") or "http" (with "url")`);
  const kind = type === undefined ? ('command' in entry ? 'stdio' : 'url' in entry ? 'http' : undefined) : TYPES[type as string];
  if (!kind) throw fail('names no transport: give "command" (a stdio server) or "url" (a Streamable HTTP server)');
  const allowed = [...(kind === 'stdio' ? STDIO : HTTP), ...OWN];
  for (const key of Object.keys(entry)) {
    if (allowed.includes(key)) continue;
    const other = kind === 'stdio' ? HTTP.includes(key) : STDIO.includes(key);
    throw fail(
      other
        ? `has both stdio and HTTP fields ("${key}"): a server is either {"command", "args", "env", "cwd"} or {"url", "headers"}`
        : `unknown field "${key}": the fields are ${allowed.join(', ')}`,
    );
  }
  const transport = kind === 'stdio' ? stdio(entry, fail) : http(entry, fail);
  const base = {
    needsApproval: entry['needsApproval'] === true,
    durable: flag(entry['durable'], 'durable', true, fail),
    timeoutMs: timeout(entry['timeoutMs'], 'timeoutMs', DEFAULT_MCP_TIMEOUT_MS, fail),
  };
  const approvalList = entry['needsApproval'];
  if (approvalList !== undefined && typeof approvalList !== 'boolean' && !isStrings(approvalList))
    throw fail('"needsApproval" must be true, false or a list of tool names');
  const perTool = new Map<string, Partial<McpToolSettings>>();
  const tools = entry['tools'];
  if (tools !== undefined) {
    if (!isObject(tools)) throw fail('"tools" must be an object of per-tool settings by tool name');
    for (const [tool, s] of Object.entries(tools)) {
      const at = (what: string) => fail(`tools.${tool}: ${what}`);
      if (!isObject(s)) throw at('expected an object such as {"needsApproval": true, "durable": false, "timeoutMs": 5000}');
      for (const key of Object.keys(s)) if (!TOOL_FIELDS.includes(key)) throw at(`unknown field "${key}": the fields are ${TOOL_FIELDS.join(', ')}`);
      perTool.set(tool, {
        ...(s['needsApproval'] !== undefined ? { needsApproval: flag(s['needsApproval'], 'needsApproval', false, at) } : {}),
        ...(s['durable'] !== undefined ? { durable: flag(s['durable'], 'durable', true, at) } : {}),
        ...(s['timeoutMs'] !== undefined ? { timeoutMs: timeout(s['timeoutMs'], 'timeoutMs', DEFAULT_MCP_TIMEOUT_MS, at) } : {}),
      });
    }
  }
  const listed = Array.isArray(approvalList) ? new Set(approvalList) : undefined;
  return {
    name,
    transport,
    settings: (tool) => ({
      ...base,
      ...(listed ? { needsApproval: listed.has(tool) } : {}),
      ...perTool.get(tool),
    }),
  };
}

function stdio(entry: Record<string, unknown>, fail: (what: string) => SessiondError): McpTransport {
  const { command, args, env, cwd } = entry;
  if (typeof command !== 'string' || command.length === 0) throw fail('"command" must be the program to run, e.g. "npx" or "/usr/local/bin/my-server"');
  if (args !== undefined && !isStrings(args)) throw fail('"args" must be a list of strings');
  if (env !== undefined && !isStringMap(env)) throw fail('"env" must be an object of string values, e.g. {"API_KEY": "..."}');
  if (cwd !== undefined && (typeof cwd !== 'string' || cwd.length === 0)) throw fail('"cwd" must be a directory path');
  return { type: 'stdio', command, args: (args as string[] | undefined) ?? [], ...(env ? { env } : {}), ...(cwd ? { cwd } : {}) };
}

function http(entry: Record<string, unknown>, fail: (what: string) => SessiondError): McpTransport {
  const { url, headers } = entry;
  let parsed: URL | undefined;
  try {
    parsed = typeof url === 'string' ? new URL(url) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    throw fail(`"url" must be the server's http:// or https:// endpoint, e.g. "http://127.0.0.1:3001/mcp" (got ${JSON.stringify(url)})`);
  if (headers !== undefined && !isStringMap(headers)) throw fail('"headers" must be an object of string values, e.g. {"Authorization": "Bearer ..."}');
  return { type: 'http', url: parsed.href, ...(headers ? { headers } : {}) };
}

function flag(v: unknown, key: string, dflt: boolean, fail: (what: string) => SessiondError): boolean {
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw fail(`"${key}" must be true or false`);
  return v;
}

function timeout(v: unknown, key: string, dflt: number, fail: (what: string) => SessiondError): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw fail(`"${key}" must be a whole number of milliseconds >= 1 (default ${dflt})`);
  return v;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');
const isStringMap = (v: unknown): v is Record<string, string> => isObject(v) && Object.values(v).every((s) => typeof s === 'string');

/** The first key repeated within one object of valid JSON text (JSON.parse keeps the last silently), with the path of that object. */
export function repeatedKey(text: string): { key: string; path: string } | undefined {
  const stack: { keys: Set<string> | undefined; path: string; pending: string | undefined }[] = [];
  let i = 0;
  const readString = (): string => {
    const start = i;
    for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  while (i < text.length) {
    const c = text[i]!;
    const top = stack.at(-1);
    if (c === '{' || c === '[') {
      const path = top ? (top.keys ? `${top.path}.${top.pending ?? ''}` : `${top.path}[]`) : '';
      stack.push({ keys: c === '{' ? new Set() : undefined, path: path.replace(/^\./, ''), pending: undefined });
      i++;
    } else if (c === '}' || c === ']') {
      stack.pop();
      i++;
    } else if (c === '"') {
      const s = readString();
      let j = i;
      while (/\s/.test(text[j] ?? '')) j++;
      if (top?.keys && text[j] === ':') {
        if (top.keys.has(s)) return { key: s, path: top.path || 'the file' };
        top.keys.add(s);
        top.pending = s;
      }
    } else i++;
  }
  return undefined;
}
