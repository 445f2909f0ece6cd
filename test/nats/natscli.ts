// natscli (the project's pinned `nats`, SESSIOND_NATS_CLI) for attacks made by a client that is not
// the Node client: raw publishes and stream requests as any nats.conf user.
import { spawn } from 'node:child_process';
import { PROJECT_NATS_SERVER_BIN } from '../../src/testing/nats-server.ts';

export const NATS_CLI = process.env.SESSIOND_NATS_CLI ?? PROJECT_NATS_SERVER_BIN.replace(/nats-server$/, 'nats');

export interface NatsCliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `nats --server url --user u --password p ...args`, `stdin` as its input; resolves when it exits (killed after `timeoutMs`). */
export function natsCli(url: string, user: { user: string; pass: string }, args: string[], stdin = '', timeoutMs = 20_000): Promise<NatsCliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      NATS_CLI,
      ['--server', url, '--user', user.user, '--password', user.pass, '--no-context', '--inbox-prefix', `_INBOX_${user.user}`, ...args],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(stdin);
  });
}
