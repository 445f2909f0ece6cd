/**
 * Blob parts read for a model: a prompt part stored beside the log (`{ type: 'image', blob }`) goes
 * to the model as its bytes, read through `RunContext.blob` (checked against its hash), exactly as
 * an inline part of the same bytes would.
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

/** The transcript with its prompts' blob parts read in (the same items when none has one). */
export async function withBlobBytes(items: readonly TranscriptItem[], ctx: Pick<RunContext, 'blob'>): Promise<readonly TranscriptItem[]> {
  if (!items.some((i) => i.type === 'user' && i.parts?.some((p) => 'blob' in p))) return items;
  const out: TranscriptItem[] = [];
  for (const i of items) out.push(i.type === 'user' && i.parts ? { ...i, parts: await partsWithBytes(i.parts, ctx) } : i);
  return out;
}
