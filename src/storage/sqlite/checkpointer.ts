/**
 * WAL checkpoints on a thread of their own, so no append waits for one; automatic checkpoints come
 * back if the thread fails. Why: docs/architecture.md#design-notes-storage.
 *
 *   const checkpointer = startCheckpointer(db);   // a file database opened for writing
 *   await checkpointer.close();                   // before db.close()
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { messageOf } from '../../errors.ts';
import type { Db } from './database.ts';

export const DEFAULT_CHECKPOINT_INTERVAL_MS = 20;
export const DEFAULT_MAX_CHECKPOINT_INTERVAL_MS = 1000;
/** SQLite's own default, restored on the writing connection when the thread is gone. */
const AUTOCHECKPOINT_PAGES = 1000;

export interface CheckpointerOptions {
  intervalMs?: number;
  maxIntervalMs?: number;
  /** The thread failed; automatic checkpoints are back on (default: a line on stderr). */
  onError?: (err: Error) => void;
}

export interface Checkpointer {
  /** Checkpoints run so far, and the frames in the WAL at the last one (as the thread last reported). */
  readonly stats: { checkpoints: number; walFrames: number };
  /** Stops the thread after a last checkpoint; automatic checkpoints are back on the connection. */
  close(): Promise<void>;
}

/** The thread's program (CommonJS, evaluated): it loads the same better-sqlite3 as the caller. */
const THREAD = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true, timeout: 0 });
let stopping = false;
let timer;
let interval = workerData.intervalMs;
const stats = { checkpoints: 0, walFrames: 0 };
const checkpoint = () => {
  const [row] = db.pragma('wal_checkpoint(PASSIVE)');
  stats.checkpoints++;
  return row;
};
let previous = ''; // the WAL's frames and checkpointed frames at the previous tick: unchanged = idle
const tick = () => {
  let busy = false;
  try {
    const row = checkpoint();
    const now = row.log + '/' + row.checkpointed;
    busy = now !== previous;
    previous = now;
    stats.walFrames = row.log;
  } catch (err) {
    if (!/SQLITE_BUSY|locked/i.test(String(err && err.code) + String(err && err.message))) throw err;
    busy = true;
  }
  interval = busy ? workerData.intervalMs : Math.min(interval * 2, workerData.maxIntervalMs);
  if (busy) parentPort.postMessage({ stats });
  timer = setTimeout(tick, interval);
};
parentPort.on('message', (m) => {
  if (m !== 'stop' || stopping) return;
  stopping = true;
  clearTimeout(timer);
  try { checkpoint(); } catch {}
  db.close();
  parentPort.postMessage({ stats });
  parentPort.close();
});
timer = setTimeout(tick, interval);
parentPort.postMessage({ ready: true, stats });
`;

/**
 * Starts the checkpoint thread for `db` (a file database opened for writing, in WAL mode). Returns
 * undefined for an in-memory or read-only database, which has nothing to checkpoint.
 */
export function startCheckpointer(db: Db, options: CheckpointerOptions = {}): Checkpointer | undefined {
  if (db.memory || db.readonly) return undefined; // (memory: ':memory:' and the anonymous '')
  const intervalMs = options.intervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS;
  const maxIntervalMs = Math.max(intervalMs, options.maxIntervalMs ?? DEFAULT_MAX_CHECKPOINT_INTERVAL_MS);
  const onError = options.onError ?? ((err: Error) => process.stderr.write(`sessiond: ${err.message}\n`));
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const stats = { checkpoints: 0, walFrames: 0 };
  const worker = new Worker(THREAD, { eval: true, workerData: { driver, file: db.name, intervalMs, maxIntervalMs } });
  worker.unref(); // a forgotten engine does not keep the process alive for it
  let closing = false;
  const automatic = (on: boolean) => {
    if (db.open) db.pragma(`wal_autocheckpoint = ${on ? AUTOCHECKPOINT_PAGES : 0}`);
  };
  const exited = new Promise<void>((resolve) => {
    worker.on('message', (m: { ready?: boolean; stats: typeof stats }) => {
      Object.assign(stats, m.stats);
      if (m.ready && !closing) automatic(false);
    });
    worker.on('error', (err) => {
      automatic(true);
      if (!closing) onError(new Error(`the WAL checkpoint thread of ${db.name} failed (${messageOf(err)}); SQLite checkpoints on commit again.`));
    });
    worker.on('exit', () => {
      automatic(true);
      resolve();
    });
  });
  return {
    stats,
    async close() {
      if (closing) return exited;
      closing = true;
      automatic(true);
      worker.ref(); // held until it has stopped
      worker.postMessage('stop');
      return exited;
    },
  };
}
