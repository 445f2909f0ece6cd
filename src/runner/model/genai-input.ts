/**
 * The conversation a model request sends (AI SDK `ModelMessage`s) as OpenTelemetry's GenAI
 * conventions record it on a `chat` span when contents are captured: each message a role and typed
 * parts (text, reasoning, tool calls, tool results; images and files by their kind and media type,
 * never their bytes).
 */
import type { ModelMessage } from 'ai';
import type { ModelInput } from '../types.ts';

type Part = Record<string, unknown>;

function partOf(p: Record<string, unknown>): Part {
  switch (p.type) {
    case 'text':
      return { type: 'text', content: p.text };
    case 'reasoning':
      return { type: 'reasoning', content: p.text };
    case 'tool-call':
      return { type: 'tool_call', id: p.toolCallId, name: p.toolName, arguments: p.input };
    case 'tool-result': {
      const output = p.output as { type?: string; value?: unknown } | undefined;
      return { type: 'tool_call_response', id: p.toolCallId, response: output?.value ?? output };
    }
    case 'image':
    case 'file': {
      const data = p.type === 'image' ? p.image : p.data;
      const kind = { modality: p.type === 'image' ? 'image' : 'file', mime_type: p.mediaType ?? null };
      return data instanceof URL ? { type: 'uri', ...kind, uri: data.href } : { type: 'blob', ...kind };
    }
    default:
      return { type: String(p.type) };
  }
}

/** `messages` (and the system prompt) by the GenAI conventions' input message schema. */
export function genAiInput(messages: readonly ModelMessage[], system: string | undefined): ModelInput {
  return {
    ...(system ? { system } : {}),
    messages: messages.map((m) => ({
      role: m.role,
      parts: typeof m.content === 'string' ? [{ type: 'text', content: m.content }] : (m.content as Record<string, unknown>[]).map(partOf),
    })),
  };
}
