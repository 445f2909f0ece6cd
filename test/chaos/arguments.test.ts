/**
 * The fault suite's command line refuses bad flags before it starts anything: exit status 2 and a
 * line saying what is wrong (chaos/run.ts), for --cluster and the flags it depends on.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DEBIAN_NATS_SERVER_BIN } from '../../src/testing/nats-server.ts';

const RUN = fileURLToPath(new URL('../../chaos/run.ts', import.meta.url));

function chaos(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', RUN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0', ...env },
    });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => done({ code, stderr, stdout }));
  });
}

for (const [args, message] of [
  [['--cluster', '2', '--backend', 'nats'], /--cluster must be 3 \(servers, for the 3-replica stream; got 2\)/],
  [['--cluster', 'three', '--backend', 'nats'], /--cluster must be 3 .*got three/],
  [['--cluster', '3', '--backend', 'sqlite'], /--cluster runs the NATS backend on a cluster: use it with --backend nats or both/],
  [['--seconds', '0'], /--seconds must be a whole number/],
  [['--backend', 'postgres'], /--backend must be sqlite, nats or both/],
] as const) {
  test(`chaos arguments - ${args.join(' ')} is refused`, async () => {
    const r = await chaos([...args]);
    assert.is(r.code, 2, `exit status (stderr: ${r.stderr})`);
    assert.match(r.stderr, message);
    assert.is(r.stdout, '', 'nothing started');
  });
}

test('chaos arguments - --cluster on a nats-server that does not fence replicated streams is refused', async () => {
  // Debian's 2.9.10 (npm test installs it for its compatibility test)
  const r = await chaos(['--cluster', '3', '--backend', 'nats'], { SESSIOND_NATS_SERVER: DEBIAN_NATS_SERVER_BIN });
  assert.is(r.code, 2, `exit status (stderr: ${r.stderr})`);
  assert.match(r.stderr, /--cluster: nats-server 2\.9\.\d+ .* does not fence appends on a replicated stream/);
  assert.is(r.stdout, '', 'nothing started');
});

test.run();
