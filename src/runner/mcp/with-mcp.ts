/**
 * A model runner whose tools include MCP servers': at the start of each turn the servers' tools are
 * listed (the servers start at the first turn: a worker with no turn starts none), and the runner
 * is built again when the listing changed. Local tools keep their names: a local tool named like
 * a server's tools (`<server>__...`) is refused at start.
 */
import { SessiondError, ErrorCode } from '../../errors.ts';
import type { Runner } from '../types.ts';
import type { ToolRegistry } from '../model/tools.ts';
import { SEPARATOR } from './names.ts';
import type { McpServers } from './servers.ts';

export function withMcpTools(mcp: McpServers, local: ToolRegistry, build: (tools: ToolRegistry) => Runner): Runner {
  for (const name of Object.keys(local)) {
    const server = mcp.config.servers.find((s) => name.startsWith(`${s.name}${SEPARATOR}`));
    if (server)
      throw new SessiondError(
        ErrorCode.InvalidOption,
        `The tool "${name}" clashes with the tools of the MCP server "${server.name}" in ${mcp.config.source} (named ${server.name}${SEPARATOR}<tool>): rename the tool or the server.`,
      );
  }
  let listed: ToolRegistry | undefined;
  let runner: Runner | undefined;
  return async (ctx) => {
    const remote = await mcp.tools(ctx.signal);
    if (!runner || remote !== listed) {
      listed = remote;
      runner = build({ ...remote, ...local });
    }
    return runner(ctx);
  };
}
