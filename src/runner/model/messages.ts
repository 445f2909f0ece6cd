/**
 * A session's transcript as the AI SDK `ModelMessage`s sent to a model: prompts, each step with its
 * tool results, compaction summaries, a continuation's note in plain words; no call left open and no
 * internal id reaches the model (why: docs/model-runner.md#the-conversation-sent-to-a-model).
 */
import type { ModelMessage, ToolResultPart, UserContent } from 'ai';
import type { Continuation, PromptPart } from '../../events/catalog.ts';
import { assistantText, type TranscriptItem, type TranscriptPart } from '../../events/transcript.ts';

export const SUMMARY_PREFIX = 'Summary of the conversation so far (older messages were compacted):\n';

/** Which recorded reasoning goes back to the model: none, this turn's (a tool loop under way), or all. */
export type SendReasoning = 'never' | 'within-turn' | 'always';
export const SEND_REASONING: readonly SendReasoning[] = ['never', 'within-turn', 'always'];

/**
 * `within-turn`: the steps after the last prompt a person sent (the tool loop under way, across a
 * wait for approval or a crash's continuation), as thinking-mode providers ask.
 */
export function toModelMessages(items: readonly TranscriptItem[], reasoning: SendReasoning = 'never'): ModelMessage[] {
  const out: ModelMessage[] = [];
  let lastPrompt = -1;
  items.forEach((i, index) => {
    if (i.type === 'user' && !i.continues) lastPrompt = index;
  });
  for (const [index, item] of items.entries()) {
    // the input that resumes a waiting turn is the engine's, not a person's: the decisions are in the tool results
    if (item.type === 'user') {
      if (item.continues?.reason === 'resumed') continue;
      out.push(item.continues ? { role: 'user', content: continuationNote(item.continues, items) } : userMessage(item));
    } else if (item.type === 'summary') out.push({ role: 'user', content: `${SUMMARY_PREFIX}${item.summary}` });
    else out.push(...assistantMessages(item.parts, reasoning === 'always' || (reasoning === 'within-turn' && index > lastPrompt)));
  }
  return out;
}

/**
 * What the model is told when it continues a turn its worker did not finish: whether any of its
 * answer was recorded (it is the assistant message just before) and to go on from there.
 */
export function continuationNote(continues: Continuation, items: readonly TranscriptItem[]): string {
  const why = continues.reason === 'handed_back' ? 'the worker running it was shut down' : 'the worker running it stopped';
  const id = continues.assistantMessageId;
  const answer = id === null ? undefined : items.find((i): i is Extract<TranscriptItem, { type: 'assistant' }> => i.type === 'assistant' && i.messageId === id);
  if (answer !== undefined && assistantText(answer).length > 0)
    return `Your previous answer was cut off before it was finished (${why}). Continue it from exactly where it stops, without repeating what is already written.`;
  if (answer?.parts.some((p) => p.type === 'tool'))
    return `Your previous answer was interrupted while it called tools (${why}). Continue from there: the calls' results say what ran.`;
  return `Your previous answer was interrupted before any of it was written (${why}). Answer again.`;
}

/** A prompt as a user message: its text, or its parts as the AI SDK's parts. */
export function userMessage(prompt: { text: string; parts?: PromptPart[] | undefined }): ModelMessage {
  return { role: 'user', content: prompt.parts ? userContent(prompt.parts) : prompt.text };
}

/**
 * Prompt parts as the AI SDK's user content: text as text, an image as an image part (a URL as a
 * URL, bytes as base64 with their media type), a file as a file part, JSON data as its JSON text
 * (models read JSON as text).
 */
export function userContent(parts: PromptPart[]): UserContent {
  return parts.map((p) => {
    switch (p.type) {
      case 'text':
        return { type: 'text', text: p.text };
      case 'json':
        return { type: 'text', text: JSON.stringify(p.value) };
      case 'image':
        if ('blob' in p) throw unread(p.blob.sha256);
        return 'url' in p
          ? { type: 'image', image: new URL(p.url), ...(p.mediaType ? { mediaType: p.mediaType } : {}) }
          : { type: 'image', image: p.data, mediaType: p.mediaType };
      default:
        if ('blob' in p) throw unread(p.blob.sha256);
        return {
          type: 'file',
          data: 'url' in p ? new URL(p.url) : p.data,
          mediaType: p.mediaType,
          ...(p.filename ? { filename: p.filename } : {}),
        };
    }
  });
}

