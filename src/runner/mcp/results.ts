/**
 * An MCP tool result as the tool output the model reads (and the log keeps). Text only: the text
 * (parts joined by newlines). Anything else: `{ content: [...], structuredContent? }` where a text
 * part is its string, a resource link or a text resource is kept as it came, and images, audio and
 * binary resources are described (type, MIME type, size) without their bytes: the log keeps no
 * media and the chat API takes no image in a tool result. `isError: true` is a tool error.
 */
import { McpToolError } from '../../errors.ts';

interface ContentPart {
  type: string;
  [key: string]: unknown;
}

/** The output of a result; throws `McpToolError` for an error result. */
export function toolOutput(result: { content?: unknown; structuredContent?: unknown; isError?: unknown; toolResult?: unknown }, what: string): unknown {
  const content = Array.isArray(result.content) ? (result.content as ContentPart[]) : [];
  if (result.isError === true) {
    const text = content
      .filter((c) => c.type === 'text')
      .map((c) => String(c['text']))
      .join('\n');
    throw new McpToolError(`${what} answered with an error: ${text || 'no message'}`);
  }
  if (!Array.isArray(result.content) && 'toolResult' in result) return result.toolResult ?? null; // a server of protocol 2024-10-07
  const structured = result.structuredContent;
  if (structured === undefined && content.every((c) => c.type === 'text')) return content.map((c) => String(c['text'])).join('\n');
  return { content: content.map(part), ...(structured !== undefined ? { structuredContent: structured } : {}) };
}

function part(c: ContentPart): unknown {
  switch (c.type) {
    case 'text':
      return String(c['text']);
    case 'image':
    case 'audio':
      return { type: c.type, mimeType: c['mimeType'], bytes: base64Bytes(c['data']), note: `${c.type} data not shown to the model` };
    case 'resource_link': {
      const { type, uri, name, description, mimeType } = c;
      return { type, uri, name, ...(description !== undefined ? { description } : {}), ...(mimeType !== undefined ? { mimeType } : {}) };
    }
    case 'resource': {
      const r = (c['resource'] ?? {}) as Record<string, unknown>;
      const base = { type: 'resource', uri: r['uri'], ...(r['mimeType'] !== undefined ? { mimeType: r['mimeType'] } : {}) };
      if (typeof r['text'] === 'string') return { ...base, text: r['text'] };
      return { ...base, bytes: base64Bytes(r['blob']), note: 'binary resource not shown to the model' };
    }
    default:
      return { type: c.type, note: 'a content type sessiond does not show to the model' };
  }
}

function base64Bytes(data: unknown): number {
  if (typeof data !== 'string') return 0;
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}
