import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/**
 * The `sessiond` the tests run: the development CLI (bin/sessiond.js, src/ through tsx), or the compiled
 * one when SESSIOND_TEST_CLI=dist (scripts/test.mjs builds dist/ first and sets it: half the start-up).
 */
export const BIN = fileURLToPath(new URL(process.env.SESSIOND_TEST_CLI === 'dist' ? '../../dist/cli/main.js' : '../../bin/sessiond.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Runs the real `sessiond` command in a subprocess and collects its output. */
export function runCli(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, FORCE_COLOR: '0', SESSIOND_LOG_FORMAT: 'text', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timeoutMs = options.timeoutMs ?? 60_000;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      // a process ended by a signal has no exit code: 1, and the output says which signal and why
      if (signal) stderr += `\n[the test's sessiond process was ended by ${signal}${timedOut ? ` after runCli's timeout of ${timeoutMs} ms` : ''}]\n`;
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

export interface LongRunning {
  child: ChildProcess;
  output: () => string;
  waitFor: (text: string | RegExp, timeoutMs?: number) => Promise<void>;
  exited: Promise<number | null>;
}

/** Starts a long-running `sessiond` command (e.g. `start`) and lets the test wait for its output. */
export function startCli(args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): LongRunning {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, FORCE_COLOR: '0', SESSIOND_LOG_FORMAT: 'text', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let out = '';
  const listeners = new Set<() => void>();
  child.stdout!.on('data', (d) => {
    out += d;
    for (const l of listeners) l();
  });
  child.stderr!.on('data', (d) => {
    out += d;
    for (const l of listeners) l();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      live.delete(child);
      resolve(code);
      for (const l of listeners) l();
    }),
  );
  return {
    child,
    output: () => out,
    exited,
    waitFor: (text, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const matches = () => (typeof text === 'string' ? out.includes(text) : text.test(out));
        const check = () => {
          if (matches()) {
            done();
            resolve();
          } else if (child.exitCode !== null) {
            done();
            reject(new Error(`sessiond exited (${child.exitCode}) before printing ${String(text)}; output:\n${out}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${String(text)}; output:\n${out}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      }),
  };
}
