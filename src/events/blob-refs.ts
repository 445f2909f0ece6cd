/**
 * Which blobs an event references, as data: the image and file parts of an admitted prompt, a tool
 * result stored beside the log (`outputBlob`), and a fork's copy of its source's conversation (the
 * same parts and results, so a fork keeps its source's blobs alive). Pure; the projection's
 * `session_blob` rows (src/projector/blob-rows.ts) and an export's list of blobs are made from it.
 */
import type { SessionEvent } from './envelope.ts';
import type { PromptPart } from './catalog.ts';
import type { TranscriptItem } from './transcript.ts';

/** A blob reference as events carry it (src/blobs/blob-store.ts `BlobRef`). */
export interface BlobRef {
  sha256: string;
  size: number;
  mediaType: string;
}

/** The blobs the event references, each hash once, in the order they appear. */
export function blobRefsOf(event: Pick<SessionEvent, 'type' | 'payload'>): BlobRef[] {
  const out = new Map<string, BlobRef>();
  const add = (ref: BlobRef | undefined) => {
    if (ref !== undefined && !out.has(ref.sha256)) out.set(ref.sha256, { sha256: ref.sha256, size: ref.size, mediaType: ref.mediaType });
  };
  const parts = (prompt: unknown) => {
    if (!Array.isArray(prompt)) return;
    for (const p of prompt as PromptPart[]) if (p && typeof p === 'object' && 'blob' in p) add(p.blob);
  };
  const payload = event.payload as Record<string, unknown>;
  switch (event.type) {
    case 'input.admitted':
      parts(payload['prompt']);
      break;
    case 'tool.succeeded':
      add(payload['outputBlob'] as BlobRef | undefined);
      break;
    case 'session.forked':
      for (const item of (payload['transcript'] ?? []) as TranscriptItem[]) {
        if (item.type === 'user') parts(item.parts);
        else if (item.type === 'assistant') for (const p of item.parts) if (p.type === 'tool') add(p.outputBlob);
      }
      break;
  }
  return [...out.values()];
}
