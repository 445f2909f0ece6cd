// MCP servers for the tests: the fixture server (test/runner/fixtures/mcp-server.ts) and the npm
// `@modelcontextprotocol/server-everything`, over stdio (an `mcpServers` entry) or Streamable HTTP
// (a child process on a free port, waited for with a deadline).
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { ROOT } from './cli.ts';

export const FIXTURE_SERVER = fileURLToPath(new URL('../runner/fixtures/mcp-server.ts', import.meta.url));
export const EVERYTHING = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url));

/** The fixture server as an `mcpServers` entry; its env says where it logs its calls (and pids). */
export function fixtureEntry(env: Record<string, string>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: ['--import', 'tsx', FIXTURE_SERVER], cwd: ROOT, env, ...extra };
}

export const everythingStdio = (extra: Record<string, unknown> = {}) => ({ command: process.execPath, args: [EVERYTHING, 'stdio'], ...extra });

/** A free TCP port on 127.0.0.1 (taken and released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** server-everything over Streamable HTTP on a free port, once it says it listens (within 20 s). */
export async function startEverythingHttp(): Promise<{ url: string; child: ChildProcess; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything did not listen on ${port} within 20 s: ${out}`)), 20_000);
    const check = (d: Buffer) => {
      out += d;
      if (out.includes(`listening on port ${port}`)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server-everything exited (${code}) before it listened: ${out}`));
    });
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The children of `parent` (from /proc) whose command line matches `command`. */
export function childrenOf(parent: number, command: RegExp): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
        const matches = command.test(readFileSync(`/proc/${d}/cmdline`, 'utf8'));
        return matches && Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent ? [Number(d)] : [];
      } catch {
        return []; // gone meanwhile
      }
    });
}
