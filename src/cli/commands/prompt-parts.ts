/**
 * The prompt `sessiond prompt` sends: the text alone (a string prompt), or with `--image`, `--file`
 * and `--json` a prompt of parts (the text first, then the images, the files and the JSON data, each
 * in the order given). A path is read and sent as its bytes; an https URL is sent as it is.
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import type { Prompt, PromptPart } from '../../events/catalog.ts';
import { UsageError } from '../../errors.ts';

const IMAGE_TYPES: Readonly<Record<string, string>> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
};
const FILE_TYPES: Readonly<Record<string, string>> = {
  ...IMAGE_TYPES,
  '.pdf': 'application/pdf',
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.csv': 'text/csv',
  '.json': 'application/json',
  '.html': 'text/html',
  '.xml': 'application/xml',
};

export function promptFromOptions(text: string | undefined, opts: { image?: string[]; file?: string[]; json?: string[] }): Prompt {
  const parts: PromptPart[] = [
    ...(opts.image ?? []).map((p) => bytesOrUrl('image', p, IMAGE_TYPES)),
    ...(opts.file ?? []).map((p) => bytesOrUrl('file', p, FILE_TYPES)),
    ...(opts.json ?? []).map(jsonPart),
  ];
  if (parts.length === 0) {
    if (text === undefined)
      throw new UsageError('Give the prompt text, or parts with --image, --file or --json (e.g. sessiond prompt ses_1 "what is this?" --image cat.png).');
    return text;
  }
  return text === undefined ? parts : [{ type: 'text', text }, ...parts];
}

const isUrl = (s: string) => /^https?:\/\//.test(s);

function bytesOrUrl(kind: 'image' | 'file', path: string, types: Readonly<Record<string, string>>): PromptPart {
  const flag = `--${kind}`;
  const ext = extname(isUrl(path) ? new URL(path).pathname : path).toLowerCase();
  const mediaType = types[ext];
  if (isUrl(path)) {
    if (kind === 'image') return { type: 'image', url: path, ...(mediaType ? { mediaType } : {}) };
    if (!mediaType) throw new UsageError(`${flag} ${path}: cannot tell the file's type from its name; give a URL ending in ${Object.keys(types).join(', ')}.`);
    return { type: 'file', url: path, mediaType };
  }
  if (!mediaType)
    throw new UsageError(
      `${flag} ${path}: ${kind === 'image' ? 'an image' : 'a file'} must be one of ${Object.keys(types).join(', ')} (by its name), or an https URL.`,
    );
  let data: string;
  try {
    data = readFileSync(path).toString('base64');
  } catch (err) {
    throw new UsageError(`${flag} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`);
  }
  if (kind === 'image') return { type: 'image', data, mediaType };
  return { type: 'file', data, mediaType, filename: path.split(/[\\/]/).pop()! };
}

function jsonPart(arg: string): PromptPart {
  let text = arg;
  if (arg.startsWith('@')) {
    try {
      text = readFileSync(arg.slice(1), 'utf8');
    } catch (err) {
      throw new UsageError(`--json ${arg}: cannot read ${arg.slice(1)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`);
    }
  }
  try {
    return { type: 'json', value: JSON.parse(text) as Extract<PromptPart, { type: 'json' }>['value'] };
  } catch (err) {
    throw new UsageError(`--json: ${(err as Error).message}; give JSON text like '{"order": 42}' or @FILE.`);
  }
}
