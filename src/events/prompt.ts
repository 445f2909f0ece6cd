/**
 * Prompts: a string, or a list of parts (text, an image or a file by URL or by bytes, JSON data).
 * The catalog holds the shape (`Prompt`, `PromptPart`); this file has the rules a client is told
 * about in plain words, the size a prompt counts against the limits, and its text form (what a
 * runner that reads text, the CLI and the inspector show).
 */
import type { Prompt, PromptPart } from './catalog.ts';
import { PromptPart as PromptPartSchema } from './catalog.ts';

export type { Prompt, PromptPart };

/** At most this many parts in one prompt. */
export const MAX_PROMPT_PARTS = 64;

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const EXAMPLE = '[{ "type": "text", "text": "what is in this picture?" }, { "type": "image", "url": "https://example.com/cat.png" }]';

/**
 * Checks a prompt a client sent: a string, or 1 to `MAX_PROMPT_PARTS` parts, valid Unicode, at most
 * `maxBytes` in all (`promptBytes`). Returns it unchanged; throws `Error` with what is wrong (the
 * caller wraps it in its own error code).
 */
export function checkPrompt(prompt: unknown, maxBytes: number): Prompt {
  return checkPromptSize(checkPromptShape(prompt), maxBytes);
}

/** `checkPrompt` without the size: the admission first moves large parts into the blob store (src/input/blob-parts.ts). */
export function checkPromptShape(prompt: unknown): Prompt {
  if (typeof prompt === 'string') {
    checkText(prompt, 'prompt');
  } else if (Array.isArray(prompt)) {
    if (prompt.length === 0) throw new Error(`prompt has no parts: give a string or at least one part, e.g. ${EXAMPLE}`);
    if (prompt.length > MAX_PROMPT_PARTS) throw new Error(`prompt has ${prompt.length} parts, over the limit of ${MAX_PROMPT_PARTS}`);
    for (const [i, part] of prompt.entries()) checkPart(part, i);
  } else {
    throw new Error(`prompt must be a string or a list of parts like ${EXAMPLE}, got ${prompt === null ? 'null' : typeof prompt}`);
  }
  return prompt as Prompt;
}

/** Refuses a prompt over `maxBytes` (`promptBytes`: a blob part counts its reference, not its bytes). */
export function checkPromptSize(prompt: Prompt, maxBytes: number): Prompt {
  const size = promptBytes(prompt);
  if (size > maxBytes)
    throw new Error(
      `prompt is ${size} bytes, over the limit of ${maxBytes} bytes (on the embedded log an image or file part over ${INLINE_PART_BYTES} bytes is stored beside the log and counts only its reference: this is the prompt's text and small parts; on NATS upload a large image or file first with the upload command, as the Node client's admit does, and send its reference)`,
    );
  return prompt;
}

/** An inline image or file part whose bytes are more than this is stored as a blob at admission (where the engine has a blob store), its reference in the event. */
export const INLINE_PART_BYTES = 64 * 1024;

/** The bytes base64 text decodes to (valid base64, as the catalog's schema checked). */
export function base64Bytes(data: string): number {
  return Math.floor((data.length * 3) / 4) - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
}

/** The bytes of a prompt's blob parts (what a session's pending blob bytes count). */
export function promptBlobBytes(prompt: Prompt): number {
  if (typeof prompt === 'string') return 0;
  let total = 0;
  for (const p of prompt) if ('blob' in p) total += p.blob.size;
  return total;
}

function checkText(text: string, where: string): void {
  // stored as UTF-8, a lone surrogate would become U+FFFD: an exact resend would then differ from it
  const lone = LONE_SURROGATE.exec(text);
  if (lone) throw new Error(`${where} contains an unpaired UTF-16 surrogate at index ${lone.index}: send valid Unicode`);
}

function checkPart(part: unknown, i: number): void {
  const where = `prompt part ${i}`;
  if (part === null || typeof part !== 'object' || Array.isArray(part)) throw new Error(`${where} must be an object like { "type": "text", "text": "..." }`);
  const p = part as Record<string, unknown>;
  const parsed = PromptPartSchema.safeParse(part);
  if (!parsed.success) throw new Error(`${where} (${JSON.stringify(p['type'] ?? null)}) is not a valid part: ${partRule(p)}`);
  if (p['type'] === 'text') checkText(p['text'] as string, where);
}

/** What a part of its type must hold (the message for an invalid one). */
function partRule(p: Record<string, unknown>): string {
  switch (p['type']) {
    case 'text':
      return 'a text part is { "type": "text", "text": "..." } and nothing else';
    case 'image':
      return 'an image is { "type": "image", "url": "https://..." } (mediaType optional), { "type": "image", "data": "<base64>", "mediaType": "image/png" } or { "type": "image", "blob": { "sha256": "<64 hex digits>", "size": <bytes>, "mediaType": "image/png" } }';
    case 'file':
      return 'a file is { "type": "file", "url": "https://...", "mediaType": "application/pdf" }, { "type": "file", "data": "<base64>", "mediaType": "...", "filename": "..." } or { "type": "file", "blob": { "sha256": "...", "size": <bytes>, "mediaType": "..." }, "filename": "..." } (filename optional)';
    case 'json':
      return 'a JSON part is { "type": "json", "value": <any JSON value> }';
    default:
      return 'type must be "text", "image", "file" or "json"';
  }
}

/** What a prompt counts against the size limits: a string's UTF-8 bytes; a list of parts, the UTF-8 bytes of its JSON text. */
export function promptBytes(prompt: Prompt): number {
  return Buffer.byteLength(typeof prompt === 'string' ? prompt : JSON.stringify(prompt));
}

/**
 * A prompt as text: a string as it is; parts joined by newlines, a JSON part as its JSON text, an
 * image or a file as a bracketed note (`[image https://...]`, `[file report.pdf application/pdf, 1234 bytes]`,
 * `[image image/png, 6291456 bytes, stored as blob 3a7bd3e2360a]`: a blob part, its hash's first 12 digits).
 */
export function promptText(prompt: Prompt): string {
  if (typeof prompt === 'string') return prompt;
  return prompt.map(partText).join('\n');
}

function partText(part: PromptPart): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'json':
      return JSON.stringify(part.value);
    default: {
      const name = part.type === 'file' && part.filename ? ` ${part.filename}` : '';
      if ('blob' in part) return `[${part.type}${name} ${part.blob.mediaType}, ${part.blob.size} bytes, stored as blob ${part.blob.sha256.slice(0, 12)}]`;
      const what = 'url' in part ? ` ${part.url.startsWith('data:') ? 'data URL' : part.url}` : '';
      const size = 'data' in part ? `, ${base64Bytes(part.data)} bytes` : '';
      return `[${part.type}${name}${what}${part.mediaType ? ` ${part.mediaType}` : ''}${size}]`;
    }
  }
}

/** Are two prompts the same (an exact resend of an admission must repeat its prompt)? */
export function samePrompt(a: Prompt, b: Prompt): boolean {
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return a.length === b.length && canonical(a) === canonical(b);
}

/** JSON text with every object's keys sorted: two clients may send the same part's keys in different orders. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}