/** A blob part reached the model's messages without its bytes: the runner reads them first (`withBlobBytes`). */
function unread(sha256: string): Error {
  return new Error(
    `Prompt part stored as blob ${sha256} reached the model's messages unread: read blob parts first (withBlobBytes in src/runner/model/blob-parts.ts).`,
  );
}

type ToolPart = Extract<TranscriptPart, { type: 'tool' }>;

/** An assistant step's reasoning (when asked), text and tool calls, then the calls' results. */
export function assistantMessages(parts: readonly TranscriptPart[], withReasoning = false): ModelMessage[] {
  const content: Exclude<Extract<ModelMessage, { role: 'assistant' }>['content'], string> = [];
  const results: ToolResultPart[] = [];
  for (const p of parts) {
    if (withReasoning && p.type === 'reasoning' && p.text.length > 0) content.push({ type: 'reasoning', text: p.text });
    if (p.type === 'text' && p.text.length > 0) content.push({ type: 'text', text: p.text });
    if (p.type === 'tool') {
      content.push({ type: 'tool-call', toolCallId: p.callId, toolName: p.name, input: p.input });
      results.push(toolResult(p));
    }
  }
  if (content.length === 0) return [];
  return results.length === 0
    ? [{ role: 'assistant', content }]
    : [
        { role: 'assistant', content },
        { role: 'tool', content: results },
      ];
}

function toolResult(p: ToolPart): ToolResultPart {
  const base = { type: 'tool-result' as const, toolCallId: p.callId, toolName: p.name };
  if (p.state === 'succeeded' && p.outputBlob) throw unread(p.outputBlob.sha256);
  if (p.state === 'succeeded') return { ...base, output: { type: 'json', value: (p.output ?? null) as never } };
  if (p.state === 'failed') return { ...base, output: { type: 'error-text', value: failedResult(p) } };
  const why = p.decision?.reason ? `: ${p.decision.reason}` : '';
  if (p.state === 'denied') return { ...base, output: { type: 'error-text', value: `denied: a person did not approve this call, and it did not run${why}` } };
  if (p.state === 'cancelled')
    return { ...base, output: { type: 'error-text', value: `cancelled: the call waited for approval and the turn was cancelled${why}` } };
  return { ...base, output: { type: 'error-text', value: 'no result was recorded for this call (the turn was interrupted while it ran)' } };
}

/** A failed call's result: its error, or, for a call its worker's stop cut off, that in plain words (the sealing error names internal ids). */
function failedResult(p: ToolPart): string {
  const type = p.error?.type;
  if (type === 'interrupted' || type === 'released') {
    const why = type === 'released' ? 'the worker running it was shut down' : 'the worker running it stopped';
    return `interrupted: the call was cut off (${why}) and no result was recorded; ${p.durable ? 'it is run again' : 'it was not run again'}`;
  }
  return `${type ?? 'error'}: ${p.error?.message ?? 'the call failed'}`;
}

/** What an image or file's bytes count in `estimateTokens`: models bill images by their size in tiles, not by their base64 text. */
export const MEDIA_PART_TOKENS = 1_000;

/**
 * A rough token count of a conversation (4 characters a token), for a configured context window;
 * an image's or a file's bytes count `MEDIA_PART_TOKENS` each (a 6 MB photo is not 2 million tokens).
 */
export function estimateTokens(messages: readonly ModelMessage[]): number {
  let media = 0;
  const text = JSON.stringify(messages, (key, value: unknown) => {
    if ((key === 'image' || key === 'data') && (typeof value === 'string' || value instanceof Uint8Array) && value.length > 1024) {
      media++;
      return '';
    }
    return value;
  });
  return Math.ceil(text.length / 4) + media * MEDIA_PART_TOKENS;
}
