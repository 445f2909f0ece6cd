/**
 * One MCP server through the official SDK client: started at its first use, its tools listed once
 * connected and again when it says they changed. One that cannot start or dies is said in the log
 * and started again at its next use after a backoff (docs/model-runner.md#mcp-servers).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode as McpErrorCode, McpError, ToolListChangedNotificationSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { sleep, type Clock } from '../../clock.ts';
import type { McpServerConfig } from './config.ts';
import { McpToolError } from '../../errors.ts';

export const DEFAULT_MCP_CONNECT_TIMEOUT_MS = 30_000;
const BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30_000;
/** The idempotency key of a durable call, in the request's `_meta`. */
export const IDEMPOTENCY_META = 'sessiond/idempotencyKey';

export interface ConnectionOptions {
  clock: Clock;
  /** A line about a server; `problem` for one that cannot start, stopped, or failed to list its tools. */
  log: (line: string, problem: boolean) => void;
  connectTimeoutMs: number;
}

export interface CallOptions {
  idempotencyKey: string | undefined;
  signal: AbortSignal;
  timeoutMs: number;
  /** The server's progress notifications for this call (sent with a progress token when given). */
  onProgress?: (p: { progress: number; total?: number; message?: string }) => void;
}

export class McpConnection {
  /** The tools the server listed last (kept while it restarts). */
  tools: readonly Tool[] | undefined;
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private failures = 0;
  private retryAt = 0;
  private lastError = '';
  private closed = false;
  /** Whether its first start has ended (listings wait for that one; a restart later holds no turn). */
  firstStartEnded = false;
  /** Aborted by `close()`: a start under way ends at once. */
  private readonly stopping = new AbortController();

  constructor(
    readonly config: McpServerConfig,
    private readonly options: ConnectionOptions,
  ) {}

  /** Connects if need be (not during a backoff) and returns the server's tools. */
  async listTools(): Promise<readonly Tool[]> {
    await this.connect();
    return this.tools ?? [];
  }

