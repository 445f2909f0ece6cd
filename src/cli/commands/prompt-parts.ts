/**
 * The prompt `sessiond prompt` sends: the text alone (a string prompt), or with `--image`, `--file`
 * and `--json` a prompt of parts (the text first, then the images, the files and the JSON data, each
 * in the order given). A path is sent as its bytes: inline (base64) up to `INLINE_PART_BYTES`, a
 * larger file streamed to the blob store (or the workers) first and sent as its reference; an https
 * URL is sent as it is. Paths are checked first (`promptFromOptions`), read later (`readPrompt`).
 */
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { extname } from 'node:path';
import type { Prompt, PromptPart } from '../../events/catalog.ts';
import { INLINE_PART_BYTES } from '../../events/prompt.ts';
import type { BlobReference } from '../../nats/command-protocol.ts';
import { SessiondError, UsageError, isSessiondError } from '../../errors.ts';

/** A local file of a prompt, checked (its type by name, that it is a readable file), not read yet. */
interface LocalFile {
  local: true;
  kind: 'image' | 'file';
  path: string;
  mediaType: string;
  size: number;
}

/** The prompt as the flags give it: the text alone, or parts with local files still to read. */
export type PromptDraft = string | (PromptPart | LocalFile)[];

/** Stores a file's bytes, read as a stream, as one blob: the store beside the log, or the workers' (`uploadBlob`). */
export type StreamUpload = (source: AsyncIterable<Uint8Array>, mediaType: string, size: number) => Promise<BlobReference>;

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

export function promptFromOptions(text: string | undefined, opts: { image?: string[]; file?: string[]; json?: string[] }): PromptDraft {
  const parts: (PromptPart | LocalFile)[] = [
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

function bytesOrUrl(kind: 'image' | 'file', path: string, types: Readonly<Record<string, string>>): PromptPart | LocalFile {
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
  let size: number;
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw Object.assign(new Error('not a file'), { code: 'not a file' });
    size = stat.size;
  } catch (err) {
    throw cannotRead(flag, path, err);
  }
  return { local: true, kind, path, mediaType, size };
}

const cannotRead = (flag: string, path: string, err: unknown) =>
  new UsageError(`${flag} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`);

/**
 * The prompt with its local files read: a file up to `INLINE_PART_BYTES` (or any, without `upload`)
 * inline as base64; a larger one streamed through `upload` and sent as its reference.
 */
export async function readPrompt(draft: PromptDraft, upload?: StreamUpload): Promise<Prompt> {
  if (typeof draft === 'string') return draft;
  const out: PromptPart[] = [];
  for (const [i, part] of draft.entries()) out.push('local' in part ? await readFile(part, i, upload) : part);
  return out;
}

async function readFile(f: LocalFile, i: number, upload: StreamUpload | undefined): Promise<PromptPart> {
  const flag = `--${f.kind}`;
  const filename = f.path.split(/[\\/]/).pop()!;
  if (f.size <= INLINE_PART_BYTES || !upload) {
    let data: string;
    try {
      data = readFileSync(f.path).toString('base64');
    } catch (err) {
      throw cannotRead(flag, f.path, err);
    }
    return f.kind === 'image' ? { type: 'image', data, mediaType: f.mediaType } : { type: 'file', data, mediaType: f.mediaType, filename };
  }
  let blob: BlobReference;
  try {
    blob = await upload(fileChunks(f.path), f.mediaType, f.size);
  } catch (err) {
    if (isSessiondError(err))
      throw new SessiondError(err.code, `Invalid input: prompt part ${i} (${f.kind}) ${f.path}: ${err.message}`, { cause: err, details: err.details });
    if ((err as NodeJS.ErrnoException).code !== undefined) throw cannotRead(flag, f.path, err);
    throw err;
  }
  return f.kind === 'image' ? { type: 'image', blob } : { type: 'file', blob, filename };
}

/** The file's chunks, opened at the first read and closed when the reader stops (a refusal mid-file). */
async function* fileChunks(path: string): AsyncIterable<Uint8Array> {
  const stream = createReadStream(path);
  try {
    yield* stream as AsyncIterable<Buffer>;
  } finally {
    stream.destroy();
  }
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
