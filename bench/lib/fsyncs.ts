/**
 * How many fsync-family system calls processes make while `body` runs: `strace -f -c` attached to
 * them (fsync, fdatasync, sync_file_range, msync), detached afterwards. For the durability figures:
 * whether nats-server syncs an append to disk before acknowledging it, which no SIGKILL test can
 * tell (the page cache survives a process crash). strace slows the traced processes, so only counts
 * are taken from it, never times. Resolves undefined when strace is missing or may not attach
 * (ptrace refused).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const SYNC_CALLS = ['fsync', 'fdatasync', 'sync_file_range', 'msync'];

export function haveStrace(): boolean {
  return spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
}

/** Sum of the fsync-family calls in an `strace -c` summary. */
export function syncCalls(summary: string): number {
  let n = 0;
  for (const line of summary.split('\n')) {
    const cols = line.trim().split(/\s+/);
    // % time, seconds, usecs/call, calls, [errors], syscall
    if (cols.length >= 5 && SYNC_CALLS.includes(cols[cols.length - 1]!)) n += Number(cols[3]);
  }
  return n;
}

export async function countFsyncs(pids: number[], dir: string, body: () => Promise<void>): Promise<number | undefined> {
  if (!haveStrace() || pids.length === 0) return undefined;
  const out = join(dir, `strace-${process.pid}-${Date.now()}.txt`);
  const st = spawn('strace', ['-f', '-c', '-e', `trace=${SYNC_CALLS.join(',')}`, '-o', out, ...pids.flatMap((p) => ['-p', String(p)])], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((done) => st.once('exit', (code) => done(code)));
  let err = '';
  st.stderr!.on('data', (d: Buffer) => {
    err += d.toString('utf8');
  });
  // attached once every pid is reported ("Process N attached"), or give up on a deadline
  const deadline = Date.now() + 10_000;
  while (pids.some((p) => !err.includes(`Process ${p} attached`))) {
    if (st.exitCode !== null || Date.now() > deadline) {
      st.kill('SIGKILL');
      await exited;
      return undefined;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  try {
    await body();
  } finally {
    st.kill('SIGINT');
    await exited;
  }
  try {
    return syncCalls(readFileSync(out, 'utf8'));
  } catch {
    return undefined;
  }
}
