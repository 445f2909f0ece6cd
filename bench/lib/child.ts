/** Runs a bench child script (`node --expose-gc --import tsx FILE ARGS`) and returns its `RESULT <json>` line. */
import { spawn } from 'node:child_process';
import { say } from './report.ts';
import { trackChild } from './cleanup.ts';

export function runBenchChild<T>(section: string, file: string, args: Record<string, unknown>): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = trackChild(spawn(process.execPath, ['--expose-gc', '--import', 'tsx', file, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    let errTail = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d: Buffer) => {
      const text = String(d);
      errTail = (errTail + text).slice(-4000);
      for (const line of text.split('\n')) if (line.trim()) say(section, `  child: ${line.trim()}`);
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (code === 0 && line) resolve(JSON.parse(line.slice(7)) as T);
      else reject(new Error(`${file} exited ${code ?? signal}: ${errTail}`));
    });
  });
}
