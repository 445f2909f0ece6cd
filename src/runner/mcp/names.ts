/**
 * The names the model calls MCP tools by: `<server>__<tool>`, the tool's name with every character
 * a provider refuses (anything but letters, digits, `_` and `-`) made `_`. A name longer than 64
 * characters, or one another tool of the server already took, is cut and ends with `_` and 8 hex
 * digits of the original name's hash, so it stays stable from one listing to the next.
 */
import { createHash } from 'node:crypto';

export const SEPARATOR = '__';
const MAX = 64;
/** A server name: it starts every tool name of the server, so it has no `__` and leaves room for the tool's. */
export const SERVER_NAME = /^(?!.*__)[A-Za-z0-9_-]{1,40}$/;

/** The model-facing name of `tool` of `server`, not one of `taken` (which it joins). */
export function mcpToolName(server: string, tool: string, taken: Set<string>): string {
  const plain = `${server}${SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  let name = plain;
  for (let n = 0; name.length > MAX || taken.has(name); n++) {
    const hash = createHash('sha256')
      .update(`${server}/${tool}${n === 0 ? '' : `#${n}`}`)
      .digest('hex')
      .slice(0, 8);
    name = `${plain.slice(0, MAX - 9)}_${hash}`;
  }
  taken.add(name);
  return name;
}
