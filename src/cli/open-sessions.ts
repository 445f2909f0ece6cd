/**
 * The `Sessions` a command talks to, from its flags: with `--nats` (or SESSIOND_NATS) a
 * `SessiondClient` whose commands the workers answer; otherwise the SQLite file's log at rest
 * (`--db`), which a worker (`sessiond start`) watches. Reads take the log at rest on either. Commands use the interface and never branch on
 * which one they got.
 */
import type { Sessions } from '../sessions/sessions.ts';
import { logSessions } from '../sessions/log-sessions.ts';
import { sqliteTenantBudgetStore } from '../budget/sqlite-tenant-budget-store.ts';
import { SessiondClient } from '../client/client.ts';
import { SqliteBlobStore } from '../storage/sqlite/sqlite-blob-store.ts';
import type { BlobRef } from '../blobs/blob-store.ts';
import { DEFAULT_LIMITS } from '../input/limits.ts';
import { systemClock } from '../clock.ts';
import type { CliContext } from './context.ts';
import { describeNats, natsConnectionOptions } from './nats-options.ts';
import { openLog, type LogOptions } from './log-options.ts';

export interface OpenedSessions {
  sessions: Sessions;
  /** Where they are, for messages: the file, or the NATS server. */
  describe: string;
  /** True when the workers answer over NATS (a wake or admission is acted on at once). */
  remote: boolean;
  /** Stores a blob read as a stream (a large file of a prompt): into the file's blob table, or the workers' with `upload`. */
  uploadBlob?: (source: AsyncIterable<Uint8Array>, options: { mediaType: string; size?: number }) => Promise<BlobRef>;
}

export interface OpenOptions {
  /**
   * A command that only reads (status) gets the log at rest wherever it is: an existing database
   * opened read-only (never created or migrated), or the NATS stream read as this user (the
   * observer may read; no worker needs to be running). Writes on NATS go through the workers.
   */
  readonly?: boolean;
  /** A command that only reads a SQLite file (`wake` there writes nothing) but goes to the workers over NATS: the file is opened read-only. */
  readsFile?: boolean;
}

export async function openSessions(opts: LogOptions, ctx: CliContext, name: string, options: OpenOptions = {}): Promise<OpenedSessions> {
  const nats = natsConnectionOptions(opts, ctx, name);
  if (nats && !options.readonly) {
    const client = await SessiondClient.connect({ connection: nats });
    return { sessions: client, describe: `NATS ${describeNats(nats)}`, remote: true, uploadBlob: (source, o) => client.uploadBlob(source, o) };
  }
  const readonly = options.readonly || options.readsFile;
  const opened = await openLog(opts, ctx, readonly ? { readonly: true } : {});
  // a writable SQLite file's projection is what `list` reads (brought up to the log's head first)
  const projection = opened.db && !readonly ? { projection: opened.db } : {};
  // what a prompt admitted into the file may name (`--allow-url-host`); over NATS the workers decide
  const urls = opts.allowUrlHost ? { urls: { allow: opts.allowUrlHost } } : {};
  // tenants' budgets, shown in status, from the file's table (absent from a file of an older schema, opened read-only)
  const hasBudgets = opened.db?.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tenant_budgets'").get() !== undefined;
  const budgets = opened.db && hasBudgets ? { tenantBudgets: sqliteTenantBudgetStore(opened.db) } : {};
  // large prompt parts go to the file's blob table, beside its log (the worker reads them there)
  const store = opened.db && !readonly ? new SqliteBlobStore(opened.db, systemClock) : undefined;
  return {
    sessions: logSessions(opened.log, { onClose: () => opened.close(), ...projection, ...urls, ...budgets, ...(store ? { blobs: store } : {}) }),
    describe: opened.describe,
    remote: nats !== undefined,
    // the limit the admission then checks the reference against (logSessions admits with the default limits)
    ...(store ? { uploadBlob: (source, o) => store.put(source, { mediaType: o.mediaType, maxBytes: DEFAULT_LIMITS.maxBlobBytes }) } : {}),
  };
}

/** Runs `use` on the command's Sessions and closes them after, whatever happens. */
export async function withSessions<T>(
  opts: LogOptions,
  ctx: CliContext,
  name: string,
  use: (opened: OpenedSessions) => Promise<T>,
  options: OpenOptions = {},
): Promise<T> {
  const opened = await openSessions(opts, ctx, name, options);
  try {
    return await use(opened);
  } finally {
    await opened.sessions.close();
  }
}
