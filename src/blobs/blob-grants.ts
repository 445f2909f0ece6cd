/**
 * Who may name a stored blob by its hash in an admission. Blobs are stored once per content, for
 * every tenant, so knowing a hash must not be enough: an owner (a tenant, a gateway token's owner)
 * may reference a blob it uploaded itself within `GRANT_MS` (a grant, recorded by the upload), or
 * one a session it reaches already references (blob-access.ts). Trusted callers name any blob.
 *
 * On NATS grants are tiny objects of the blob bucket (named in blob-staging.ts), so any worker sees another's; the sweep removes them with abandoned chunks. A store that
 * cannot stage (SQLite, one process) keeps them in memory: a restart forgets them (upload again).
 */
import type { Clock } from '../clock.ts';
import { checkSha256, type BlobStore } from './blob-store.ts';
import { STAGED_CHUNK_GRACE_MS, grantName, type BlobStaging } from './blob-staging.ts';

/** How long an upload lets its uploader reference the blob: as long as an abandoned upload's chunks are kept. */
export const GRANT_MS = STAGED_CHUNK_GRACE_MS;

/** Grants kept in memory at most (the oldest go first). */
const MAX_MEMORY_GRANTS = 100_000;

export interface BlobGrants {
  /** Records that `owner` put the blob's bytes now. */
  grant(owner: string, sha256: string): Promise<void>;
  /** Whether `owner` put the blob's bytes within the last `GRANT_MS`. */
  granted(owner: string, sha256: string): Promise<boolean>;
}

/** Grants beside the store: in its staging area when it has one, else in this process's memory. */
export function blobGrantsOf(store: BlobStore, clock: Clock): BlobGrants {
  return store.staging ? stagedGrants(store.staging, clock) : memoryGrants(clock);
}

/** Grants as staged objects holding the time they were given (8 bytes, ms since the epoch). */
export function stagedGrants(staging: BlobStaging, clock: Clock): BlobGrants {
  return {
    async grant(owner, sha256) {
      const at = Buffer.alloc(8);
      at.writeDoubleBE(clock.now());
      await staging.stage(grantName(owner, checkSha256(sha256)), at);
    },
    async granted(owner, sha256) {
      const bytes = await staging.staged(grantName(owner, checkSha256(sha256)));
      if (bytes === undefined || bytes.length !== 8) return false;
      return Buffer.from(bytes.buffer, bytes.byteOffset, 8).readDoubleBE() >= clock.now() - GRANT_MS;
    },
  };
}

/** Grants in a map, oldest first, bounded. */
export function memoryGrants(clock: Clock): BlobGrants {
  const given = new Map<string, number>();
  return {
    async grant(owner, sha256) {
      const key = `${owner}\n${checkSha256(sha256)}`;
      given.delete(key); // re-inserted last: the map stays in order of time
      given.set(key, clock.now());
      for (const [k, at] of given) {
        if (given.size <= MAX_MEMORY_GRANTS && at >= clock.now() - GRANT_MS) break;
        given.delete(k);
      }
    },
    async granted(owner, sha256) {
      const at = given.get(`${owner}\n${sha256}`);
      return at !== undefined && at >= clock.now() - GRANT_MS;
    },
  };
}

/** Whether `owner` (undefined: a trusted caller) may reference the stored blob `sha256` in an admission. */
export type BlobAccess = (owner: string | undefined, sha256: string) => Promise<boolean>;

/** Trusted callers always; an owner with a grant, or reaching a session that references the blob. */
export function blobAccess(grants: BlobGrants, reaches: (owner: string, sha256: string) => Promise<boolean>): BlobAccess {
  return async (owner, sha256) => owner === undefined || (await grants.granted(owner, sha256)) || (await reaches(owner, sha256));
}
