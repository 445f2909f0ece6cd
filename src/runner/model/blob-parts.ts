/**
 * Blob parts read for a model: a prompt part stored beside the log (`{ type: 'image', blob }`) goes
 * to the model as its bytes, read through `RunContext.blob` (checked against its hash), exactly as
 * an inline part of the same bytes would; a tool result stored as a blob goes as its JSON value.
 */
import type { PromptPart } from '../../events/catalog.ts';
import type { TranscriptItem } from '../../events/transcript.ts';
import type { RunContext } from '../types.ts';

/** The parts with each blob part's bytes read in, as an inline (base64) part of the same type. */
export async function partsWithBytes(parts: PromptPart[] | undefined, ctx: Pick<RunContext, 'blob'>): Promise<PromptPart[] | undefined> {
  if (!parts?.some((p) => 'blob' in p)) return parts;
  const out: PromptPart[] = [];
  for (const p of parts) {
    if (!('blob' in p)) {
      out.push(p);
      continue;
    }
    const data = Buffer.from(await ctx.blob(p.blob)).toString('base64');
    const { mediaType } = p.blob;
    out.push(p.type === 'image' ? { type: 'image', data, mediaType } : { type: 'file', data, mediaType, ...(p.filename ? { filename: p.filename } : {}) });
  }
  return out;
}

/** The transcript with its prompts' blob parts and its tool results stored as blobs read in (the same items when none has one). */
export async function withBlobBytes(items: readonly TranscriptItem[], ctx: Pick<RunContext, 'blob'>): Promise<readonly TranscriptItem[]> {
  const hasBlob = (i: TranscriptItem) =>
    (i.type === 'user' && i.parts?.some((p) => 'blob' in p)) || (i.type === 'assistant' && i.parts.some((p) => p.type === 'tool' && p.outputBlob));
  if (!items.some(hasBlob)) return items;
  const out: TranscriptItem[] = [];
  for (const i of items) {
    if (!hasBlob(i)) out.push(i);
    else if (i.type === 'user') out.push({ ...i, parts: await partsWithBytes(i.parts, ctx) });
    else if (i.type === 'assistant') out.push({ ...i, parts: await Promise.all(i.parts.map((p) => toolOutputRead(p, ctx))) });
  }
  return out;
}

type AssistantPart = Extract<TranscriptItem, { type: 'assistant' }>['parts'][number];

/** A tool part whose result is stored as a blob (JSON text), with its result read in as `output`. */
async function toolOutputRead(p: AssistantPart, ctx: Pick<RunContext, 'blob'>): Promise<AssistantPart> {
  if (p.type !== 'tool' || !p.outputBlob) return p;
  const { outputBlob: ref, ...rest } = p;
  return { ...rest, output: JSON.parse(Buffer.from(await ctx.blob(ref)).toString('utf8')) as unknown };
}