  /** Calls a tool: bounded by `timeoutMs` (the request is cancelled), aborted with `signal`. */
  async call(tool: string, args: unknown, o: CallOptions): Promise<CallToolResult> {
    const what = `mcp server "${this.config.name}"`;
    const started = this.options.clock.now();
    const wait = this.retryAt - started;
    if (!this.client && wait > 0 && wait < o.timeoutMs) await sleep(this.options.clock, wait, o.signal); // its restart is due within the call's time
    o.signal.throwIfAborted();
    const client = await this.connect();
    const timeout = Math.max(1, o.timeoutMs - (this.options.clock.now() - started));
    try {
      return (await client.callTool(
        {
          name: tool,
          arguments: (args ?? {}) as Record<string, unknown>,
          ...(o.idempotencyKey ? { _meta: { [IDEMPOTENCY_META]: o.idempotencyKey } } : {}),
        },
        undefined,
        // a server's progress notifications reach the call's ctx.progress (and reset nothing: the timeout bounds the call)
        { signal: o.signal, timeout, ...(o.onProgress ? { onprogress: (p: { progress: number; total?: number; message?: string }) => o.onProgress!(p) } : {}) },
      )) as CallToolResult;
    } catch (err) {
      if (o.signal.aborted) throw o.signal.reason;
      if (err instanceof McpError && err.code === McpErrorCode.RequestTimeout)
        throw new McpToolError(`${what} did not answer ${tool} within ${o.timeoutMs} ms (its timeoutMs): the call was cancelled`);
      if (!(err instanceof McpError)) this.lost(client, messageOf(err)); // the transport failed: start it again at the next use
      throw new McpToolError(`${what} failed on ${tool}: ${messageOf(err)}`);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort(new Error('the worker is stopping'));
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await client?.close().catch(() => {});
  }

  private connect(): Promise<Client> {
    if (this.closed) return Promise.reject(new McpToolError(`mcp server "${this.config.name}" is closed: the worker is stopping`));
    if (this.client) return Promise.resolve(this.client);
    if (this.connecting) return this.connecting;
    const wait = this.retryAt - this.options.clock.now();
    if (wait > 0)
      return Promise.reject(
        new McpToolError(`mcp server "${this.config.name}" is down (${this.lastError}); it is started again in ${Math.ceil(wait / 1000)} s`),
      );
    this.connecting = this.start().finally(() => {
      this.connecting = undefined;
      this.firstStartEnded = true;
    });
    return this.connecting;
  }

  get running(): boolean {
    return this.client !== undefined;
  }

  private async start(): Promise<Client> {
    const { name, transport: t } = this.config;
    const stderr: string[] = [];
    const transport: Transport =
      t.type === 'stdio'
        ? new StdioClientTransport({ command: t.command, args: t.args, stderr: 'pipe', ...(t.env ? { env: t.env } : {}), ...(t.cwd ? { cwd: t.cwd } : {}) })
        : new StreamableHTTPClientTransport(new URL(t.url), t.headers ? { requestInit: { headers: t.headers } } : undefined);
    if (transport instanceof StdioClientTransport)
      transport.stderr?.on('data', (chunk: Buffer) => {
        stderr.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        stderr.splice(0, Math.max(0, stderr.length - 5)); // its last lines say why it stopped
      });
    const client = new Client({ name: 'sessiond', version: '1' }, { capabilities: {} });
    client.onclose = () => this.lost(client, `it closed${stderr.length ? `; its stderr ended: ${stderr.join(' | ')}` : ''}`);
    try {
      const timeout = this.options.connectTimeoutMs;
      const signal = this.stopping.signal;
      await client.connect(transport, { timeout, signal });
      const tools = await listAll(client, timeout, signal);
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
        try {
          const changed = await listAll(client, timeout);
          if (this.client !== client) return;
          this.tools = changed;
          this.options.log(`mcp server "${name}" changed its tools: ${changed.length} tool${changed.length === 1 ? '' : 's'}`, false);
        } catch (err) {
          this.options.log(`mcp server "${name}" said its tools changed, but listing them failed: ${messageOf(err)}; the previous list stays`, true);
        }
      });
      if (this.closed) throw new Error('the worker is stopping');
      this.tools = tools;
      this.client = client;
      this.failures = 0;
      this.options.log(`mcp server "${name}" started: ${tools.length} tool${tools.length === 1 ? '' : 's'}`, false);
      return client;
    } catch (err) {
      client.onclose = undefined;
      await client.close().catch(() => {});
      const why = `${messageOf(err)}${stderr.length ? `; its stderr ended: ${stderr.join(' | ')}` : ''}`;
      const delay = this.backoff(why);
      if (this.closed) throw new McpToolError(`mcp server "${name}" is closed: the worker is stopping`);
      this.options.log(
        `mcp server "${name}" could not start (${describe(t)}): ${why}; its tools are unavailable, next attempt in ${delay / 1000} s at the earliest`,
        true,
      );
      throw new McpToolError(`mcp server "${name}" could not start: ${why}`);
    }
  }

  /** The server's connection ended (its process exited, its endpoint failed): start it again at the next use, after a backoff. */
  private lost(client: Client, why: string): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.onclose = undefined;
    void client.close().catch(() => {});
    if (this.closed) return;
    const delay = this.backoff(why);
    this.options.log(`mcp server "${this.config.name}" stopped (${why}); it is started again at its next use, in ${delay / 1000} s at the earliest`, true);
  }

  private backoff(why: string): number {
    this.failures++;
    this.lastError = why;
    const delay = Math.min(MAX_BACKOFF_MS, BACKOFF_MS * 2 ** (this.failures - 1));
    this.retryAt = this.options.clock.now() + delay;
    return delay;
  }
}

async function listAll(client: Client, timeout: number, signal?: AbortSignal): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : {}, { timeout, ...(signal ? { signal } : {}) });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

function describe(t: McpServerConfig['transport']): string {
  return t.type === 'stdio' ? `stdio: ${[t.command, ...t.args].join(' ')}` : `Streamable HTTP: ${t.url}`;
}

function messageOf(err: unknown): string {
  const code = (err as { code?: unknown } | undefined)?.code;
  const status = err instanceof StreamableHTTPError && typeof code === 'number' && code >= 100 ? ` (HTTP ${code})` : '';
  const m = `${err instanceof Error ? err.message : String(err)}${status}`;
  const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return `${m}${cause}`.replace(/\s*\n\s*/g, ' ');
}
