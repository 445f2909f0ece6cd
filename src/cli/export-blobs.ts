/**
 * Where `sessiond export` reads the blobs its events reference: the store beside the log (the
 * SQLite table, the Object Store bucket), or, when the bucket is not this user's to read (the client
 * user on NATS), the workers' `blob` command, asked as a session that references each blob.
 */
import type { BlobStore } from '../blobs/blob-store.ts';
import { SessiondClient } from '../client/client.ts';
import { ErrorCode, isSessiondError, messageOf } from '../errors.ts';
import { JetStreamEventLog } from '../nats/jetstream-event-log.ts';
import { blobStoreOf } from './blob-target.ts';
import type { OpenedLog } from './log-options.ts';

/** A blob's chunks; `missing` when the source says it does not hold it; `unread` when the source could not be asked (see `problem`). */
export type ExportBlob = AsyncIterable<Uint8Array> | 'missing' | 'unread';

export interface ExportBlobSource {
  /** How the blobs are read, for the summary line (`the blob store`, `the workers' blob command`). */
  readonly via: string;
  /** Why blobs were left unread, once a read failed (the file then holds their references only). */
  readonly problem: string | undefined;
  open(sha256: string, sessionId: string): Promise<ExportBlob>;
  close(): Promise<void>;
}

/** The blob source of the opened log; undefined (with `problem`) when neither the store nor the workers can be used. */
export async function exportBlobSource(opened: OpenedLog): Promise<ExportBlobSource | { problem: string }> {
  let why: string;
  try {
    const store = await blobStoreOf(opened);
    if (store) return storeSource(store);
    why = `${opened.describe} keeps no blob store`;
  } catch (err) {
    why = `the blob store could not be opened: ${messageOf(err)}`;
  }
  if (!(opened.log instanceof JetStreamEventLog)) return { problem: why };
  const client = await SessiondClient.connect({ connection: opened.log.nc });
  return workersSource(client, why);
}

function storeSource(store: BlobStore): ExportBlobSource {
  return {
    via: 'the blob store',
    problem: undefined,
    open: async (sha256) => ((await store.has(sha256)) ? store.read(sha256) : 'missing'),
    close: async () => {},
  };
}

/** Through the workers: a blob the session does not reference (any more) is `missing`; no worker answering stops the reads. */
function workersSource(client: SessiondClient, storeProblem: string): ExportBlobSource {
  let problem: string | undefined;
  return {
    via: "the workers' blob command",
    get problem() {
      return problem;
    },
    async open(sha256, sessionId) {
      if (problem !== undefined) return 'unread';
      const chunks = client.readBlobChunks(sessionId, sha256)[Symbol.asyncIterator]();
      let first: IteratorResult<Uint8Array>;
      try {
        first = await chunks.next(); // a refusal comes with the first chunk, before anything is written
      } catch (err) {
        if (isSessiondError(err, ErrorCode.NotFound)) return 'missing';
        problem = `${storeProblem}; and the workers' blob command failed: ${messageOf(err)}`;
        return 'unread';
      }
      return (async function* () {
        if (first.done) return;
        yield first.value;
        for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
      })();
    },
    close: () => client.close(),
  };
}
