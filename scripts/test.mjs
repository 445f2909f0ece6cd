#!/usr/bin/env node
// `npm test`: typecheck, then every test/**/*.test.ts with uvu in one process, then one closing line
// `N passed, N failed`. Extra arguments are a uvu file pattern (e.g. `npm test -- machine`).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const started = Date.now();
const TIMEOUT_MS = Number(process.env.SESSIOND_TEST_TIMEOUT_MS ?? 20 * 60_000);

function run(cmd, args, { capture = false } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', capture ? 'pipe' : 'inherit', capture ? 'pipe' : 'inherit'], env: { ...process.env, FORCE_COLOR: '0' } });
    let text = '';
    const timer = setTimeout(() => {
      process.stderr.write(`\ntest run exceeded ${TIMEOUT_MS} ms; stopping it\n`);
      child.kill('SIGKILL');
    }, TIMEOUT_MS);
    if (capture) {
      child.stdout.on('data', (d) => { text += d; process.stdout.write(d); });
      child.stderr.on('data', (d) => { text += d; process.stderr.write(d); });
    }
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code: code ?? (signal ? 1 : 0), text }); });
  });
}

// What the suite needs beyond npm, from Debian's packages: installed here when missing (as root with
// apt-get), otherwise one line saying what to run, before any test starts.
const needs = [
  { what: 'nats-server (the NATS tests)', pkg: 'nats-server', present: () => existsSync(process.env.SESSIOND_NATS_SERVER ?? '/usr/sbin/nats-server') },
  { what: 'chromium (the inspector browser test)', pkg: 'chromium', present: () => existsSync('/usr/bin/chromium') },
  { what: "python3-msgpack (the wire-format interop test)", pkg: 'python3-msgpack', present: () => spawnSync('/usr/bin/python3', ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0 },
];
const missing = needs.filter((n) => !n.present());
if (missing.length > 0) {
  const pkgs = missing.map((n) => n.pkg).join(' ');
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
  if (root && apt) {
    process.stdout.write(`installing what the tests need: ${missing.map((n) => n.what).join(', ')} (apt-get install -y ${pkgs})...\n`);
    const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    const install = update.status === 0 ? spawnSync('apt-get', ['install', '-y', '-qq', ...missing.map((n) => n.pkg)], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }) : update;
    const still = missing.filter((n) => !n.present());
    if (install.status !== 0 || still.length > 0) {
      process.stdout.write(`could not install ${still.map((n) => n.pkg).join(' ') || pkgs}; run: apt-get install -y ${pkgs}\n0 passed, 1 failed\n`);
      process.exit(1);
    }
  } else {
    process.stdout.write(`the tests need ${missing.map((n) => n.what).join(', ')}: run  sudo apt-get install -y ${pkgs}  and then npm test again (no test was run)\n`);
    process.exit(1);
  }
}

const filter = process.argv[2];
let typecheckFailed = 0;
if (!filter) {
  process.stdout.write('typecheck (tsc --noEmit)...\n');
  const tsc = await run(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', '.']);
  typecheckFailed = tsc.code === 0 ? 0 : 1;
  process.stdout.write(tsc.code === 0 ? 'typecheck ok\n' : 'typecheck FAILED\n');
}
const pattern = filter ? `${filter}.*\\.test\\.ts$` : '\\.test\\.ts$';
const uvu = await run(process.execPath, ['--import', 'tsx', 'node_modules/uvu/bin.js', 'test', pattern, '--no-color'], { capture: true });
const num = (label) => Number((uvu.text.match(new RegExp(`${label}:\\s+(\\d+)`)) ?? [])[1] ?? 0);
const total = num('Total');
const passed = num('Passed');
const skipped = num('Skipped');
let failed = total - passed - skipped + typecheckFailed;
if (uvu.code !== 0 && failed === 0) failed = 1; // the runner itself crashed or timed out
if (total === 0) failed = Math.max(failed, 1);
const secs = ((Date.now() - started) / 1000).toFixed(1);
process.stdout.write(`\n(${secs} s${typecheckFailed ? ', typecheck failed' : ''}${skipped ? `, ${skipped} skipped` : ''})\n`);
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed === 0 && uvu.code === 0 ? 0 : 1);
