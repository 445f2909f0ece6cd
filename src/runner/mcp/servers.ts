/**
 * The MCP servers of a worker as tool sources: `tools()` (each turn) starts what is not running and
 * answers their tools as one registry (`<server>__<tool>`, names.ts), each call going to its server
 * with its idempotency key; a server that is down keeps its last tools, failing with a clear error
 * (docs/model-runner.md#mcp-servers).
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { JSONSchema7 } from 'ai';
import { systemClock, type Clock } from '../../clock.ts';
import { jsonInput, type ModelTool, type ToolRegistry } from '../model/tools.ts';
import type { ToolContext } from '../types.ts';
import { checkMcpConfig, type McpConfig } from './config.ts';
import { DEFAULT_MCP_CONNECT_TIMEOUT_MS, McpConnection } from './connection.ts';
import { mcpToolName } from './names.ts';
import { toolOutput } from './results.ts';

export interface McpServersOptions {
  /** Where the servers' starts, failures (`problem`) and restarts are said (default: stderr). */
  log?: (line: string, problem: boolean) => void;
  clock?: Clock;
  /** How long a server may take to start and list its tools (default 30 s). */
  connectTimeoutMs?: number;
}

export interface McpServers {
  readonly config: McpConfig;
  /** The servers' tools (starting the servers not running); rejects only when `signal` aborts. */
  tools(signal?: AbortSignal): Promise<ToolRegistry>;
  /** Ends every server (stdio processes exit). */
  close(): Promise<void>;
}

/** The servers of a checked config (`loadMcpConfig`), or of an `{ mcpServers }` object. */
export function mcpServers(config: McpConfig | { mcpServers: unknown }, options: McpServersOptions = {}): McpServers {
  const checked = 'servers' in config ? config : checkMcpConfig(config, 'the mcp option');
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const connections = checked.servers.map(
    (s) => new McpConnection(s, { clock: options.clock ?? systemClock, log, connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_MCP_CONNECT_TIMEOUT_MS }),
  );
  const validators = new AjvJsonSchemaValidator();
  let listed: (readonly Tool[] | undefined)[] = [];
  let registry: ToolRegistry = {};

  const build = (): ToolRegistry => {
    const out: Record<string, ModelTool> = {};
    for (const conn of connections) {
      const taken = new Set<string>();
      for (const tool of conn.tools ?? []) out[mcpToolName(conn.config.name, tool.name, taken)] = modelTool(conn, tool, validators);
    }
    return out;
  };

  return {
    config: checked,
    async tools(signal) {
      // the first listing waits for each server's start; later, one down is started again without holding the turn
      const all = Promise.all(
        connections.map((c) => {
          const wait = c.running || !c.firstStartEnded;
          const listing = c.listTools().catch(() => undefined);
          return wait ? listing : undefined;
        }),
      );
      if (signal) {
        signal.throwIfAborted();
        let onAbort = () => {};
        const aborted = new Promise<never>((_, reject) => {
          onAbort = () => reject(signal.reason);
          signal.addEventListener('abort', onAbort, { once: true });
        });
        await Promise.race([all, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
      } else await all;
      const now = connections.map((c) => c.tools);
      if (now.some((t, i) => t !== listed[i])) {
        listed = now;
        registry = build();
      }
      return registry;
    },
    async close() {
      await Promise.all(connections.map((c) => c.close()));
    },
  };
}

/** One MCP tool as a model tool: its JSON schema (checked with ajv), its settings, its calls through the connection. */
function modelTool(conn: McpConnection, tool: Tool, validators: AjvJsonSchemaValidator): ModelTool {
  const settings = conn.config.settings(tool.name);
  const schema = { ...tool.inputSchema, type: 'object', properties: tool.inputSchema.properties ?? {} } as JSONSchema7;
  let validate: (input: unknown) => string | undefined = () => undefined;
  try {
    const check = validators.getValidator(schema as never);
    validate = (input) => {
      const r = check(input);
      return r.valid ? undefined : r.errorMessage;
    };
  } catch {
    // a schema ajv cannot compile: the server checks the input itself
  }
  const what = `mcp tool ${tool.name} of server "${conn.config.name}"`;
  return {
    description: tool.description || tool.title || `${tool.name} (from the MCP server "${conn.config.name}")`,
    inputSchema: jsonInput(schema, validate),
    durable: settings.durable,
    ...(settings.needsApproval ? { needsApproval: true } : {}),
    execute: async (input, ctx) =>
      toolOutput(
        await conn.call(tool.name, input, {
          idempotencyKey: ctx.idempotencyKey,
          signal: ctx.signal,
          timeoutMs: settings.timeoutMs,
          onProgress: (p) => reportProgress(ctx, p),
        }),
        what,
      ),
  };
}

/** A server's progress notification as the call's progress; one the live event cannot carry (a negative count) is left out. */
function reportProgress(ctx: ToolContext, p: { progress: number; total?: number; message?: string }): void {
  try {
    ctx.progress(p);
  } catch {
    /* the server's own bookkeeping: the call goes on */
  }
}
