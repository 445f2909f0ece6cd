import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { CommandHandler } from '../../src/execution/command-handler.ts';
import { systemClock } from '../../src/clock.ts';
import { randomIds } from '../../src/ids.ts';
import { tempDir } from './tmp.ts';

const WORKER = fileURLToPath(new URL('./worker-process.ts', import.meta.url));
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export interface WorkerHandle {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
  /** Releases a worker started with `waitForGo: true`. */
  go(): void;
  waitForLine(match: (line: string) => boolean, timeoutMs?: number): Promise<string>;
}

/** Spawns a real worker process (see worker-process.ts) and collects its output lines. */
export function spawnWorker(args: Record<string, unknown>): WorkerHandle {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(args)], { stdio: ['pipe', 'pipe', 'pipe'] });
  live.add(child);
  const lines: string[] = [];
  const listeners = new Set<() => void>();
  let buf = '';
  child.stdout!.on('data', (d) => {
    buf += d;
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
    for (const l of listeners) l();
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      live.delete(child);
      if (code !== 0 && code !== null && stderr) process.stderr.write(`worker ${child.pid} exited ${code}: ${stderr}\n`);
      resolve(code);
      for (const l of listeners) l();
    }),
  );
  return {
    child,
    lines,
    exited,
    go: () => {
      child.stdin!.write('GO\n');
    },
    waitForLine(match, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(match);
          if (found !== undefined) {
            cleanup();
            resolve(found);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            cleanup();
            reject(new Error(`worker exited (${child.exitCode ?? child.signalCode}) before printing the expected line; stderr: ${stderr}`));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out after ${timeoutMs} ms waiting for a worker line; got: ${lines.slice(-12).join(' | ')}; stderr: ${stderr}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/**
 * A SQLite file shared with real worker processes: `spawn` starts one on it (see worker-process.ts);
 * `closeAll` (call it in `after.each`) kills every worker still running and removes the file, so a
 * test that fails before its own cleanup never leaves workers behind.
 */
export interface SharedFile {
  tmp: ReturnType<typeof tempDir>;
  file: string;
  db: Db;
  log: SqliteEventLog;
  handler: CommandHandler;
  spawn(args: Record<string, unknown>): WorkerHandle;
  close(): Promise<void>;
}

const openFiles = new Set<SharedFile>();

export function sharedFile(name: string): SharedFile {
  const tmp = tempDir();
  const file = tmp.file(`${name}.db`);
  const db = openDatabase(file);
  migrate(db);
  const log = new SqliteEventLog(db);
  const workers: WorkerHandle[] = [];
  const fixture: SharedFile = {
    tmp,
    file,
    db,
    log,
    handler: new CommandHandler(log, systemClock, randomIds),
    spawn: (args) => {
      const w = spawnWorker({ file, ...args });
      workers.push(w);
      return w;
    },
    close: async () => {
      openFiles.delete(fixture);
      for (const w of workers) {
        w.child.kill('SIGKILL');
        await w.exited;
      }
      await log.close();
      db.close();
      tmp.remove();
    },
  };
  openFiles.add(fixture);
  return fixture;
}

/** Closes every shared file still open (for `after.each`). */
export async function closeSharedFiles(): Promise<void> {
  for (const f of [...openFiles]) await f.close();
}
