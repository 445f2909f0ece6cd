import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./gate-process.ts', import.meta.url));
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** The test's model server: counts calls in flight (each held `holdMs`) and the most at once. */
export async function modelServer(holdMs: number) {
  const stats = { inFlight: 0, max: 0, total: 0, callers: [] as string[] };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      stats.inFlight++;
      stats.total++;
      stats.callers.push(body);
      stats.max = Math.max(stats.max, stats.inFlight);
      setTimeout(() => {
        stats.inFlight--;
        res.end('ok');
      }, holdMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(stats, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  });
}

/** Spawns test/capacity/gate-process.ts with `args`; collects its output lines. */
export function spawnGate(args: Record<string, unknown>) {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  const lines: string[] = [];
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => lines.push(...d.toString('utf8').split('\n').filter(Boolean)));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const exited = new Promise<number | null>((r) =>
    child.on('exit', (code) => {
      live.delete(child);
      r(code);
    }),
  );
  let gone = false;
  void exited.then(() => (gone = true));
  return {
    child,
    lines,
    exited,
    async waitForLine(match: (line: string) => boolean, timeoutMs = 30_000): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find(match);
        if (found) return found;
        if (gone) throw new Error(`the gate process exited before the line; output: ${lines.join(' | ')}; stderr: ${stderr}`);
        if (Date.now() > deadline) throw new Error(`no such line within ${timeoutMs} ms; output: ${lines.join(' | ')}; stderr: ${stderr}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}
