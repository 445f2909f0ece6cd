/**
 * What the conversation view shows of large values: text cut to a bound with how much was cut, JSON
 * values as text cut the same way, and bytes (a part's base64 `data`, a `data:` URL, a long base64
 * string inside a tool's output) never inlined, only their size. Pure.
 */
import type { PromptPart, RecordedError } from '../events/catalog.ts';

/** Characters of one text shown (a prompt, an answer, reasoning, a summary, an error message). */
export const TEXT_SHOWN = 4_000;
/** Characters of one JSON value's text shown (a tool's input or output, a signal's data). */
export const VALUE_SHOWN = 1_000;
/** Characters of a part's URL shown. */
export const URL_SHOWN = 500;
/** A string this long or longer that is all base64 is taken for bytes and shown by its size. */
export const BASE64_RUN = 256;

/** `text` is at most the bound; `cut` characters of the `length` were left out (0: all shown). */
export interface Bounded {
  text: string;
  length: number;
  cut: number;
}

export function boundText(text: string, max = TEXT_SHOWN): Bounded {
  if (text.length <= max) return { text, length: text.length, cut: 0 };
  // never split a surrogate pair
  const end = /[\uD800-\uDBFF]/.test(text[max - 1]!) ? max - 1 : max;
  return { text: text.slice(0, end), length: text.length, cut: text.length - end };
}

/** `b` (or nothing) with `more` appended, bounded the same way (what is past the bound is counted as cut). */
export function appendBounded(b: Bounded | undefined, more: string, max = TEXT_SHOWN): Bounded {
  if (b === undefined) return boundText(more, max);
  if (b.cut > 0) return { text: b.text, length: b.length + more.length, cut: b.cut + more.length };
  return boundText(b.text + more, max);
}

/** Bytes that base64 text of this length holds. */
export function base64Bytes(b64: string): number {
  const clean = b64.replace(/\s+/g, '');
  return Math.floor((clean.length * 3) / 4) - (clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0);
}

const BASE64 = /^[A-Za-z0-9+/\r\n]+={0,2}$/;

/** A string that holds bytes, as a short note of their size; undefined for any other string. */
function bytesNote(s: string): string | undefined {
  const data = /^data:([^;,]*)(;base64)?,/.exec(s);
  if (data) {
    const body = s.slice(data[0].length);
    const bytes = data[2] ? base64Bytes(body) : body.length;
    return `[data URL${data[1] ? ` ${data[1]}` : ''}, ${bytes} bytes not shown]`;
  }
  if (s.length >= BASE64_RUN && BASE64.test(s)) return `[base64, ${base64Bytes(s)} bytes not shown]`;
  return undefined;
}

/** A JSON value with every string that holds bytes replaced by a note of its size. */
function withoutBytes(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return bytesNote(value) ?? value;
  if (value === null || typeof value !== 'object' || depth > 64) return value;
  if (Array.isArray(value)) return value.map((v) => withoutBytes(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutBytes(v, depth + 1)]));
}

/** A JSON value as text (bytes noted by size), cut to `max`; undefined stays undefined (no value). */
export function boundValue(value: unknown, max = VALUE_SHOWN): Bounded | undefined {
  if (value === undefined) return undefined;
  const text = typeof value === 'string' ? (bytesNote(value) ?? JSON.stringify(value)) : JSON.stringify(withoutBytes(value));
  return boundText(text ?? String(value), max);
}

export interface ErrorView {
  type: string;
  name?: string;
  message: Bounded;
}

export function boundError(error: RecordedError): ErrorView {
  return { type: error.type, ...(error.name ? { name: error.name } : {}), message: boundText(error.message) };
}

/**
 * One part of a prompt as the view shows it: text and JSON bounded, an image or file by its URL or
 * media type, name and size (`bytes`); the bytes themselves (base64 `data`, a `data:` URL) never.
 */
export type PartView =
  | { type: 'text'; text: Bounded }
  | { type: 'json'; value: Bounded }
  | { type: 'image' | 'file'; url?: Bounded; mediaType?: string; filename?: string; bytes?: number; sha256?: string };

export function partView(part: PromptPart): PartView {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: boundText(part.text) };
    case 'json':
      return { type: 'json', value: boundValue(part.value)! };
    default: {
      const view: PartView = { type: part.type };
      if (part.type === 'file' && part.filename) view.filename = part.filename;
      if ('blob' in part) return { ...view, mediaType: part.blob.mediaType, bytes: part.blob.size, sha256: part.blob.sha256 };
      if (part.mediaType) view.mediaType = part.mediaType;
      if ('data' in part) view.bytes = base64Bytes(part.data);
      else if (part.url.startsWith('data:')) {
        const data = /^data:([^;,]*)(;base64)?,/.exec(part.url);
        const body = part.url.slice(data?.[0].length ?? 5);
        view.bytes = data?.[2] ? base64Bytes(body) : body.length;
        if (!view.mediaType && data?.[1]) view.mediaType = data[1];
      } else view.url = boundText(part.url, URL_SHOWN);
      return view;
    }
  }
}
