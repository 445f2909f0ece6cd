/** What machine this run is on: printed at the start, stored in the JSON, pasted into the README. */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import Database from 'better-sqlite3';
import { NATS_SERVER_BIN } from '../../src/testing/nats-server.ts';

export interface MachineInfo {
  nproc: number;
  cpu: string;
  memoryGb: number;
  os: string;
  node: string;
  natsServer: string;
  sqlite: string;
  tmpFs: string;
  /** 1, 5 and 15 minute load averages when the run started. */
  loadAverage: number[];
}

function firstLine(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return (
    (r.stdout || r.stderr || '')
      .split('\n')
      .find((l) => l.trim())
      ?.trim() ?? `unknown (${r.error?.message ?? 'no output'})`
  );
}

export function machineInfo(): MachineInfo {
  const db = new Database(':memory:');
  const sqlite = db.prepare('SELECT sqlite_version()').pluck().get() as string;
  db.close();
  const df = spawnSync('df', ['-T', os.tmpdir()], { encoding: 'utf8' }).stdout?.split('\n')[1]?.split(/\s+/)[1] ?? 'unknown';
  return {
    nproc: os.availableParallelism?.() ?? os.cpus().length,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    natsServer: firstLine(NATS_SERVER_BIN, ['--version']),
    sqlite: `SQLite ${sqlite} (better-sqlite3)`,
    tmpFs: `${os.tmpdir()} on ${df}`,
    loadAverage: os.loadavg(),
  };
}
