/**
 * Staged chunks of an upload sent in several requests (the `upload` command): each chunk kept as
 * its own object until the last request assembles them into the blob, so consecutive chunks may
 * reach different workers. The Object Store keeps them in the blob bucket (ObjectBlobStore).
 *
 * Naming, for the orphan sweep: `upload.<scope>.<uploadId>.<offset>`, where `scope` is `trusted`
 * or `t-<tenant>` and `offset` the chunk's first byte in decimal. They never look like a blob (a
 * blob is named by 64 hex digits), so `BlobStore.list` leaves them out; `listStaged` lists them
 * with when they were stored. An upload that completes removes its chunks; one abandoned leaves
 * them for a sweep to remove once older than `STAGED_CHUNK_GRACE_MS`. Grants (blob-grants.ts),
 * `grant.o-<owner in base64url>.<sha256>`, are staged the same way and swept after the same time.
 */
import { InvalidInputError } from '../errors.ts';

export const STAGED_PREFIX = 'upload.';

/** How long an upload's staged chunks are left before a sweep may take them as abandoned. */
export const STAGED_CHUNK_GRACE_MS = 60 * 60 * 1000;

/** An upload's id: chosen by the client (random), a subject-safe token. */
const UPLOAD_ID = /^[A-Za-z0-9_-]{8,64}$/;

export function checkUploadId(uploadId: unknown): string {
  if (typeof uploadId !== 'string' || !UPLOAD_ID.test(uploadId)) {
    throw new InvalidInputError(
      `Invalid uploadId ${JSON.stringify(uploadId)}: give 8-64 letters, digits, _ or -, chosen at random for each upload and the same on each of its chunks.`,
    );
  }
  return uploadId;
}

/** Whose upload it is: the trusted subjects' callers share one scope, each tenant has its own. */
export const uploadScope = (tenant: string | undefined): string => (tenant === undefined ? 'trusted' : `t-${tenant}`);

/** The staged chunk's name. */
export const stagedName = (scope: string, uploadId: string, offset: number): string => `${STAGED_PREFIX}${scope}.${uploadId}.${offset}`;

/** `{ scope, uploadId, offset }` of a staged chunk's name, undefined for any other name. */
export function parseStagedName(name: string): { scope: string; uploadId: string; offset: number } | undefined {
  const m = /^upload\.(trusted|t-[A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{8,64})\.(0|[1-9][0-9]{0,15})$/.exec(name);
  return m ? { scope: m[1]!, uploadId: m[2]!, offset: Number(m[3]) } : undefined;
}

export const GRANT_PREFIX = 'grant.';

/** The name of the grant that lets `owner` reference the blob `sha256` (blob-grants.ts). */
export const grantName = (owner: string, sha256: string): string => `${GRANT_PREFIX}o-${Buffer.from(owner).toString('base64url')}.${sha256}`;

/** Whether `name` is one the staging area keeps: a staged chunk's or a grant's, never a blob's. */
export const isStagingName = (name: string): boolean => parseStagedName(name) !== undefined || /^grant\.o-[A-Za-z0-9_-]{1,200}\.[0-9a-f]{64}$/.test(name);

export interface StagedChunk {
  name: string;
  size: number;
  /** When it was stored (ms since the epoch): a sweep removes those older than its grace period. */
  storedAt: number;
}

export interface BlobStaging {
  /** Keeps one chunk of an upload (replacing one staged under the same name). */
  stage(name: string, bytes: Uint8Array): Promise<void>;
  /** The chunk's bytes, or undefined when none is staged under that name. */
  staged(name: string): Promise<Uint8Array | undefined>;
  /** Removes a staged chunk; false when there was none. */
  unstage(name: string): Promise<boolean>;
  /** Every staged chunk (for the orphan sweep). */
  listStaged(): AsyncIterable<StagedChunk>;
}
