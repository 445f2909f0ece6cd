/**
 * The blob mark of an admission (src/execution/blob-marks.ts): the blobs its prompt references were
 * marked when its parts were stored or checked (src/input/blob-parts.ts); a mark grown too old
 * before the append is renewed by storing and checking the parts again.
 */
import type { Prompt } from '../events/catalog.ts';
import { blobRefsOf } from '../events/blob-refs.ts';
import type { BlobMark } from '../execution/blob-marks.ts';

/** The mark of a prompt's blob parts (undefined when it has none). */
export function admissionMark(prompt: Prompt, markedAt: number, graceMs: number, storeAgain: () => Promise<unknown>): BlobMark | undefined {
  const hashes = blobRefsOf({ type: 'input.admitted', payload: { prompt } } as never).map((r) => r.sha256);
  if (hashes.length === 0) return undefined;
  return {
    hashes,
    markedAt,
    graceMs,
    remark: async () => {
      await storeAgain();
    },
  };
}
