#!/usr/bin/env node
// `npm run test:proxies`: the model runner through the proxies teams run in front of their models
// (test/proxies/*-proxy.ts), not part of `npm test`. Installs LiteLLM's proxy, pinned, into a venv
// of its own (.tools/venv-litellm, from PyPI) on first use, then runs the files with uvu.
// LiteLLM 1.107.0 was a compromised release: it is refused whatever the environment asks.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { UVU } from './uvu-command.mjs';

const LITELLM_VERSION = process.env.SESSIOND_LITELLM_VERSION ?? '1.80.0';
const REFUSED = new Set(['1.107.0']);
if (REFUSED.has(LITELLM_VERSION)) {
  process.stderr.write(`litellm ${LITELLM_VERSION} is a compromised release and is never installed; use 1.80.0 (the default)\n`);
  process.exit(2);
}
const venv = join('.tools', 'venv-litellm');
const python = join(venv, 'bin', 'python');
const installed = () =>
  existsSync(python) && spawnSync(python, ['-m', 'pip', 'show', 'litellm'], { encoding: 'utf8' }).stdout.includes(`Version: ${LITELLM_VERSION}`);

if (!installed()) {
  process.stdout.write(`installing litellm[proxy]==${LITELLM_VERSION} into ${venv} (from PyPI; a minute or two the first time)...\n`);
  const steps = [
    ['python3', ['-m', 'venv', '--clear', venv]],
    [python, ['-m', 'pip', 'install', '--quiet', `litellm[proxy]==${LITELLM_VERSION}`]],
  ];
  for (const [cmd, args] of steps) {
    const r = spawnSync(cmd, args, { stdio: 'inherit' });
    if (r.status !== 0) {
      process.stderr.write(`${cmd} ${args.join(' ')} failed (exit ${r.status}); on Debian: apt-get install python3-venv\n`);
      process.exit(1);
    }
  }
}
process.stdout.write(`litellm ${LITELLM_VERSION} ready; running test/proxies\n`);
const run = spawnSync(process.execPath, [...UVU, 'test/proxies', '[^/]*-proxy\\.ts$'], {
  stdio: 'inherit',
  env: { ...process.env, SESSIOND_LITELLM: join(venv, 'bin', 'litellm') },
});
process.exit(run.status ?? 1);
